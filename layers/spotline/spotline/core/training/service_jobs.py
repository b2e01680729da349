"""Spotline's AWS Batch service jobs as the clean-up sees them (pure): whose they are, whether
they are still queued or running, and which ones no execution watches any more.

Every service job Spotline submits is named `<execution name>-a<attempt>-spot|od|tp` and tagged
`spotline:team`, `spotline:job` and `spotline:execution` (the execution's name), see
`spotline.core.training.training_request.service_job_request`. The name narrows a search (the JOB_NAME
filter of ListServiceJobs takes a prefix); the tag decides, so a job whose name merely starts
the same way is never touched. A job that a later execution takes over must be re-tagged with
that execution's name: the tag is the one statement of who watches a job.

Tags can be copied, though: anyone allowed to call SubmitServiceJob on the queue can put a job
there, with Spotline's tags or without, naming any role in its payload (Batch passes the payload
through without validation and its service-linked role passes the role to SageMaker). Such a job
is not Spotline's when it lacks the tags, or when the execution its tag names does not know its
job id: an execution's state (`$.training`) lists every job it submitted
(`job_ids_in_state`), read back from its history (`known_jobs`). The reconciler terminates
those (`intruders`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from spotline.core.common.errors import ManifestError
from spotline.core.state import AttemptRecord, ServiceJobRecord, StateError, Training
from spotline.core.state.execution_state import clip
from spotline.core.training.training_request import TAG_PREFIX

LIVE_STATUSES = ("SUBMITTED", "PENDING", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING")
"""Batch statuses of a service job that is queued or running (SUCCEEDED and FAILED are ends)."""
TEAM_TAG = f"{TAG_PREFIX}team"
JOB_TAG = f"{TAG_PREFIX}job"
EXECUTION_TAG = f"{TAG_PREFIX}execution"
HOME_TAG = f"{TAG_PREFIX}home"
CONTINUED_NAME = re.compile(r"(.+)-c[0-9]+")
RUNNING_EXECUTION = "RUNNING"
NO_SUCH_EXECUTION = "NOT_FOUND"
"""The status the reconciler records for an execution Step Functions does not know."""
REASON_LIMIT = 256
CANCELLED_ERROR = "CancelledBySpotlineCli"
"""The error `spotline cancel` stops an execution with: its end then stops the jobs without an
alert (the team asked for it)."""
ENDED_HOW = {
    "SUCCEEDED": "succeeded",
    "FAILED": "failed",
    "TIMED_OUT": "timed out",
    "ABORTED": "was stopped (in the console or by StopExecution)",
    NO_SUCH_EXECUTION: "is unknown to Step Functions",
}
"""An execution's end in words, for alerts: `execution <name> <how>`."""


