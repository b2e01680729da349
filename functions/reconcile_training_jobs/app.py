"""ReconcileTrainingJobs (every 15 minutes): the safety net under the clean-up at an execution's
end, and the one control that catches a job put on Spotline's queue by anyone but Spotline.

Lists the service jobs queued or running on the queue and terminates those no running execution
watches:
- orphans: Spotline's jobs (`spotline:team` and `spotline:execution` tags) whose execution is no
  longer RUNNING (DescribeExecution), e.g. a job of an execution that ended while
  StopExecutionJobs was failing. Counted in `OrphanedJobsStopped`, per team;
- foreign jobs: jobs without those tags, or tagged with a running execution whose state
  (GetExecutionHistory) does not list them. Someone with batch:SubmitServiceJob on the queue put
  them there, past ValidateResources, with whatever role their payload names. Counted in
  `ForeignJobsStopped` (per the team their tag claims, `unknown` without one).
Each one is logged and on-call (and the team) told."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.observability import log_metrics, logger, metrics
from spotline.aws.training.service_jobs import alert_stopped, count_by_team, sweep
from spotline.core.spec.model import to_rfc3339
from spotline.core.training.service_jobs import ENDED_HOW, Intruder, ServiceJob

NEXT_STEP = (
    "Find out why the clean-up at the execution's end missed it (StopExecutionJobs' logs, the events "
    "dead-letter queue). If the run is still wanted, upload the manifest again: the new job resumes from "
    "the last checkpoint. See docs/runbook.md, 'Orphaned training job stopped'."
)
FOREIGN_NEXT_STEP = (
    "Find who submitted it (CloudTrail: SubmitServiceJob on the job queue) and take batch:SubmitServiceJob on "
    "the queue away from every principal but SubmitTrainingJob's role (docs/platform/security.md, "
    "'Which role a job runs with, and who may submit to the job queue'). Teams train through manifests "
    "only. See docs/runbook.md, 'Foreign training job stopped'."
)


@log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    state_machine_arn = os.environ["STATE_MACHINE_ARN"]
    found = sweep(os.environ["JOB_QUEUE"], state_machine_arn, why="no running execution watches this job")
    count_by_team("OrphanedJobsStopped", found.stopped)
    count_by_team("ForeignJobsStopped", [intruder.job for intruder in found.foreign])
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
    why = {intruder.job.job_id: intruder for intruder in found.foreign}

    def foreign_cause(job: ServiceJob) -> str:
        intruder: Intruder = why[job.job_id]
        return (
            f"Service job {job.job_name} (Batch job {job.job_id}, {job.status}) was put on Spotline's queue "
            f"by someone other than Spotline: {intruder.why}. It named role {job.role_arn or 'unknown'} and "
            f"quota share {job.quota_share or 'none'}; the reconciler terminated it."
        )

    notified += alert_stopped(
        os.environ["ALERT_TOPIC_ARN"],
        os.environ.get("AWS_REGION", "us-east-1"),
        state_machine_arn,
        [intruder.job for intruder in found.foreign],
        kind="ForeignJobStopped",
        what="Spotline's reconciler terminated a training job on its queue that Spotline did not submit.",
        cause=foreign_cause,
        next_step=FOREIGN_NEXT_STEP,
    )
    if found.foreign:
        logger.warning("Training jobs Spotline did not submit were terminated", extra=found.to_dict())
    if found.stopped:
        logger.warning("Orphaned training jobs stopped", extra=found.to_dict())
    if not found.stopped and not found.foreign:
        logger.info("No orphaned or foreign training jobs", extra={"checked": len(found.checked)})
    return {**found.to_dict(), "notified": notified, "at": to_rfc3339(clock.now())}
