"""The one place handlers read the time. The sandbox and tests swap in a virtual clock so
hours of training replay in seconds; the domain core never reads it (time is passed in)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime


def _system_now() -> datetime:
    return datetime.now(UTC)


_source: Callable[[], datetime] = _system_now


def now() -> datetime:
    return _source()


def use(source: Callable[[], datetime] | None) -> None:
    """Read time from `source` (None: the system clock again)."""
    global _source
    _source = source or _system_now
