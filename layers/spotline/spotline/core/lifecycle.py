"""What the workflow does after each status check (pure): keep waiting, resubmit on spot
after a back-off, move to on-demand, or finish. CheckTrainingStatus returns it as `action`
and the state machine's `WhatShouldHappenNext?` routes on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from spotline.core.model import JobSpec
from spotline.core.policy import Capacity, Decision, backoff_seconds
from spotline.core.status import TrainingStatus

Action = Literal["keep-waiting", "resubmit-on-spot", "switch-to-on-demand", "finish"]
FinishReason = Literal["completed", "failed", "spot-exhausted"]
SPOT_ENDINGS = frozenset({"spot-wait-exceeded", "capacity"})
"""Reason classes that mean spot capacity ended the job, not the training code."""


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
