"""Printing data: `--output table` (aligned columns, what people read) or `--output json`
(what scripts read: the same rows, every field, stable camelCase keys)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from spotline.core.common.durations import format_duration

OUTPUTS = ("table", "json")


def table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    lines = [headers, *rows]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) if i < len(headers) - 1 else cell for i, cell in enumerate(line)).rstrip()
        for line in lines
    )


def as_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)


def duration(seconds: float | None) -> str:
    return format_duration(seconds) if seconds is not None else "-"


def percent(fraction: float | None) -> str:
    return f"{fraction * 100:.0f}%" if fraction is not None else "-"
