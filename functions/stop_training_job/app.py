"""StopSpotJob: terminate the spot job before moving to on-demand. Batch stops the SageMaker
job, whose training code saves a last checkpoint on SIGTERM; the on-demand job resumes there."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline import clock
from spotline.aws import client
from spotline.model import to_rfc3339
from spotline.observability import add_team_dimension, bind_execution, logger, metrics

REASON_LIMIT = 256


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    state = event["input"]
    job_id = state["training"]["jobId"]
    reason = f"Spotline: moving to on-demand: {state['status']['explanation']}"[:REASON_LIMIT]
    already_ended = state["status"]["finished"]
    if not already_ended:
        client("batch").terminate_service_job(jobId=job_id, reason=reason)
    logger.info("Moving to on-demand", extra={"jobId": job_id, "reason": reason, "terminated": not already_ended})
    add_team_dimension(state["manifest"]["spec"]["team"])
    metrics.add_metric(name="OnDemandFallbacks", unit=MetricUnit.Count, value=1)
    return {"jobId": job_id, "terminated": not already_ended, "reason": reason, "at": to_rfc3339(clock.now())}
