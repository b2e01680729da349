"""ReconcileTrainingJobs (every 15 minutes): the safety net under the clean-up at an execution's
end. Lists Spotline's service jobs queued or running on the queue, looks up each one's execution
(`spotline:execution` tag, DescribeExecution) and terminates those whose execution is no longer
RUNNING: e.g. a job of an execution that ended while StopExecutionJobs was failing. Counts them
(`OrphanedJobsStopped`, per team) and tells on-call and the team."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws import clock
from spotline.aws.observability import log_metrics, logger, metrics
from spotline.aws.service_jobs import alert_stopped, count_by_team, sweep
from spotline.core.model import to_rfc3339
from spotline.core.service_jobs import ENDED_HOW, ServiceJob

NEXT_STEP = (
    "Find out why the clean-up at the execution's end missed it (StopExecutionJobs' logs, the events "
    "dead-letter queue). If the run is still wanted, upload the manifest again: the new job resumes from "
    "the last checkpoint. See docs/runbook.md, 'Orphaned training job stopped'."
)


@log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    state_machine_arn = os.environ["STATE_MACHINE_ARN"]
    found = sweep(os.environ["JOB_QUEUE"], state_machine_arn, why="no running execution watches this job")
    count_by_team("OrphanedJobsStopped", found.stopped)
    metrics.add_metric(name="ServiceJobsReconciled", unit=MetricUnit.Count, value=len(found.checked))

    def cause(job: ServiceJob) -> str:
        status = found.executions[str(job.execution)]
        return (
            f"Execution {job.execution} {ENDED_HOW.get(status, status)}, but its training job {job.job_name} "
            f"was still {job.status}, unwatched and billing: the reconciler terminated it."
        )

    notified = alert_stopped(
        os.environ["ALERT_TOPIC_ARN"],
        os.environ.get("AWS_REGION", "us-east-1"),
        state_machine_arn,
        found.stopped,
        kind="OrphanedJobStopped",
        what="Spotline's reconciler terminated a training job that no execution was watching.",
        cause=cause,
        next_step=NEXT_STEP,
    )
    if found.stopped:
        logger.warning("Orphaned training jobs stopped", extra=found.to_dict())
    else:
        logger.info("No orphaned training jobs", extra={"checked": len(found.checked)})
    return {**found.to_dict(), "notified": notified, "at": to_rfc3339(clock.now())}
