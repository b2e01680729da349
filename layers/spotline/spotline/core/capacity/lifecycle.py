"""What the workflow does after each status check (pure): keep waiting, resubmit on spot
after a back-off, move to on-demand (and back to spot when it pays), finish, or hand the watch
over to a fresh execution.
CheckTrainingStatus returns it as `action` and the state machine's `WhatShouldHappenNext?`
routes on it."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from spotline.core.capacity.policy import Decision, backoff_seconds
from spotline.core.common.durations import format_duration
from spotline.core.spec.model import JobSpec
from spotline.core.training.status import TrainingStatus
from spotline.core.training.training_request import Capacity

Action = Literal[
    "keep-waiting",
    "resubmit-on-spot",
    "resubmit-on-demand",
    "move-to-another-type",
    "move-to-another-zone",
    "move-to-another-region",
    "switch-to-on-demand",
    "return-to-spot",
    "switch-to-training-plan",
    "give-up",
    "finish",
    "continue-in-new-execution",
]
FinishReason = Literal["completed", "failed", "spot-exhausted", "capacity-unavailable"]
SPOT_ENDINGS = frozenset({"spot-wait-exceeded", "capacity"})
"""Reason classes that mean spot capacity ended the job, not the training code."""
MOVE_AFTER_WAIT_SECONDS = 3600.0
"""A spot attempt that has waited this long for capacity of its type moves to the next type of
`resources.alternatives` (sooner when the deadline leaves less: a quarter of the slack, at least
MIN_MOVE_AFTER_WAIT_SECONDS), before any on-demand is spent."""
MIN_MOVE_AFTER_WAIT_SECONDS = 900.0
MOVE_AFTER_INTERRUPTIONS = 3
"""...or has been interrupted this many times and is waiting to restart."""
MAX_RETURNS_TO_SPOT = 2
"""Returns from on-demand to spot one run makes at most (`policy.decide`): each spends a spot
start-up of slack, and a job must not flap between the tiers."""
CHECKS_PER_EXECUTION = 600
"""Status checks one execution makes before a fresh one takes over the watch. A check costs
about 13 history events and a submission about 12 (at most 25 per run: 10 spot attempts, moves
between types and returns to spot included, 3 training-plan attempts (one at each of the 3
switches a run with 2 returns makes), and 12 on-demand ones: 10 after the queue's time limit, and a switch after each
return), so an execution stays within 8,100 of Step Functions' 25,000 events whatever happens; the design
bound is 10,000 (`benchmarks/history_worst_case.py`)."""


@dataclass(frozen=True, slots=True)
class NextStep:
    action: Action
    explanation: str
    next_capacity: Capacity | None = None
    backoff_seconds: int = 0
    finish_reason: FinishReason | None = None
    next_instance_type: str | None = None
    """The type of the next spot attempt (None: the one the job runs on, or the primary)."""
    next_zone: str | None = None
    """The zone of the next attempt of a job of many instances (None: as SubmitTrainingJob chooses)."""


def next_type(spec: JobSpec, current: str | None) -> str | None:
    """The instance type after `current` in the job's order of preference, back to the primary
    after the last (its capacity may have returned); None for a job without alternatives."""
    types = [option.instance_type for option in spec.instance_options]
    if len(types) < 2:
        return None
    index = types.index(current) if current in types else 0
    return types[(index + 1) % len(types)]


def move_after_wait_seconds(slack_seconds: float | None) -> float:
    if slack_seconds is None:
        return MOVE_AFTER_WAIT_SECONDS
    return min(MOVE_AFTER_WAIT_SECONDS, max(MIN_MOVE_AFTER_WAIT_SECONDS, slack_seconds / 4))


@dataclass(frozen=True, slots=True)
class CapacityWait:
    """How the current attempt stands with capacity, for the moves between types and tiers."""

    instance_type: str | None = None
    """The type the attempt runs on (None: not known yet, the primary's for spot)."""
    waited_seconds: float = 0.0
    """How long it has waited for capacity of its type so far (0 when it is not waiting)."""
    deadline_passed: bool = False
    plan_ended: bool = False
    """A training-plan attempt's plan has begun terminating its instances (30 minutes before its end)."""
    on_demand_attempts: int = 0
    """On-demand submissions so far, this one included."""
    returns_to_spot: int = 0
    """Returns from on-demand to spot so far (`returns_to_spot`)."""
    zone: str | None = None
    """The one zone a job of many instances runs this attempt in."""
    other_zone: str | None = None
    """The zone its next attempt would take (`spotline.core.capacity.zones.next_zone`); None: no other."""


def returns_to_spot(capacities: list[str]) -> int:
    """How often a run's attempts (their capacities, in order) went from on-demand back to spot."""
    return sum(1 for pair in pairwise(capacities) if pair == ("on-demand", "spot"))


def may_return(spec: JobSpec, capacity: Capacity, *, spot_attempts: int, returns: int) -> bool:
    """A return to spot is open to this run: a spot-first job on on-demand with spot attempts and
    returns left (whether it is safe and worth it is the policy's: `policy.may_return_to_spot`)."""
    return (
        capacity == "on-demand"
        and spec.strategy == "spot-first"
        and spot_attempts < spec.retry_max_attempts
        and returns < MAX_RETURNS_TO_SPOT
    )


def next_step(
    spec: JobSpec,
    status: TrainingStatus,
    *,
    capacity: Capacity,
    spot_attempts: int,
    decision: Decision,
    seed: str,
    wait: CapacityWait | None = None,
) -> NextStep:
    """`spot_attempts`: spot submissions so far, this one included. `seed`: for the jitter."""
    wait = wait or CapacityWait()
    may_switch = capacity == "spot" and spec.strategy == "spot-first"
    if status.state == "completed":
        return NextStep("finish", "training completed", finish_reason="completed")
    if capacity == "training-plan" and (
        (status.state == "failed" and status.reason_class in SPOT_ENDINGS)
        or (not status.finished and status.state != "training" and wait.plan_ended)
    ):
        # A plan's end is handled like a spot interruption: resume elsewhere, never a failure.
        return NextStep(
            "switch-to-on-demand",
            "the training plan's reserved capacity ended (SageMaker terminates its instances 30 minutes before "
            "the plan's end): the job resumes on on-demand from the last checkpoint",
            next_capacity="on-demand",
        )
    if status.state == "failed":
        if capacity == "spot" and status.reason_class in SPOT_ENDINGS:
            if spot_attempts < spec.retry_max_attempts:
                if may_switch and decision.verdict == "switch-to-on-demand":
                    return NextStep("switch-to-on-demand", decision.reason, next_capacity="on-demand")
                pause = backoff_seconds(spec.retry_backoff_seconds, spot_attempts, seed)
                other = next_type(spec, wait.instance_type)
                on = f" on {other}" if other else ""
                return NextStep(
                    "resubmit-on-spot",
                    f"spot ended the job ({status.reason_class}); spot attempt {spot_attempts + 1} of "
                    f"{spec.retry_max_attempts}{on} from the last checkpoint after {pause}s",
                    next_capacity="spot",
                    backoff_seconds=pause,
                    next_instance_type=other,
                )
            if may_switch:
                return NextStep(
                    "switch-to-on-demand",
                    f"spot attempts exhausted ({spot_attempts} of "
                    f"{spec.retry_max_attempts}); continuing on on-demand from the last checkpoint",
                    next_capacity="on-demand",
                )
            if capacity == "spot":
                return NextStep(
                    "finish",
                    f"spot attempts exhausted ({spot_attempts} of {spec.retry_max_attempts}) "
                    "and the strategy is spot-only",
                    finish_reason="spot-exhausted",
                )
        if capacity == "on-demand" and status.reason_class == "capacity":
            return _on_demand_short(spec, wait, seed)
        return NextStep("finish", f"training failed ({status.reason_class}): never retried", finish_reason="failed")
    if may_switch and decision.verdict == "switch-to-on-demand":
        return NextStep("switch-to-on-demand", decision.reason, next_capacity="on-demand")
    if decision.verdict == "return-to-spot" and may_return(
        spec, capacity, spot_attempts=spot_attempts, returns=wait.returns_to_spot
    ):
        return NextStep(
            "return-to-spot",
            f"{decision.reason} (return {wait.returns_to_spot + 1} of {MAX_RETURNS_TO_SPOT}; spot attempt "
            f"{spot_attempts + 1} of {spec.retry_max_attempts})",
            next_capacity="spot",
            next_instance_type=wait.instance_type,  # the type the fleet was seen on spot with
        )
    if capacity == "on-demand" and wait.waited_seconds > 0 and wait.deadline_passed:
        return NextStep(
            "give-up",
            f"no on-demand capacity of {_types(spec)} by the deadline (waited "
            f"{format_duration(wait.waited_seconds)}): the job is stopped rather than left waiting",
            finish_reason="capacity-unavailable",
        )
    if capacity == "spot" and spot_attempts < spec.retry_max_attempts and wait.other_zone:
        # Same type, another zone: a spot pool of its own, and no other configuration (type, count).
        stuck_for = _stuck(status, wait, decision, f"{wait.instance_type or spec.instance_type} in {wait.zone}")
        if stuck_for:
            return NextStep(
                "move-to-another-zone",
                f"{stuck_for}: spot attempt {spot_attempts + 1} of {spec.retry_max_attempts} moves to "
                f"{wait.other_zone} from the last checkpoint, before another type or any on-demand",
                next_capacity="spot",
                next_zone=wait.other_zone,
            )
    other = next_type(spec, wait.instance_type)
    if capacity == "spot" and spot_attempts < spec.retry_max_attempts and other:
        limit = move_after_wait_seconds(decision.slack_seconds)
        stuck = wait.waited_seconds >= limit
        interrupted = status.state == "interrupted" and status.interruptions >= MOVE_AFTER_INTERRUPTIONS
        if stuck or interrupted:
            why = (
                f"no spot capacity of {wait.instance_type or spec.instance_type} for "
                f"{format_duration(wait.waited_seconds)} (moves after {format_duration(limit)})"
                if stuck
                else f"{status.interruptions} spot interruptions on {wait.instance_type or spec.instance_type}"
            )
            return NextStep(
                "move-to-another-type",
                f"{why}: spot attempt {spot_attempts + 1} of {spec.retry_max_attempts} moves to {other} "
                "from the last checkpoint, before any on-demand is spent",
                next_capacity="spot",
                next_instance_type=other,
            )
    return NextStep("keep-waiting", decision.reason)


def _stuck(status: TrainingStatus, wait: CapacityWait, decision: Decision, where: str) -> str:
    """Why a spot attempt leaves `where` (no capacity for long enough, or interrupted often enough),
    quoting what was seen; empty while it should wait on."""
    limit = move_after_wait_seconds(decision.slack_seconds)
    if wait.waited_seconds >= limit:
        return (
            f"no spot capacity of {where} for {format_duration(wait.waited_seconds)} "
            f"(moves after {format_duration(limit)})"
        )
    if status.state == "interrupted" and status.interruptions >= MOVE_AFTER_INTERRUPTIONS:
        return f"{status.interruptions} spot interruptions of {where}"
    return ""


def _on_demand_short(spec: JobSpec, wait: CapacityWait, seed: str) -> NextStep:
    """An on-demand attempt Batch ended for capacity (the queue's time limit on jobs short of it):
    a capacity event, not a failure of the job. Again on on-demand after a back-off, until the
    deadline or retry.maxAttempts on-demand attempts; then CapacityUnavailable."""
    if wait.deadline_passed or wait.on_demand_attempts >= spec.retry_max_attempts:
        why = "by the deadline" if wait.deadline_passed else f"in {wait.on_demand_attempts} on-demand attempts"
        return NextStep(
            "give-up",
            f"no on-demand capacity of {_types(spec)} {why}: Batch ended the wait (the queue's time limit)",
            finish_reason="capacity-unavailable",
        )
    pause = backoff_seconds(spec.retry_backoff_seconds, wait.on_demand_attempts, seed)
    return NextStep(
        "resubmit-on-demand",
        f"Batch ended the on-demand attempt's wait for capacity (the queue's time limit); on-demand attempt "
        f"{wait.on_demand_attempts + 1} of {spec.retry_max_attempts} from the last checkpoint after {pause}s",
        next_capacity="on-demand",
        backoff_seconds=pause,
    )


def _types(spec: JobSpec) -> str:
    return " or ".join(option.instance_type for option in spec.instance_options)


def within_history_budget(step: NextStep, checks: int) -> NextStep:
    """`step`, unless this execution has made its share of checks (`checks`, this one included)
    and would only keep waiting: then the watch continues in a fresh execution."""
    if step.action != "keep-waiting" or checks < CHECKS_PER_EXECUTION:
        return step
    return NextStep(
        "continue-in-new-execution",
        f"{step.explanation}; {checks} status checks in this execution, so a fresh execution "
        "continues the watch (Step Functions keeps at most 25,000 history events per execution)",
    )
