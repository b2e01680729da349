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
from spotline.aws.clients import client
from spotline.aws.observability import add_team_dimension, bind_execution, log_metrics, logger, metrics
from spotline.aws.reporting import try_publish_alert
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
    moving_type = status.get("nextCapacity") == "spot"
    where = f"spot on {status.get('nextInstanceType')}" if moving_type else "on-demand"
    reason = f"Spotline: moving to {where}: {status['explanation']}"[:REASON_LIMIT]
    already_ended = status["finished"]
    if not already_ended:
        client("batch").terminate_service_job(jobId=job_id, reason=reason)
    logger.info(f"Moving to {where}", extra={"jobId": job_id, "reason": reason, "terminated": not already_ended})
    links_ = status.get("links") or state["training"].get("links") or {}
    if moving_type:
        kind = "MovedToAnotherInstanceType"
        what = f"Spotline moved a spot training job to {status.get('nextInstanceType')}."
        next_step = (
            "Nothing is needed now: the job resumes on spot from its last checkpoint. If this recurs, put the type "
            "with spot capacity first in the manifest."
        )
    else:
        kind, what = "MovedToOnDemand", "Spotline moved a training job from spot to on-demand capacity."
        next_step = (
            "Nothing is needed now: the job resumes on on-demand from its last checkpoint (at a higher cost). If "
            "this recurs, give the deadline more slack or review the instance type's spot availability."
        )
    notified = try_publish_alert(
        os.environ["ALERT_TOPIC_ARN"],
        kind=kind,
        team=job.team,
        job=job.name,
        owner=job.owner,
        what=what,
        cause=status["explanation"],
        next_step=next_step,
        links_=links_,
    )
    add_team_dimension(job.team)
    metrics.add_metric(name="InstanceTypeMoves" if moving_type else "OnDemandFallbacks", unit=MetricUnit.Count, value=1)
    return {
        "jobId": job_id,
        "capacity": "spot" if moving_type else "on-demand",
        "terminated": not already_ended,
        "reason": reason,
        "notified": notified,
        "at": to_rfc3339(clock.now()),
    }
