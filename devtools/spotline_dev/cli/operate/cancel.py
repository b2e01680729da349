"""`spotline cancel`: stop a run's execution, then its training jobs, and say what was stopped.

The execution is stopped first: a training job terminated under a running execution would wake
it and count as a failed attempt (which it may resubmit). The jobs are then terminated with the
same clean-up the stack runs at an execution's end (`spotline.aws.training.service_jobs`), idempotent:
whichever of the two gets to a job first stops it, and the end-of-execution rule, seeing the
stop's error (CANCELLED_ERROR), alerts nobody. A job that a SubmitTrainingJob already under way
submits after both have looked is the 15-minute sweep's (ReconcileTrainingJobs).

A scoring run's transform jobs are found by the key every one of its jobs has in its name
(`spotline.aws.scoring.scoring_runs.stop_transform_jobs`, the same clean-up as the stack's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from spotline.aws.scoring.scoring_runs import stop_transform_jobs, transform_jobs_of
from spotline.aws.training.service_jobs import describe, stop_everywhere, summaries
from spotline.core.training.service_jobs import CANCELLED_ERROR, LIVE_STATUSES, ServiceJob, run_job_name_pattern
from spotline_dev.cli.operate.deployment import Deployment
from spotline_dev.cli.operate.runs import describe_run


@dataclass(frozen=True)
class Cancellation:
    execution: str
    execution_arn: str
    was: str  # the execution's status when asked: RUNNING, or how it had ended
    stopped_execution: bool
    stopped_jobs: list[ServiceJob] = field(default_factory=list)
    stopping_jobs: list[ServiceJob] = field(default_factory=list)  # already told to stop (by the stack's clean-up)
    checked_jobs: int = 0
    stopped_transform_jobs: list[str] = field(default_factory=list)  # a scoring run's
    stopping_transform_jobs: list[str] = field(default_factory=list)
    kind: str = "TrainingJob"  # or ScoringJob

    def to_dict(self) -> dict[str, Any]:
        return {
            "execution": self.execution,
            "kind": self.kind,
            "executionArn": self.execution_arn,
            "was": self.was,
            "stoppedExecution": self.stopped_execution,
            "stoppedJobs": [job.to_dict() for job in self.stopped_jobs],
            "stoppingJobs": [job.to_dict() for job in self.stopping_jobs],
            "checkedJobs": self.checked_jobs,
            "stoppedTransformJobs": self.stopped_transform_jobs,
            "stoppingTransformJobs": self.stopping_transform_jobs,
        }


def cancel(deployment: Deployment, name: str, *, now: datetime, who: str) -> Cancellation:
    """Stop the run's live execution (the latest of a continued run) and its queued or running jobs."""
    run = describe_run(deployment, name, now)
    stopped = False
    if run.status == "RUNNING":
        deployment.client("stepfunctions").stop_execution(
            executionArn=run.execution_arn,
            error=CANCELLED_ERROR,
            cause=f"Cancelled by {who} with `spotline cancel`.",
        )
        stopped = True
    if run.scoring is not None:
        ours = stop_transform_jobs(run.name)
        return Cancellation(
            execution=run.name,
            execution_arn=run.execution_arn,
            was=run.status,
            stopped_execution=stopped,
            stopped_transform_jobs=ours,
            stopping_transform_jobs=[n for n in transform_jobs_of(run.name, "Stopping") if n not in ours],
            kind="ScoringJob",
        )
    found = stop_everywhere(
        run.name,
        deployment.job_queue_arn,
        deployment.peer_regions,  # a run's attempts may run on the namesake queue of a peer region
        why=f"its run was cancelled by {who} with spotline cancel",
        known_job_ids={_where(run.batch_job_region, deployment): [run.batch_job_id]} if run.batch_job_id else {},
    )
    return Cancellation(
        execution=run.name,
        execution_arn=run.execution_arn,
        was=run.status,
        stopped_execution=stopped,
        stopped_jobs=found.stopped,
        stopping_jobs=_being_stopped(deployment, run.name, {job.job_id for job in found.stopped}),
        checked_jobs=len(found.checked),
    )


def _where(region: str | None, deployment: Deployment) -> str:
    """`stop_everywhere`'s key for a region: "" for the stack's own."""
    return "" if region in (None, deployment.region) else str(region)


def _being_stopped(deployment: Deployment, name: str, ours: set[str]) -> list[ServiceJob]:
    """The run's live jobs someone else already asked Batch to terminate (the stack's clean-up
    at the execution's end may get there first)."""
    pattern = run_job_name_pattern(name)
    listed = summaries(deployment.job_queue_arn, filters=[{"name": "JOB_NAME", "values": [pattern]}])
    terminating = [
        s["jobId"]
        for s in listed
        if s.get("isTerminated") and s.get("status") in LIVE_STATUSES and s["jobId"] not in ours
    ]
    return [job for job in describe(terminating) if job.execution == name]


def caller(deployment: Deployment) -> str:
    """Who is asking (GetCallerIdentity's ARN), for the stop's cause and the jobs' reason."""
    try:
        return str(deployment.client("sts").get_caller_identity()["Arn"])
    except Exception:
        return "an operator"
