"""Finding and stopping Spotline's service jobs on the job queue: an execution's own jobs when
it fails or ends (by job-name prefix, confirmed by tag), every live Spotline job whose execution
no longer runs and every live job Spotline did not submit (the scheduled sweep), and another run
of the same job before a submission.

Terminating is idempotent: a job already terminated (`isTerminated`) or ended is left alone, so
the state machine, the end-of-execution rule and the sweep may all look at the same job.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from spotline.aws.billing.reporting import try_publish_alert
from spotline.aws.common.clients import TransientAwsError, client, error_code, in_region
from spotline.aws.common.observability import logger
from spotline.core.common import links
from spotline.core.regions.regions import arn_in_region, region_of_arn
from spotline.core.teams.quota_shares import quota_share_name
from spotline.core.training.service_jobs import (
    EXECUTION_TAG,
    LIVE_STATUSES,
    NO_SUCH_EXECUTION,
    RUNNING_EXECUTION,
    UNSETTLED,
    Intruder,
    KnownJobs,
    ServiceJob,
    execution_arn,
    intruder_reason,
    intruders,
    jobs_to_stop,
    known_jobs,
    orphans,
    other_live_runs,
    run_job_name_pattern,
    stop_reason,
)

HISTORY_PAGE = 20
"""Events per GetExecutionHistory page (newest first): the latest state is almost always in the first."""
HISTORY_PAGES = 5


@dataclass(frozen=True, slots=True)
class Stopped:
    """What one clean-up found and terminated."""

    checked: list[ServiceJob] = field(default_factory=list)  # jobs it looked at closely
    stopped: list[ServiceJob] = field(default_factory=list)  # Spotline's it asked Batch to terminate
    executions: dict[str, str] = field(default_factory=dict)  # the sweep: execution name -> status
    foreign: list[Intruder] = field(default_factory=list)  # the sweep: jobs Spotline did not submit, terminated

    def to_dict(self) -> dict[str, Any]:
        return {
            "checked": len(self.checked),
            "stopped": [job.to_dict() for job in self.stopped],
            "executions": dict(self.executions),
            "foreign": [intruder.to_dict() for intruder in self.foreign],
        }


def summaries(
    queue: str, *, status: str | None = None, filters: list[dict[str, Any]] | None = None
) -> Iterator[dict[str, Any]]:
    """Every ListServiceJobs summary of one query, page after page. With a JOB_NAME filter Batch
    ignores `status` and returns jobs of any status; QUOTA_SHARE_NAME combines with it."""
    request: dict[str, Any] = {"jobQueue": queue}
    if status:
        request["jobStatus"] = status
    if filters:
        request["filters"] = filters
    while True:
        page = client("batch").list_service_jobs(**request)
        yield from page.get("jobSummaryList", [])
        if not page.get("nextToken"):
            return
        request["nextToken"] = page["nextToken"]


def _untouched_live_ids(listed: Iterable[dict[str, Any]]) -> list[str]:
    return [s["jobId"] for s in listed if s.get("status") in LIVE_STATUSES and not s.get("isTerminated")]


def describe(job_ids: Iterable[str]) -> list[ServiceJob]:
    """Each job as DescribeServiceJob tells it (with its tags), in the order given, once each."""
    batch = client("batch")
    return [ServiceJob.from_description(batch.describe_service_job(jobId=i)) for i in dict.fromkeys(job_ids)]


def terminate(jobs: list[ServiceJob], reason: str) -> None:
    batch = client("batch")
    for job in jobs:
        batch.terminate_service_job(jobId=job.job_id, reason=reason)
        logger.warning("Training job terminated", extra={**job.to_dict(), "reason": reason})


def _region_of(arn: str) -> str | None:
    """The ARN's region when it is not the Lambda's own (None: the client's default)."""
    region = region_of_arn(arn)
    return region if region and region != os.environ.get("AWS_REGION") else None


def stop_everywhere(
    execution_name: str, queue: str, regions: Iterable[str], *, why: str, known_job_ids: Mapping[str, list[str]]
) -> Stopped:
    """`stop_execution_jobs` in the stack's region and in each peer region its runs place attempts
    in (`known_job_ids`: the state's job ids by region, "" for the stack's own)."""
    found = stop_execution_jobs(execution_name, queue, why=why, known_job_ids=known_job_ids.get("", []))
    for region in regions:
        with in_region(region):
            there = stop_execution_jobs(
                execution_name, arn_in_region(queue, region), why=why, known_job_ids=known_job_ids.get(region, [])
            )
        found = Stopped(checked=[*found.checked, *there.checked], stopped=[*found.stopped, *there.stopped])
    return found


def stop_execution_jobs(execution_name: str, queue: str, *, why: str, known_job_ids: Iterable[str] = ()) -> Stopped:
    """Terminate every queued or running service job of one execution: those the state knows
    (`known_job_ids`, which covers a job submitted a moment ago that a listing may not show yet)
    and those the queue lists under the run's job names (which covers a job whose submission
    returned no id, e.g. a runtime killed after SubmitServiceJob, and the jobs an execution
    continuing a long run took over)."""
    pattern = run_job_name_pattern(execution_name)
    listed = list(summaries(queue, filters=[{"name": "JOB_NAME", "values": [pattern]}]))
    try:
        jobs = describe([*known_job_ids, *_untouched_live_ids(listed)])
    except TransientAwsError as exc:  # DescribeServiceJob still throttled: stop without reading the tags
        return _stop_undescribed(execution_name, known_job_ids, listed, pattern, why=why, unread=exc)
    stopping = jobs_to_stop(jobs, execution_name)
    terminate(stopping, stop_reason(execution_name, why))
    return Stopped(checked=[j for j in jobs if j.execution == execution_name], stopped=stopping)


def _stop_undescribed(
    execution_name: str,
    known_job_ids: Iterable[str],
    listed: list[dict[str, Any]],
    pattern: str,
    *,
    why: str,
    unread: Exception,
) -> Stopped:
    """The execution's jobs when DescribeServiceJob cannot be read: those its state names (its
    own by construction) and the live ones listed under exactly its run's job names, terminated
    without their tags (TerminateServiceJob leaves an ended job as it is)."""
    prefix = pattern.removesuffix("*")
    ids = [*known_job_ids, *(i for i in _untouched_live_ids(listed) if _named(listed, i).startswith(prefix))]
    jobs = [
        ServiceJob(i, _named(listed, i), "UNKNOWN", False, tags={EXECUTION_TAG: execution_name})
        for i in dict.fromkeys(ids)
    ]
    logger.warning("Jobs stopped without DescribeServiceJob", extra={"jobIds": ids, "error": str(unread)})
    terminate(jobs, stop_reason(execution_name, why))
    return Stopped(checked=jobs, stopped=jobs)


def _named(listed: list[dict[str, Any]], job_id: str) -> str:
    return next((str(s.get("jobName") or "") for s in listed if s.get("jobId") == job_id), "")


def execution_status(state_machine_arn: str, execution_name: str) -> str:
    try:
        described = client("stepfunctions", _region_of(state_machine_arn)).describe_execution(
            executionArn=execution_arn(state_machine_arn, execution_name)
        )
    except Exception as exc:
        if error_code(exc) == "ExecutionDoesNotExist":
            return NO_SUCH_EXECUTION
        raise
    return str(described["status"])


def jobs_known_to(state_machine_arn: str, execution_name: str) -> KnownJobs:
    """The service jobs a running execution's latest state lists, read from its history."""
    request: dict[str, Any] = {
        "executionArn": execution_arn(state_machine_arn, execution_name),
        "reverseOrder": True,
        "maxResults": HISTORY_PAGE,
    }
    for _ in range(HISTORY_PAGES):
        page = client("stepfunctions", _region_of(state_machine_arn)).get_execution_history(**request)
        # Newest first by event id, whatever order a page comes in (moto ignores reverseOrder).
        known = known_jobs(sorted(page.get("events", []), key=lambda e: int(e.get("id", 0)), reverse=True))
        if known is not None:
            return known
        if not page.get("nextToken"):
            break
        request["nextToken"] = page["nextToken"]
    return UNSETTLED


def sweep(queue: str, state_machine_arn: str, *, why: str) -> Stopped:
    """Terminate every job on the queue that is queued or running and that no running execution
    watches: Spotline's jobs whose execution is not running (it ended, or Step Functions does not
    know it), and jobs Spotline did not submit (`spotline.core.training.service_jobs.intruders`): without
    its tags, or tagged with a running execution that does not list them."""
    ids = [i for status in LIVE_STATUSES for i in _untouched_live_ids(summaries(queue, status=status))]
    jobs = describe(ids)
    # A job placed here by a peer region's run belongs to an execution of that region's namesake
    # state machine (same stack name, same state machine name): it is asked there.
    homes = {str(j.execution): j.home for j in jobs if j.tagged_as_spotlines and j.needs_stopping}
    claimed = sorted(homes)
    machines = {name: arn_in_region(state_machine_arn, homes[name]) for name in claimed}
    statuses = {name: execution_status(machines[name], name) for name in claimed}
    known = {name: jobs_known_to(machines[name], name) for name in claimed if statuses[name] == RUNNING_EXECUTION}
    foreign = intruders(jobs, known)
    for intruder in foreign:
        terminate([intruder.job], intruder_reason(intruder.why))
    found = orphans(jobs, statuses)
    for job in found:
        terminate([job], stop_reason(str(job.execution), f"{why} (its execution is {statuses[str(job.execution)]})"))
    return Stopped(checked=jobs, stopped=found, executions=statuses, foreign=foreign)


def live_runs(
    queue: str, *, team: str, name: str, execution_name: str, quota_share: str | None = None
) -> list[ServiceJob]:
    """The team's queued or running jobs named `name` that another execution started.
    `quota_share`: the share the team counts in (default its own); its jobs are told by their tags."""
    # Every submission names its share.
    share = [{"name": "QUOTA_SHARE_NAME", "values": [quota_share_name(quota_share or team)]}]
    ids = [s["jobId"] for status in LIVE_STATUSES for s in summaries(queue, status=status, filters=share)]
    return other_live_runs(describe(ids), team=team, name=name, execution_name=execution_name)


def count_by_team(metric: str, jobs: list[ServiceJob]) -> None:
    """One EMF document per team with the number of its jobs (dimensions team and service, like
    every per-team Spotline metric)."""
    teams: dict[str, int] = {}
    for job in jobs:
        teams[job.team or "unknown"] = teams.get(job.team or "unknown", 0) + 1
    for team, count in sorted(teams.items()):
        with single_metric(name=metric, unit=MetricUnit.Count, value=count) as emitted:
            emitted.add_dimension(name="team", value=team)


def alert_stopped(
    topic_arn: str,
    region: str,
    state_machine_arn: str,
    jobs: list[ServiceJob],
    *,
    kind: str,
    what: str,
    cause: Callable[[ServiceJob], str],
    next_step: str,
) -> int:
    """One message per terminated job, to its team (message attribute `team`), saying `cause(job)`.
    Returns how many were sent."""
    sent = 0
    for job in jobs:
        execution = job.execution
        sent += try_publish_alert(
            topic_arn,
            kind=kind,
            team=job.team or "unknown",
            job=job.job or job.job_name,
            owner=None,
            what=what,
            cause=cause(job),
            next_step=next_step,
            links_=links.for_job(
                region,
                execution_arn=execution_arn(state_machine_arn, execution) if execution else None,
                training_job_name=job.training_job_name,
                batch_job_id=job.job_id,
            ),
        )
    return sent
