"""Preempted attempts of service jobs in quota management queues, as the AWS Batch user guide
documents them ("Preemption", "Service job preemption events", API reference):

- Batch "stops a SCHEDULED, STARTING, or RUNNING job to create capacity for a RUNNABLE job": the
  attempt's SageMaker training job is stopped (as TerminateServiceJob stops one: SIGTERM, a last
  checkpoint, Stopping, then Stopped with no FailureReason).
- While it stops, the job keeps its status with statusReason "PREEMPTION_IN_PROGRESS: Cross-share
  preemption triggered to reclaim borrowed capacity" (the "Preemption Started" event); then it is
  RUNNABLE again, the attempt's statusReason "Cross-share preemption triggered to reclaim borrowed
  capacity" (the "Preemption Completed" event, whose detail carries `preemptionSummary`).
- "The default is for preempted jobs to be re-queued as RUNNABLE without limit";
  `preemptionRetriesBeforeTermination` limits it ("When ... set to 0, jobs go to FAILED on their
  first preemption"). Preemptions are counted apart from retryStrategy.attempts, which they do not
  use up: the next attempt is a new training job, resuming from the checkpoint.
- "A sliding window of recent preemption attempts is stored on the job, and visible via
  DescribeServiceJob" (`preemptionSummary`: preemptedAttemptCount, recentPreemptedAttempts). The
  window's size is not documented: the stand-in keeps the last 5.

In-share preemption's wording is not documented: the stand-in says "In-share preemption triggered
by a higher priority job" (batch_capacity.IN_SHARE_REASON).
"""

from __future__ import annotations

from typing import Any

from spotline_dev.harness.standin.base.clock import EPS, ms
from spotline_dev.harness.standin.base.records import Preemption, ServiceJob, TrainingJob
from spotline_dev.harness.standin.base.timeline import cut

IN_PROGRESS = "PREEMPTION_IN_PROGRESS: "
RECENT_PREEMPTIONS = 5


def preempt(sjob: ServiceJob, t: float, reason: str) -> None:
    """Stop the job's current attempt at `t` (a moment nothing later has been seen of)."""
    attempt = sjob.attempts[-1]
    counted = not (attempt.plan.failure_reason or "").startswith("CapacityError")
    attempt.plan = cut(
        attempt.plan,
        t,
        behaviour=attempt.behaviour,
        checkpointed=attempt.key is not None,
        final="Stopped",
        message="Training job stopped",
        kind="terminate",  # a stop by a call, as TerminateServiceJob's
    )
    sjob.preemptions.append(Preemption(attempt, t, reason, counted))


def preemption_of(sjob: ServiceJob, attempt: TrainingJob) -> Preemption | None:
    return next((p for p in sjob.preemptions if p.attempt is attempt), None)


def stopped_preemptions(sjob: ServiceJob, now: float) -> list[Preemption]:
    return [p for p in sjob.preemptions if p.attempt.plan.end <= now + EPS]


def preemption_summary(sjob: ServiceJob, now: float) -> dict[str, Any] | None:
    """ServiceJobPreemptionSummary as of `now` (None before the first preempted attempt stopped)."""
    done = stopped_preemptions(sjob, now)
    if not done:
        return None
    return {
        "preemptedAttemptCount": len(done),
        "recentPreemptedAttempts": [
            {
                "serviceResourceId": {"name": "TrainingJobArn", "value": p.attempt.batch_arn},
                "startedAt": ms(p.attempt.created),
                "stoppedAt": ms(p.attempt.plan.end),
                "statusReason": p.reason,
            }
            for p in done[-RECENT_PREEMPTIONS:]
        ],
    }


def exhausted(sjob: ServiceJob) -> str | None:
    """The FAILED statusReason once preemptions exceed preemptionRetriesBeforeTermination (the
    wording is the stand-in's), else None."""
    retries = (sjob.request.get("preemptionConfiguration") or {}).get("preemptionRetriesBeforeTermination")
    if retries is None or len(sjob.preemptions) <= int(retries):
        return None
    return f"Preemption retries exhausted (preemptionRetriesBeforeTermination {retries}): {sjob.preemptions[-1].reason}"
