"""StopExecutionJobs: terminate every training job of one execution that is still queued or
running. One function, two callers, the same job:

- the state machine (`StopTrainingJobAfterError`), before a run ends on an unexpected error:
  `{"execution", "input"}` like every task; the state's job ids are stopped too;
- the EventBridge rule on the execution's end (`Step Functions Execution Status Change`,
  SUCCEEDED, FAILED, TIMED_OUT or ABORTED): a run stopped in the console, timed out, or failed
  where no Catch applies. What it stops here was left running, so it alerts the team. For a
  scoring run's execution, it stops the run's transform jobs still in progress.

Idempotent: a job already terminated or ended is left alone.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.observability import add_team_dimension, bind_execution, log_metrics, logger, metrics
from spotline.aws.scoring.scoring_runs import stop_transform_jobs
from spotline.aws.training.service_jobs import alert_stopped, count_by_team, stop_everywhere
from spotline.core.spec.model import to_rfc3339
from spotline.core.state import Failure, JobsStopped, ManifestCheck, Training
from spotline.core.training.service_jobs import (
    CANCELLED_ERROR,
    ENDED_HOW,
    ServiceJob,
    execution_name_of,
    job_ids_by_region,
)

STATUS_CHANGE = "Step Functions Execution Status Change"
NEXT_STEP = (
    "Nothing is running any more. If the run is still wanted, upload the manifest again: the new job "
    "resumes from the last checkpoint. See docs/runbook.md, 'Training job stopped at an execution's end'."
)


def _peer_regions() -> list[str]:
    """The stack's PeerRegions: a run's attempts may run on the namesake queue there."""
    return [r for r in os.environ.get("PEER_REGIONS", "").split(",") if r]


@log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    queue = os.environ["JOB_QUEUE"]
    if event.get("detail-type") == STATUS_CHANGE:
        return _after_the_end(event["detail"], queue)
    bind_execution(event)
    state = event["input"]
    failure = Failure.in_state(state)
    error = failure.error if failure else "an error"
    found = stop_everywhere(
        execution_name_of(event["execution"]),
        queue,
        _peer_regions(),
        why=f"the run is ending on an unexpected error ({error})",
        known_job_ids=job_ids_by_region(Training.in_state(state), os.environ.get("AWS_REGION", "")),
    )
    manifest = ManifestCheck.in_state(state)
    add_team_dimension(manifest.job.team if manifest and manifest.job else "unknown")
    metrics.add_metric(name="JobsStoppedAfterError", unit=MetricUnit.Count, value=len(found.stopped))
    logger.info("Jobs stopped after an error", extra=found.to_dict())
    return JobsStopped(
        stopped=tuple(j.to_record() for j in found.stopped), checked=len(found.checked), at=_now()
    ).to_state()


def _after_the_end(detail: dict[str, Any], queue: str) -> dict[str, Any]:
    name, status = str(detail["name"]), str(detail["status"])
    logger.append_keys(execution=detail.get("executionArn"))
    if detail.get("stateMachineArn") == os.environ.get("SCORING_STATE_MACHINE_ARN"):
        # A scoring run's transform jobs, by the key in their names (spotline.aws.scoring.scoring_runs).
        stopped = stop_transform_jobs(name)
        metrics.add_metric(name="TransformJobsStoppedAtExecutionEnd", unit=MetricUnit.Count, value=len(stopped))
        if stopped:
            logger.warning("Transform jobs left running at the execution's end were stopped", extra={"jobs": stopped})
        return {"execution": name, "status": status, "stoppedTransformJobs": stopped, "at": _now()}
    cancelled = status == "ABORTED" and detail.get("error") == CANCELLED_ERROR
    why = "its run was cancelled with spotline cancel" if cancelled else f"its execution ended {status}"
    found = stop_everywhere(name, queue, _peer_regions(), why=why, known_job_ids={})
    metrics.add_metric(name="ExecutionEndsChecked", unit=MetricUnit.Count, value=1)
    if cancelled:  # the team asked for it: `spotline cancel` stops the jobs too, whoever gets there first
        count_by_team("JobsStoppedAtCancel", found.stopped)
        return {
            "execution": name,
            "status": status,
            "stopped": [j.to_dict() for j in found.stopped],
            "checked": len(found.checked),
            "notified": 0,
            "at": _now(),
        }
    count_by_team("JobsStoppedAtExecutionEnd", found.stopped)

    def cause(job: ServiceJob) -> str:
        return (
            f"Execution {name} {ENDED_HOW.get(status, status)} while its training job {job.job_name} was "
            f"still {job.status}; nothing watched the job any more, so Spotline terminated it."
        )

    notified = alert_stopped(
        os.environ["ALERT_TOPIC_ARN"],
        os.environ.get("AWS_REGION", "us-east-1"),
        str(detail["stateMachineArn"]),
        found.stopped,
        kind="JobStoppedAtExecutionEnd",
        what="Spotline terminated a training job whose execution had ended.",
        cause=cause,
        next_step=NEXT_STEP,
    )
    if found.stopped:
        logger.warning("Jobs left running at the execution's end were stopped", extra=found.to_dict())
    return {
        "execution": name,
        "status": status,
        "stopped": [j.to_dict() for j in found.stopped],
        "checked": len(found.checked),
        "notified": notified,
        "at": _now(),
    }


def _now() -> str:
    return to_rfc3339(clock.now())
