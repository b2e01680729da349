"""How an execution ended, in words for on-call and figures for metrics (pure).

RecordOutcome reads the execution state (each step's result under its own key) and decides
which named end it reached; the state machine then routes to the Fail or Succeed state of
that name. It needs no more of the job than the summary in `$.manifest.job`, so it still
reports when the spec itself cannot be read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from spotline.core.billing.billing import RunBill
from spotline.core.billing.cost import cost_usd
from spotline.core.common.durations import format_duration
from spotline.core.common.errors import summarize
from spotline.core.regions.regions import transfer_usd
from spotline.core.spec.model import to_rfc3339
from spotline.core.state import (
    AttemptRecord,
    CleanupFailure,
    DatasetCheck,
    DependencyTimeout,
    Failure,
    Fallback,
    JobsStopped,
    JobSummary,
    LiveRunCheck,
    ManifestCheck,
    Problem,
    ResourceCheck,
    RunStatus,
    Training,
    history_of,
)

SUCCEEDED = "TrainingSucceeded"
RESOURCE_VALIDATION_FAILED = "ResourceValidationFailed"
TRAINING_FAILED = "TrainingFailed"
SPOT_CAPACITY_EXHAUSTED = "SpotCapacityExhausted"
CAPACITY_UNAVAILABLE = "CapacityUnavailable"
DEADLINE_MISSED = "DeadlineMissed"
DEPENDENCY_TIMEOUT = "DependencyTimeout"
UNEXPECTED_ERROR = "UnexpectedError"

NEXT_STEPS = {
    RESOURCE_VALIDATION_FAILED: "Fix the resources listed (or the manifest fields naming them) "
    "and upload the manifest again.",
    TRAINING_FAILED: "Open the training logs; fix the code or data for algorithm errors, "
    "the manifest for client errors, "
    "then upload the manifest again.",
    SPOT_CAPACITY_EXHAUSTED: "Spot capacity for this instance type is scarce: allow on-demand (strategy spot-first), "
    "raise retry.maxAttempts or maxWait, or pick another instance type; then upload the manifest again.",
    CAPACITY_UNAVAILABLE: "No capacity of the job's instance types came in time, spot or on-demand. Add "
    "alternatives (resources.alternatives) with capacity, move the deadline, or ask the platform team about a "
    "training plan; then upload the manifest again: it resumes from the last checkpoint.",
    DEADLINE_MISSED: "The model is in the output location, but late. Check the attempts and interruptions "
    "in the report; give future runs more slack or a spot-first strategy.",
    DEPENDENCY_TIMEOUT: "Ask the preprocessing pipeline's owners about the missing datasets; once they are ready, "
    "upload the manifest again (or raise spec.dependencyTimeout).",
    UNEXPECTED_ERROR: "Spotline itself failed. Check the failing state's error in the execution, "
    "then the Lambda logs; "
    "re-upload the manifest once fixed: the new job resumes from the last checkpoint.",
}


@dataclass(frozen=True, slots=True)
class Figures:
    attempts: int = 0
    interruptions: int = 0
    training_seconds: int = 0
    billable_seconds: int = 0
    queue_wait_seconds: int | None = None
    cost_usd: float | None = 0.0
    """The whole run's cost; None when a part of it is unknown (a type or region without a price, bills
    not read): `cost_by_region` keeps the known parts and `cost_unknown` names the rest."""
    cost_by_region: dict[str, float | None] = field(default_factory=dict)
    """Each region's part of the cost (its training jobs, and the checkpoint copies out of it); None
    for a region whose part is unknown. The known parts add up to `cost_usd` when it is known."""
    on_demand_cost_usd: float | None = None
    """The whole job on-demand from the start (`on_demand_seconds`) on `on_demand_instance_type`;
    None for a run that did not finish, or a type without a price."""
    on_demand_instance_type: str | None = None
    """The type the baseline is priced at: the manifest's primary (spec.resources.instanceType) at
    its instanceCount, wherever the run ended. None without a baseline."""
    savings_percent: float | None = None
    """1 - billed / on-demand baseline: the one saving Spotline reports; None if not finished."""
    on_demand_fallback: bool = False
    deadline: str | None = None
    finished_at: str | None = None
    deadline_met: bool | None = None
    lost_work_seconds: int | None = None
    """Training done and not kept (None while the bills are not read: a live run)."""
    on_demand_seconds: int | None = None
    training_plan_seconds: int = 0
    """Billed time on training plans (reserved capacity paid up front): apart from the cost."""
    billing_settled: bool = False
    """Every training job had ended when its bill was read: the figures are SageMaker's final ones."""
    checkpoint_copies: dict[str, Any] | None = None
    """Copies of the checkpoint to another region (count, bytes, seconds, usd); their transfer is in
    `cost_usd`. None for a run that stayed in one region."""
    cost_unknown: str | None = None
    """What is unknown of the cost and why, when `cost_usd` is None for a run that was billed: a
    type without a price in a region (naming its training jobs), or bills that could not be read."""


