"""Warnings about a valid manifest (pure): what the contract accepts but an engineer would want
to hear before paying for it. `spotline validate` prints them; they never refuse a manifest."""

from __future__ import annotations

from datetime import datetime

from spotline.core.capacity.policy import JobClock, margin_of, on_demand_needs, out_of_reach
from spotline.core.common.durations import format_duration
from spotline.core.common.errors import ManifestError
from spotline.core.spec.model import JobSpec


def warnings_of(spec: JobSpec, now: datetime) -> list[ManifestError]:
    """A spot job whose deadline leaves no room for spot: on-demand alone, started now, would
    just make it (or not), so the policy moves it at its first check and it pays on-demand
    prices for nothing spot could have given (or, out of reach, stays on spot and misses)."""
    deadline, work = spec.deadline_at, spec.expected_duration_seconds
    if spec.strategy != "spot-first" or deadline is None or work is None:  # only spot-first moves to on-demand
        return []
    job = JobClock(
        now=now,
        started_at=now,
        deadline=deadline,
        total_work_seconds=float(work),
        progress=0.0,
        capacity="spot",
        spot_missing=False,
    )
    left, needs = (deadline - now).total_seconds(), on_demand_needs(job)
    if left > needs:
        return []
    if out_of_reach(job):
        return [
            ManifestError(
                "spec.capacity.deadline",
                f"is out of reach: {format_duration(left)} left, and even on-demand from now needs "
                f"{format_duration(work + job.restart_overhead_seconds)} ({format_duration(work)} of work + "
                f"{format_duration(job.restart_overhead_seconds)} start-up), so the job would stay on spot and "
                "most likely miss it; set the deadline later",
            )
        ]
    parts = f"{format_duration(work)} of work + {format_duration(job.restart_overhead_seconds)} start-up"
    return [
        ManifestError(
            "spec.capacity.deadline",
            f"leaves no room for spot: {format_duration(left)} left, and on-demand alone needs "
            f"{format_duration(needs)} ({parts} + {format_duration(margin_of(job))} margin), so Spotline would "
            "run it on-demand from its first check, at on-demand prices; set the deadline later (each hour "
            "beyond that is an hour it can wait for spot), or choose strategy on-demand",
        )
    ]
