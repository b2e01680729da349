"""StopSpotJob: terminate the spot job before moving to on-demand (or to spot on another of the
job's instance types), and tell on-call. Batch
stops the SageMaker job, whose training code saves a last checkpoint on SIGTERM; the on-demand
job resumes there. The alert is best effort: a throttled publish is logged and counted
(AlertsNotPublished), never a reason to skip the on-demand attempt; a failed terminate fails the
step, whose Catch then stops the job on the way to UnexpectedError."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws import clock
from spotline.aws.clients import client, in_region
from spotline.aws.observability import add_team_dimension, bind_execution, log_metrics, logger, metrics
from spotline.aws.reporting import try_publish_alert
from spotline.core.capacity_moves import move_of
from spotline.core.execution_state import job_summary_of
from spotline.core.model import to_rfc3339

REASON_LIMIT = 256


@log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    state = event["input"]
    job = job_summary_of(state["manifest"])
    if job is None:
        raise ValueError("the execution state has no $.manifest.job: StopSpotJob runs only after LoadManifest")
    job_id = state["training"]["jobId"]
    status = state["status"]
    tier = str(status.get("nextCapacity") or "on-demand")
    _kind, move, where = move_of(status)
    reason = f"Spotline: moving to {where}: {status['explanation']}"[:REASON_LIMIT]
    already_ended = status["finished"]
    if not already_ended:
        with in_region(state["training"].get("region")):
            client("batch").terminate_service_job(jobId=job_id, reason=reason)
    logger.info(f"Moving to {where}", extra={"jobId": job_id, "reason": reason, "terminated": not already_ended})
    notified = try_publish_alert(
        os.environ["ALERT_TOPIC_ARN"],
        kind=move.kind,
        team=job.team,
        job=job.name,
        owner=job.owner,
        what=f"Spotline moved a training job to {where}.",
        cause=status["explanation"],
        next_step=move.next_step,
        links_=status.get("links") or state["training"].get("links") or {},
    )
    add_team_dimension(job.team)
    metrics.add_metric(name=move.metric, unit=MetricUnit.Count, value=1)
    return {
        "jobId": job_id,
        "capacity": tier,
        "terminated": not already_ended,
        "reason": reason,
        "notified": notified,
        "at": to_rfc3339(clock.now()),
    }
