"""What a crowded queue means for a deadline (pure): the wait a new attempt would meet now, and
when a job waiting in the queue should have its priority raised.

Both read only what Spotline really sees on AWS: the RUNNABLE jobs of its queue (ListServiceJobs,
in the job's quota share when the queue has shares) and the job's own Batch status.

- **Queue wait now.** A job submitted now waits at least as long as the longest-waiting job ahead
  of it has waited so far. Jobs waiting for *spot* capacity (statusReason
  CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY) do not count: an on-demand attempt does not wait for
  spot. The deadline policy adds this wait to its restart estimate.
- **Raise the priority first.** A job waiting for room in the queue (not for spot) whose slack is
  no longer than the time it has already waited would miss its deadline if it waited as long
  again: Spotline raises its schedulingPriority to its team's maximum (UpdateServiceJob; "jobs
  with a higher scheduling priority are scheduled before jobs with a lower scheduling priority
  within a share", AWS Batch API reference; with in-share preemption a higher priority job may
  also preempt a lower one). Only then, when the slack is gone, does it fall back to on-demand,
  submitted at that maximum priority too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from spotline.core.common.durations import format_duration
from spotline.core.training.status import CAPACITY_REASON, TrainingStatus

WAITING_JOBS_READ = 100
"""RUNNABLE jobs read per check (one ListServiceJobs page): enough to find the head of a queue."""


def _created(summary: dict[str, Any]) -> datetime | None:
    created = summary.get("createdAt")
    if isinstance(created, datetime):
        return created
    if isinstance(created, int | float):
        return datetime.fromtimestamp(created / 1000, UTC)
    return None


def queue_wait_now(runnable: Iterable[dict[str, Any]], now: datetime) -> float:
    """Seconds the longest-waiting RUNNABLE job (ListServiceJobs summaries) has waited for room in
    the queue; 0 when none waits (or only for spot capacity)."""
    waits = [
        (now - created).total_seconds()
        for summary in runnable
        if CAPACITY_REASON not in str(summary.get("statusReason") or "") and (created := _created(summary))
    ]
    return max([0.0, *waits])


@dataclass(frozen=True, slots=True)
class Escalation:
    """Raise the job's schedulingPriority from `current` to `raised`, because of `reason`."""

    current: int
    raised: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.current, "to": self.raised, "reason": self.reason}


def escalation(
    status: TrainingStatus,
    *,
    current_priority: int,
    max_priority: int,
    slack_seconds: float | None,
    waited_seconds: float,
) -> Escalation | None:
    """The priority raise a job waiting in the queue needs to keep its deadline, if any."""
    waiting_for_room = status.state == "queued" and not status.capacity_short
    if not waiting_for_room or slack_seconds is None or current_priority >= max_priority:
        return None
    if slack_seconds > waited_seconds:
        return None
    return Escalation(
        current_priority,
        max_priority,
        f"deadline at risk in the queue: {format_duration(max(0.0, slack_seconds))} of slack left after "
        f"{format_duration(waited_seconds)} waiting for room; priority raised from {current_priority} to "
        f"{max_priority} (the team's maximum) so it runs before lower-priority work",
    )
