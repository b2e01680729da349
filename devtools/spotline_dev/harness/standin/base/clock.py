"""The stand-in's virtual time: seconds since the epoch as floats, read from the clock passed in.

No wall clock: `now` only moves when the stand-in advances, and never goes back.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

EPS = 1e-6


class ObservedTime:
    """clock() as epoch seconds, shared by the Batch and SageMaker sides: `now` is the last advance."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock
        self.now = float("-inf")

    def advance(self) -> float:
        self.now = max(self.now, self.clock().timestamp())
        return self.now


def ms(t: float) -> int:
    return round(t * 1000)


def dt(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def rfc3339(t: float) -> str:
    return dt(t).strftime("%Y-%m-%dT%H:%M:%SZ")
