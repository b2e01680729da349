"""StopSpotJob's work: terminate the spot job before moving to on-demand (or to spot on another of
the job's instance types, another region or a training plan), and tell on-call.

Batch stops the SageMaker job, whose training code saves a last checkpoint on SIGTERM; the next
attempt resumes there. The alert is best effort: a throttled publish is logged and counted
(AlertsNotPublished), never a reason to skip the next attempt; a failed terminate fails the step,
whose Catch then stops the job on the way to UnexpectedError."""

from __future__ import annotations

from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit

from spotline.aws.billing.reporting import try_publish_alert
from spotline.aws.common.clients import client, in_region
from spotline.aws.common.observability import add_team_dimension, logger, metrics
from spotline.core.capacity.capacity_moves import move_of
from spotline.core.spec.model import to_rfc3339
from spotline.core.state import Fallback, RunStatus, Training
from spotline.core.state.execution_state import JobSummary

REASON_LIMIT = 256


def stop_for_move(job: JobSummary, training: Training, status: RunStatus, *, topic_arn: str, now: datetime) -> Fallback:
    """Stop `training`'s job for the move the check `status` decided; returns `$.fallback`."""
    _kind, move, where = move_of(status)
    reason = f"Spotline: moving to {where}: {status.explanation}"[:REASON_LIMIT]
    already_ended = status.finished
    if not already_ended:
        with in_region(training.region):
            client("batch").terminate_service_job(jobId=training.job_id, reason=reason)
    logger.info(
        f"Moving to {where}", extra={"jobId": training.job_id, "reason": reason, "terminated": not already_ended}
    )
    notified = try_publish_alert(
        topic_arn,
        kind=move.kind,
        team=job.team,
        job=job.name,
        owner=job.owner,
        what=f"Spotline moved a training job to {where}.",
        cause=status.explanation,
        next_step=move.next_step,
        links_=status.links or training.links or {},
    )
    add_team_dimension(job.team)
    metrics.add_metric(name=move.metric, unit=MetricUnit.Count, value=1)
    return Fallback(
        job_id=training.job_id,
        capacity=status.next_capacity or "on-demand",
        terminated=not already_ended,
        reason=reason,
        at=to_rfc3339(now),
        notified=notified,
    )