@dataclass(frozen=True, slots=True)
class ServiceJob:
    """One service job, from DescribeServiceJob (ListServiceJobs' summaries carry no tags)."""

    job_id: str
    job_name: str
    status: str
    terminating: bool  # isTerminated: someone asked Batch to terminate it; it may still be stopping
    tags: Mapping[str, str] = field(default_factory=dict)
    training_job_name: str | None = None
    role_arn: str | None = None  # the payload's RoleArn: the role SageMaker runs the job with
    quota_share: str | None = None

    @classmethod
    def from_description(cls, described: Mapping[str, Any]) -> ServiceJob:
        latest = (described.get("latestAttempt") or {}).get("serviceResourceId") or {}
        arn = str(latest.get("value") or "")
        return cls(
            job_id=str(described["jobId"]),
            job_name=str(described.get("jobName") or ""),
            status=str(described.get("status") or ""),
            terminating=bool(described.get("isTerminated")),
            tags={str(k): str(v) for k, v in (described.get("tags") or {}).items()},
            training_job_name=arn.rpartition("training-job/")[2] or None,
            role_arn=_payload_role(described.get("serviceRequestPayload")),
            quota_share=described.get("quotaShareName"),
        )

    @property
    def live(self) -> bool:
        """Queued or running (a job being terminated still runs until SageMaker stops it)."""
        return self.status in LIVE_STATUSES

    @property
    def needs_stopping(self) -> bool:
        """Live, and nobody has asked Batch to terminate it yet."""
        return self.live and not self.terminating

    @property
    def execution(self) -> str | None:
        return self.tags.get(EXECUTION_TAG)

    @property
    def home(self) -> str | None:
        """The region of its run's execution (`spotline:home`; None for a job submitted before it)."""
        return self.tags.get(HOME_TAG)

    @property
    def tagged_as_spotlines(self) -> bool:
        """It carries the tags Spotline submits every job with (which anyone may copy)."""
        return bool(self.execution and self.team)

    @property
    def team(self) -> str | None:
        return self.tags.get(TEAM_TAG)

    @property
    def job(self) -> str | None:
        return self.tags.get(JOB_TAG)

    def to_record(self) -> ServiceJobRecord:
        """The job as the state names it (`$.liveRuns.found[]`, `$.cleanup.stopped[]`)."""
        return ServiceJobRecord(
            job_id=self.job_id,
            job_name=self.job_name,
            status=self.status,
            training_job_name=self.training_job_name,
            execution=self.execution,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.to_record().to_state()


def _payload_role(payload: Any) -> str | None:
    try:
        role = json.loads(str(payload)).get("RoleArn")
    except (ValueError, AttributeError):
        return None
    return str(role) if role else None


def execution_name_of(execution: str) -> str:
    """An execution ARN (or name) -> its name, the value of the `spotline:execution` tag."""
    name = execution.rsplit(":", 1)[-1]
    if not name:
        raise ValueError(f"{execution!r} names no execution")
    return name


def job_name_prefix(execution_name: str) -> str:
    """What every service job name of the execution starts with (`<name>-a1-spot`, `<name>-a2-od`)."""
    return f"{execution_name}-a"


def run_job_name_pattern(execution_name: str) -> str:
    """A ListServiceJobs JOB_NAME filter that finds every job of the execution's run: an
    execution continuing a long run (`<first>-c<n>`, see `execution_state.continuation_name`)
    watches jobs the executions before it submitted, named after the first."""
    continued = CONTINUED_NAME.fullmatch(execution_name)
    return f"{continued.group(1)}*" if continued else f"{job_name_prefix(execution_name)}*"


def execution_arn(state_machine_arn: str, execution_name: str) -> str:
    """`arn:aws:states:r:a:stateMachine:m` + `x` -> `arn:aws:states:r:a:execution:m:x`."""
    prefix, separator, machine = state_machine_arn.rpartition(":stateMachine:")
    if not separator or not machine:
        raise ValueError(f"{state_machine_arn!r} is not a state machine ARN")
    return f"{prefix}:execution:{machine}:{execution_name}"


def state_machine_of(execution_arn: str) -> str:
    """`arn:aws:states:r:a:execution:m:x` -> `arn:aws:states:r:a:stateMachine:m`."""
    prefix, separator, rest = execution_arn.partition(":execution:")
    machine = rest.partition(":")[0]
    if not separator or not machine:
        raise ValueError(f"{execution_arn!r} is not an execution ARN")
    return f"{prefix}:stateMachine:{machine}"


def jobs_to_stop(jobs: Iterable[ServiceJob], execution_name: str) -> list[ServiceJob]:
    """The execution's own jobs (by tag) that are still queued or running and not yet terminated."""
    return [job for job in jobs if job.execution == execution_name and job.needs_stopping]


def orphans(jobs: Iterable[ServiceJob], execution_statuses: Mapping[str, str]) -> list[ServiceJob]:
    """Spotline jobs still queued or running whose execution is known to be no longer RUNNING
    (ended, or unknown to Step Functions: `NO_SUCH_EXECUTION`). A job whose execution was not
    looked up is left alone."""
    return [
        job
        for job in jobs
        if job.execution is not None
        and job.tagged_as_spotlines
        and job.needs_stopping
        and execution_statuses.get(job.execution, RUNNING_EXECUTION) != RUNNING_EXECUTION
    ]


SUBMITTING_STATES = frozenset({"SubmitTrainingJob", "StopTrainingJobAfterError"})
"""States in which an execution may have a job on the queue that its state does not list yet
(submitted a moment ago, or by a try that failed after SubmitServiceJob)."""


@dataclass(frozen=True, slots=True)
class KnownJobs:
    """The service jobs an execution's latest state lists (`$.training`)."""

    job_ids: frozenset[str]
    settled: bool
    """False: the execution is submitting right now, or its state could not be read: judge no
    job by it this time."""


UNSETTLED = KnownJobs(frozenset(), settled=False)


def known_jobs(events_newest_first: Iterable[Mapping[str, Any]]) -> KnownJobs | None:
    """The job ids of the latest state an execution history's events carry (GetExecutionHistory
    with reverseOrder): a state's input on entering it, its output on leaving it, or the
    execution's input. None when none of these events carries one (read further back)."""
    for event in events_newest_first:
        entered = event.get("stateEnteredEventDetails")
        if entered is not None:
            if entered.get("name") in SUBMITTING_STATES:
                return UNSETTLED
            return _jobs_in(entered.get("input"), entered.get("inputDetails"))
        exited = event.get("stateExitedEventDetails")
        if exited is not None:
            return _jobs_in(exited.get("output"), exited.get("outputDetails"))
        started = event.get("executionStartedEventDetails")
        if started is not None:
            return _jobs_in(started.get("input"), started.get("inputDetails"))
    return None


def _jobs_in(document: Any, details: Any) -> KnownJobs:
    if isinstance(details, Mapping) and details.get("truncated"):
        return UNSETTLED
    try:
        state = json.loads(str(document))
    except ValueError:
        return UNSETTLED
    if not isinstance(state, dict):
        return UNSETTLED
    try:
        training = Training.in_state(state)
    except StateError:
        # A history of another shape (an older deploy's, say): judging its jobs by a misread list
        # could terminate one Spotline submitted, so none is judged by it.
        return UNSETTLED
    return KnownJobs(frozenset(job_ids_in_state(training)), settled=True)


@dataclass(frozen=True, slots=True)
class Intruder:
    """A job on Spotline's queue that Spotline did not submit, and how the reconciler knows."""

    job: ServiceJob
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.job.to_dict(),
            "team": self.job.team,
            "roleArn": self.job.role_arn,
            "quotaShareName": self.job.quota_share,
            "why": self.why,
        }