@dataclass(frozen=True, slots=True)
class Outcome:
    name: str
    succeeded: bool
    cause: str
    next_step: str
    figures: Figures = field(default_factory=Figures)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class RunSections:
    """The sections of a run's state its outcome is decided from, each as its record (None: the
    step that writes it has not run)."""

    manifest: ManifestCheck | None
    dependencies: DatasetCheck | None
    dependency_timeout: DependencyTimeout | None
    resources: ResourceCheck | None
    live_runs: LiveRunCheck | None
    training: Training | None
    status: RunStatus | None
    fallback: Fallback | None
    failure: Failure | None
    cleanup: JobsStopped | None
    cleanup_failure: CleanupFailure | None

    @classmethod
    def of(cls, state: Mapping[str, Any]) -> RunSections:
        return cls(
            manifest=ManifestCheck.in_state(state),
            dependencies=DatasetCheck.in_state(state),
            dependency_timeout=DependencyTimeout.in_state(state),
            resources=ResourceCheck.in_state(state),
            live_runs=LiveRunCheck.in_state(state),
            training=Training.in_state(state),
            status=RunStatus.in_state(state),
            fallback=Fallback.in_state(state),
            failure=Failure.in_state(state),
            cleanup=JobsStopped.in_state(state),
            cleanup_failure=CleanupFailure.in_state(state),
        )

    @property
    def job(self) -> JobSummary | None:
        """The job in brief (None for a rejected or unread manifest)."""
        return self.manifest.job if self.manifest else None

    @property
    def attempts(self) -> tuple[AttemptRecord, ...]:
        """Every submission of this execution with its last known status, oldest first."""
        return history_of(self.training, self.status)


def attempt_records(state: Mapping[str, Any]) -> tuple[AttemptRecord, ...]:
    """Every submission of this execution with its last known status, oldest first."""
    return history_of(Training.in_state(state), RunStatus.in_state(state))


def figures(
    job: JobSummary | None,
    attempts: Sequence[AttemptRecord],
    finished_at: datetime | None = None,
    *,
    region: str,
    bill: RunBill | None = None,
    switched: bool = False,
) -> Figures:
    """The run's figures: from its bills (`bill`, the training jobs read after they ended), else,
    for a run still under way, from the last status check of each attempt (the cost so far).
    `switched`: the run stopped its spot job for on-demand (StopSpotJob), whether or not the
    on-demand attempt was submitted before the run ended."""
    statuses = [a.final_status for a in attempts if a.final_status]
    deadline = job.deadline_at if job else None
    if bill is not None:
        training, billable, interruptions = bill.training_seconds, bill.billable_seconds, bill.interruptions
        baseline = bill.on_demand_seconds
    else:
        training = sum(int(s.training_seconds or 0) for s in statuses)
        billable = sum(int(s.billable_seconds or 0) for s in statuses)
        interruptions = sum(int(s.interruptions or 0) for s in statuses)
        baseline = None
    costs = _costs(bill, job, attempts, baseline, region=region)
    return Figures(
        attempts=len(attempts),
        interruptions=interruptions,
        training_seconds=training,
        billable_seconds=billable,
        queue_wait_seconds=statuses[0].queue_wait_seconds if statuses else None,
        cost_usd=costs.total,
        cost_by_region=costs.by_region,
        cost_unknown=costs.unknown,
        on_demand_cost_usd=costs.on_demand,
        on_demand_instance_type=costs.on_demand_type,
        savings_percent=costs.savings,
        on_demand_fallback=bool(
            job and job.uses_spot and (switched or any(a.capacity == "on-demand" for a in attempts))
        ),
        deadline=job.deadline if job else None,
        finished_at=to_rfc3339(finished_at) if finished_at else None,
        deadline_met=finished_at <= deadline if deadline and finished_at else None,
        lost_work_seconds=bill.lost_work_seconds if bill is not None else None,
        on_demand_seconds=baseline,
        billing_settled=bill.settled if bill is not None else False,
        training_plan_seconds=bill.training_plan_seconds if bill is not None else 0,
        checkpoint_copies=checkpoint_copies(attempts),
    )


