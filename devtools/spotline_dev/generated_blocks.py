"""Docs pages with blocks generated from the code (`docs_tables`, `alert_index`): a block is
replaced between its two marker lines, and `--check` says whether the page is a fresh generation."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path


def between(page: str, begin: str, end: str, block: str, what: str = "generated block") -> str:
    """`page` with what lies from `begin` to `end` (markers included) replaced by `block`."""
    if begin not in page or end not in page:
        raise ValueError(f"the page has no {what}: add the lines {begin!r} and {end!r}")
    start, stop = page.index(begin), page.index(end) + len(end)
    return page[:start] + block + page[stop:]


def run(
    argv: Sequence[str] | None,
    *,
    prog: str,
    description: str | None,
    page: Path,
    refresh: Callable[[str], str],
    stale: str,
) -> int:
    """Write the page afresh, or with --check exit 1 (saying `stale`) when it is not."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--check", action="store_true", help="only check that the page is up to date")
    parser.add_argument("--page", type=Path, default=page)
    args = parser.parse_args(argv)
    text = args.page.read_text()
    try:
        fresh = refresh(text)
    except ValueError as exc:
        print(f"{args.page}: {exc}")
        return 1
    if args.check:
        if fresh != text:
            print(f"{args.page}: {stale}; run {prog}")
            return 1
        return 0
    args.page.write_text(fresh)
    return 0