def intruders(jobs: Iterable[ServiceJob], known: Mapping[str, KnownJobs]) -> list[Intruder]:
    """Queued or running jobs Spotline did not submit: those without its tags, and those whose
    `spotline:execution` tag names a running execution (looked up in `known`) whose state does
    not list them. A job whose execution was not looked up, or is unsettled, is left alone."""
    found = []
    for job in jobs:
        if not job.needs_stopping:
            continue
        if not job.tagged_as_spotlines:
            found.append(Intruder(job, f"it carries no {TEAM_TAG} and {EXECUTION_TAG} tags"))
            continue
        claimed = known.get(str(job.execution))
        if claimed is not None and claimed.settled and job.job_id not in claimed.job_ids:
            found.append(Intruder(job, f"its tags name execution {job.execution}, which did not submit it"))
    return found


def intruder_reason(why: str) -> str:
    """The TerminateServiceJob reason for a job Spotline did not submit."""
    return clip(f"Spotline: not submitted by Spotline ({why}); only Spotline may submit to this queue", REASON_LIMIT)


def stop_reason(execution_name: str, why: str) -> str:
    """The TerminateServiceJob reason (DescribeServiceJob shows it; SageMaker's job gets stopped)."""
    return clip(f"Spotline: {why}; execution {execution_name}", REASON_LIMIT)


def other_live_runs(jobs: Iterable[ServiceJob], *, team: str, name: str, execution_name: str) -> list[ServiceJob]:
    """Queued or running jobs of the same team and job name started by another execution (a job
    still being terminated counts: it writes to the same checkpoint prefix until it stops)."""
    return [
        job for job in jobs if job.live and job.team == team and job.job == name and job.execution != execution_name
    ]


def live_run_problem(team: str, name: str, runs: list[ServiceJob]) -> ManifestError:
    """Why the manifest may not start now, and what to do (ResourceValidationFailed)."""
    first = runs[0]
    more = f"; and {len(runs) - 1} more job(s) of that name" if len(runs) > 1 else ""
    return ManifestError(
        "metadata.name",
        f"a job of team {team} named {name} is still queued or running (execution {first.execution}, "
        f"Batch job {first.job_id}, {first.status}{more}): cancel it (stop that execution; Spotline "
        "then stops its training job) or wait for it to end, then upload the manifest again",
    )


def job_ids_in_state(training: Training | None) -> list[str]:
    """Every service job id the execution state knows (`$.training.jobId` and earlier attempts')."""
    if training is None:
        return []
    attempts: list[Training | AttemptRecord] = [*training.previous_attempts, training]
    return [a.job_id for a in attempts if a.job_id]


def job_ids_by_region(training: Training | None, home: str) -> dict[str, list[str]]:
    """`job_ids_in_state` by the region each attempt ran in ("" for `home`, the stack's own)."""
    found: dict[str, list[str]] = {}
    if training is None:
        return found
    attempts: list[Training | AttemptRecord] = [*training.previous_attempts, training]
    for attempt in attempts:
        if attempt.job_id:
            region = attempt.region or ""
            found.setdefault("" if region in ("", home) else region, []).append(attempt.job_id)
    return found