@dataclass(frozen=True, slots=True)
class _Part:
    """One billed piece of a run: a training job (from its bill) or, for a run under way, an attempt."""

    name: str
    instance_type: str
    count: int
    billable_seconds: int
    region: str
    training_plan: bool = False


@dataclass(frozen=True, slots=True)
class _Costs:
    total: float | None
    by_region: dict[str, float | None]
    unknown: str | None
    on_demand: float | None
    savings: float | None
    on_demand_type: str | None = None  # the baseline's type (None: no baseline)


def _costs(
    bill: RunBill | None,
    job: JobSummary | None,
    attempts: Sequence[AttemptRecord],
    baseline: int | None,
    *,
    region: str,
) -> _Costs:
    """Each part at the type, count and region it was billed for (a job with alternatives may run on
    several types, a run on several regions); a job on a training plan costs nothing of its own (the
    plan was paid up front). A part without a price leaves the total unknown, never its region's
    price taken from another: its region shows None in `by_region`, the known regions their cost,
    and `unknown` names it. The baseline is the job on its primary type and count (its work there
    as the manifest declares it: RunBill.on_demand_seconds), on-demand in the stack's region,
    wherever the run ended; the saving compares costs, unknown when a part is."""
    parts = _parts(bill, job, attempts, region)
    by_region: dict[str, float | None] = {}
    unpriced: dict[tuple[str, str], list[str]] = {}
    for part in parts:
        price = (
            0.0
            if part.training_plan
            else cost_usd(part.instance_type, part.count, part.billable_seconds, region=part.region)
        )
        if price is None:
            unpriced.setdefault((part.instance_type, part.region), []).append(part.name)
        known = by_region.get(part.region, 0.0)
        by_region[part.region] = None if known is None or price is None else round(known + price, 4)
    for copy in (a.checkpoint_copy for a in attempts if a.checkpoint_copy):
        # AWS: Data Exports user guide, "Understanding data transfer charges": "There's no charge for the
        # data transferred into the destination Region. The data transfer charge is determined by the data
        # transferred out from the source Region." A copy's transfer is its source region's part.
        source = copy.source_region
        usd = transfer_usd(copy.bytes, source, copy.target_region)
        known = by_region.get(source, 0.0)
        by_region[source] = None if known is None else round(known + usd, 4)
    total = None if unpriced else round(sum(c or 0.0 for c in by_region.values()), 4)
    unknown = (
        "; ".join(
            f"no price for {kind or 'an unknown instance type'} in {where}: training job(s) {', '.join(names)}"
            for (kind, where), names in unpriced.items()
        )
        or None
    )
    last = bill.jobs[-1] if bill is not None and bill.jobs else None
    kind, count = (
        (job.instance_type, job.instance_count)
        if job
        else (last.instance_type, last.instance_count)
        if last is not None and last.instance_type
        else ("", 0)
    )
    on_demand = cost_usd(kind, count, baseline, region=region) if baseline else None
    baseline_type = kind if baseline else None
    if bill is None or any(part.training_plan for part in parts):  # under way, or a plan's fee paid up front
        return _Costs(total, by_region, unknown, on_demand, None, baseline_type)
    if {(p.instance_type, p.count, p.region) for p in parts if p.billable_seconds} <= {(kind, count, region)}:
        # Every part at the baseline's rate: billed time against the baseline's, priced or not.
        return _Costs(total, by_region, unknown, on_demand, bill.savings_percent, baseline_type)
    saving = round(100 * (1 - total / on_demand), 2) if total is not None and on_demand else None
    return _Costs(total, by_region, unknown, on_demand, saving, baseline_type)


