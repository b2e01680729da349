"""When to look again if no event comes first (pure).

Batch and SageMaker events wake a waiting execution within seconds of a change that needs
acting on (an end, a failure, a spot stop, an interruption; `TrainingEventGate`), so the timed
check is only for what no event announces:

- **the policy's own moment.** If nothing changed from now on (no more progress: the job waits
  for spot capacity, or its training stalls or runs slower than declared), the slack would shrink
  second for second and the deadline policy would switch to on-demand exactly when it reaches
  zero. So a job that may still switch is checked then, or sooner if the safety check comes
  first; a job training as declared keeps its slack, and the next check finds it unchanged.
- **a safety net.** Events are delivered at least once but best effort; a lost one costs at most
  the safety interval: 1 % of the job's expected duration, between 15 minutes and 2 hours.

Each check costs about 13 history events (CheckTrainingStatus, the Choice, the wait). A job with
little slack is checked more often; `lifecycle.CHECKS_PER_EXECUTION` bounds what one execution
makes (`benchmarks/history_worst_case.py` prints the worst cases).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spotline.core.training.status import TrainingStatus

MIN_SECONDS = 60
SAFETY_FRACTION = 0.01
MIN_SAFETY_SECONDS = 900
MAX_SAFETY_SECONDS = 7200
WAITING_STATES = frozenset({"queued", "starting", "interrupted"})


@dataclass(frozen=True, slots=True)
class NextCheck:
    seconds: int
    reason: str


def safety_interval(expected_duration: int | None) -> int:
    """The longest a check waits when no event comes: 1 % of the expected duration, bounded."""
    if not expected_duration:
        return MAX_SAFETY_SECONDS
    return int(min(MAX_SAFETY_SECONDS, max(MIN_SAFETY_SECONDS, expected_duration * SAFETY_FRACTION)))


def spot_is_missing(status: TrainingStatus) -> bool:
    return status.capacity_short or status.state in WAITING_STATES


def next_check(
    status: TrainingStatus, *, expected_duration: int | None, slack_seconds: float | None, may_switch: bool
) -> NextCheck:
    """`slack_seconds`: the deadline policy's slack now (None without a deadline); `may_switch`:
    the job is on spot and its strategy lets the policy move it to on-demand."""
    safety = safety_interval(expected_duration)
    if may_switch and slack_seconds is not None and slack_seconds < safety:
        seconds = max(MIN_SECONDS, math.ceil(slack_seconds))
        waiting = "while spot capacity is missing" if spot_is_missing(status) else "if training made no progress"
        return NextCheck(seconds, f"when the slack would run out {waiting}")
    return NextCheck(safety, "safety check (events announce every change that needs acting on)")
