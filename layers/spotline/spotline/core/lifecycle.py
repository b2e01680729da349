"""What the workflow does after each status check (pure): keep waiting, resubmit on spot
after a back-off, move to on-demand, finish, or hand the watch over to a fresh execution.
CheckTrainingStatus returns it as `action` and the state machine's `WhatShouldHappenNext?`
routes on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from spotline.core.model import JobSpec
from spotline.core.policy import Capacity, Decision, backoff_seconds
from spotline.core.status import TrainingStatus

Action = Literal["keep-waiting", "resubmit-on-spot", "switch-to-on-demand", "finish", "continue-in-new-execution"]
FinishReason = Literal["completed", "failed", "spot-exhausted"]
SPOT_ENDINGS = frozenset({"spot-wait-exceeded", "capacity"})
"""Reason classes that mean spot capacity ended the job, not the training code."""
CHECKS_PER_EXECUTION = 600
"""Status checks one execution makes before a fresh one takes over the watch. A check costs
about 13 history events and a submission about 12 (at most 11 per run: 10 spot attempts and
one on-demand), so an execution stays under 8,100 of Step Functions' 25,000 events whatever
happens; the design bound is 10,000 (`benchmarks/history_worst_case.py`)."""


@dataclass(frozen=True, slots=True)
class NextStep:
    action: Action
    explanation: str
    next_capacity: Capacity | None = None
    backoff_seconds: int = 0
    finish_reason: FinishReason | None = None


def next_step(
    spec: JobSpec, status: TrainingStatus, *, capacity: Capacity, spot_attempts: int, decision: Decision, seed: str
) -> NextStep:
    """`spot_attempts`: spot submissions so far, this one included. `seed`: for the jitter."""
    may_switch = capacity == "spot" and spec.strategy == "spot-first"
    if status.state == "completed":
        return NextStep("finish", "training completed", finish_reason="completed")
    if status.state == "failed":
        if capacity == "spot" and status.reason_class in SPOT_ENDINGS:
            if spot_attempts < spec.retry_max_attempts:
                if may_switch and decision.verdict == "switch-to-on-demand":
                    return NextStep("switch-to-on-demand", decision.reason, next_capacity="on-demand")
                wait = backoff_seconds(spec.retry_backoff_seconds, spot_attempts, seed)
                return NextStep(
                    "resubmit-on-spot",
                    f"spot ended the job ({status.reason_class}); spot attempt {spot_attempts + 1} of "
                    f"{spec.retry_max_attempts} from the last checkpoint after {wait}s",
                    next_capacity="spot",
                    backoff_seconds=wait,
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
        return NextStep("finish", f"training failed ({status.reason_class}): never retried", finish_reason="failed")
    if may_switch and decision.verdict == "switch-to-on-demand":
        return NextStep("switch-to-on-demand", decision.reason, next_capacity="on-demand")
    return NextStep("keep-waiting", decision.reason)


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