def _parts(bill: RunBill | None, job: JobSummary | None, attempts: Sequence[AttemptRecord], region: str) -> list[_Part]:
    """The run's billed parts: each training job from its bill when the bills were read and name
    their types; else (a run under way) each attempt's last status check, at the manifest's type."""
    if bill is not None and bill.jobs and all(j.instance_type for j in bill.jobs):
        return [
            _Part(j.name, j.instance_type, j.instance_count, j.billable_seconds, j.region or region, j.training_plan)
            for j in bill.jobs
        ]
    instance, count = (job.instance_type, job.instance_count) if job else ("", 0)
    if bill is not None and bill.jobs:  # bills without a type: priced as the manifest's, each in its region
        return [_Part(j.name, instance, count, j.billable_seconds, j.region or region) for j in bill.jobs]
    return [
        _Part(
            a.training_job_name or f"of attempt {a.attempt}",
            instance,
            count,
            int(a.final_status.billable_seconds or 0),
            a.region or region,
        )
        for a in attempts
        if a.final_status
    ] or [_Part("", instance, count, 0, region)]


def checkpoint_copies(attempts: Sequence[AttemptRecord]) -> dict[str, Any] | None:
    """The run's checkpoint copies between regions, from its attempts' `checkpointCopy`: how many,
    their bytes, their measured seconds and their transfer price; None without any."""
    copies = [a.checkpoint_copy for a in attempts if a.checkpoint_copy]
    if not copies:
        return None
    return {
        "count": len(copies),
        "bytes": sum(c.bytes for c in copies),
        "seconds": round(sum(c.seconds for c in copies), 3),
        "usd": round(sum(transfer_usd(c.bytes, c.source_region, c.target_region) for c in copies), 4),
    }


def switched_to_on_demand(state: Mapping[str, Any]) -> bool:
    """StopSpotJob stopped the spot job for an on-demand attempt (`$.fallback`; one that moved the
    job to another instance type on spot says `capacity: spot`)."""
    return _to_on_demand(Fallback.in_state(state))


def _to_on_demand(fallback: Fallback | None) -> bool:
    return fallback is not None and fallback.capacity == "on-demand"


def resource_problems(run: RunSections) -> list[Problem]:
    """Every reason the run could not be submitted: ValidateResources' problems, then another
    run of the same job still live (CheckNoLiveJob, `$.liveRuns`)."""
    return [
        *(run.resources.problems if run.resources else ()),
        *(run.live_runs.problems if run.live_runs else ()),
    ]


def cleanup_report(run: RunSections) -> str:
    """What StopTrainingJobAfterError did about this run's training jobs, for the cause of
    UnexpectedError (empty when the error came before anything could have been submitted)."""
    failed = run.cleanup_failure
    if failed:
        return (
            f"Spotline could not stop this run's training job ({failed.error}): the clean-up at the "
            "execution's end, then the reconciler (every 15 minutes), try again; check it with "
            "aws batch list-service-jobs --filters name=JOB_NAME,values=<execution name>*"
        )
    if run.cleanup is None:
        return ""
    if not run.cleanup.stopped:
        return "No training job of this run was still queued or running."
    jobs = ", ".join(
        f"{j.training_job_name or j.job_name} (Batch job {j.job_id}, was {j.status})" for j in run.cleanup.stopped
    )
    return f"Spotline stopped this run's training job: {jobs}."


def without_bills(numbers: Figures, reason: str) -> Figures:
    """The figures of a run whose bills could not be read: what it cost is unknown, not the last
    status check's figure (a job may have trained since) and never $0.00."""
    return replace(
        numbers,
        cost_usd=None,
        cost_by_region=dict.fromkeys(numbers.cost_by_region),
        on_demand_cost_usd=None,
        on_demand_instance_type=None,
        savings_percent=None,
        cost_unknown=reason,
    )


