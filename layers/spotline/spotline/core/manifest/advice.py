"""Warnings about a valid manifest (pure): what the contract accepts but an engineer would want
to hear before paying for it. `spotline validate` prints them; they never refuse a manifest."""

from __future__ import annotations

from datetime import datetime

from spotline.core.capacity.policy import JobClock, margin_of, on_demand_needs, out_of_reach
from spotline.core.common.durations import format_duration
from spotline.core.common.errors import ManifestError
from spotline.core.spec.model import JobSpec


def warnings_of(spec: JobSpec, now: datetime) -> list[ManifestError]:
    """A spot job without a deadline (`no_deadline`), and a spot job whose deadline leaves no room
    for spot: on-demand alone, started now, would just make it (or not), so the policy moves it at
    its first check and it pays on-demand prices for nothing spot could have given (or, out of
    reach, stays on spot and misses)."""
    if spec.strategy != "on-demand" and spec.deadline_at is None:
        return [no_deadline(spec)]
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


def no_deadline(spec: JobSpec) -> ManifestError:
    """What a spot job without a deadline does: the policy keeps it on spot for as long as spot
    takes (`policy.decide`: "no deadline"), so only its spot attempts bound the wait (`lifecycle.next_step`):
    each lasts at most maxWait, "the amount of time spent waiting for Spot capacity plus the amount
    of time the job can run" (SageMaker API reference, StoppingCondition.MaxWaitTimeInSeconds)."""
    max_wait = spec.max_wait_seconds or spec.max_runtime_seconds  # as the request sends it
    attempts = spec.retry_max_attempts
    after = (
        "before it continues on on-demand"
        if spec.strategy == "spot-first"
        else "before the run ends (spot-only never uses on-demand)"
    )
    return ManifestError(
        "spec.capacity.deadline",
        f"is not set: the job stays on spot for as long as spot takes; Spotline never moves it to on-demand to "
        f"finish in time. Each of up to {attempts} spot attempts (retry.maxAttempts) may last maxWait "
        f"{format_duration(max_wait)} (waiting for spot plus training): up to {format_duration(attempts * max_wait)} "
        f"on spot, plus back-offs and time in the queue, {after}. Set a deadline and expectedDuration if it "
        "must finish by a time",
    )