def unknown_until_billed(numbers: Figures, bill: RunBill | None) -> Figures:
    """The figures of an ended run that recorded no outcome (stopped, timed out, or failed before
    RecordOutcome), read while one of its training jobs has not ended: its cost is unknown, not
    $0.00. SageMaker bills "for the time interval between the value of TrainingStartTime and"
    TrainingEndTime (DescribeTrainingJob), set when the job ends: a job still training or stopping
    has no bill yet, only a growing one."""
    if bill is None or bill.settled:
        return numbers
    live = ", ".join(job.name for job in bill.jobs if not job.ended)
    return without_bills(
        numbers, f"training job(s) {live} had not ended yet: SageMaker bills a training job once it has ended"
    )


def decide(
    state: Mapping[str, Any] | RunSections, now: datetime, *, region: str, bill: RunBill | None = None
) -> Outcome:
    """The outcome and its figures; `region` is the stack's (its prices: spotline.core.spec.catalog),
    `bill` the run's training jobs read after they ended (`spotline.aws.billing.billing`)."""
    run = state if isinstance(state, RunSections) else RunSections.of(state)
    job, status = run.job, run.status
    completed = status is not None and status.state == "completed"
    ended = status.ended_at if status else None
    finished_at = (datetime.fromisoformat(ended) if ended else now) if completed else None
    numbers = figures(job, run.attempts, finished_at, region=region, bill=bill, switched=_to_on_demand(run.fallback))
    if run.dependency_timeout:
        missing = ", ".join(run.dependencies.missing if run.dependencies else ()) or "the datasets"
        waited = job.dependency_timeout_seconds if job else 0
        cause = f"still waiting for {missing} after {format_duration(waited)} (spec.dependencyTimeout)"
        return Outcome(DEPENDENCY_TIMEOUT, False, cause, NEXT_STEPS[DEPENDENCY_TIMEOUT], numbers)
    if run.failure:
        cause = f"{run.failure.error}: {(run.failure.cause or '')[:900]}"
        cleanup = cleanup_report(run)
        return Outcome(
            UNEXPECTED_ERROR, False, f"{cause} {cleanup}" if cleanup else cause, NEXT_STEPS[UNEXPECTED_ERROR], numbers
        )
    refusals: list[ResourceCheck | LiveRunCheck] = [
        *([run.resources] if run.resources and not run.resources.valid else []),
        *([run.live_runs] if run.live_runs and not run.live_runs.clear else []),
    ]
    if refusals:
        # Both refused: every problem at once, as each step reports its own.
        cause = refusals[0].summary if len(refusals) == 1 else summarize([p.error() for p in resource_problems(run)])
        return Outcome(RESOURCE_VALIDATION_FAILED, False, cause, NEXT_STEPS[RESOURCE_VALIDATION_FAILED], numbers)
    if completed and numbers.deadline_met is False:
        cause = f"training completed at {numbers.finished_at}, after the deadline {numbers.deadline}"
        return Outcome(DEADLINE_MISSED, False, cause, NEXT_STEPS[DEADLINE_MISSED], numbers)
    if completed:
        return Outcome(
            SUCCEEDED,
            True,
            "training completed" + (" before the deadline" if numbers.deadline_met else ""),
            "",
            numbers,
        )
    finish_reason = status.finish_reason if status else None
    if status and finish_reason == "capacity-unavailable":
        return Outcome(CAPACITY_UNAVAILABLE, False, status.explanation, NEXT_STEPS[CAPACITY_UNAVAILABLE], numbers)
    if status and finish_reason == "spot-exhausted":
        return Outcome(SPOT_CAPACITY_EXHAUSTED, False, status.explanation, NEXT_STEPS[SPOT_CAPACITY_EXHAUSTED], numbers)
    reason_class = (status.reason_class if status else None) or "unknown"
    cause = (
        f"{(status.training_job_name if status else None) or 'the training job'} failed ({reason_class}): "
        f"{(status.reason if status else None) or 'no reason given'}"
    )
    return Outcome(TRAINING_FAILED, False, cause, NEXT_STEPS[TRAINING_FAILED], numbers)
