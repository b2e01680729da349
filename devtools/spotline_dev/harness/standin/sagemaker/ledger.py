"""The stand-in's own ledger: what it billed for each SageMaker training job and what work each
one lost, kept from the stand-in's timelines, never from what Spotline reads through the API.

Tests reconcile every figure Spotline reports (cost, billed time, lost work, the on-demand
baseline: the job on its manifest's primary type, its work there as the manifest's declared
speeds say) with this ledger. Its rules are SageMaker's: a job is billed from TrainingStartTime to
its end, for the time spent Downloading, Training and Uploading ("You are billed for the time
interval between the value of TrainingStartTime and this time", DescribeTrainingJob
TrainingEndTime), managed spot at a discount shown as a shorter BillableTimeInSeconds; and the
work a job loses is the training since its last checkpoint whenever it stops without finishing
(a spot interruption, a stop, a preemption, a failure), as the checkpoint contract says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from spotline.core.billing.cost import cost_usd
from spotline_dev.harness.standin.base.clock import EPS
from spotline_dev.harness.standin.base.timeline import BILLED, DOWNLOAD_SECONDS, Plan

EXECUTION_TAG = "spotline:execution"


@dataclass(frozen=True)
class LedgerEntry:
    """One SageMaker training job as the stand-in billed it."""

    execution: str  # the run's (its service job's `spotline:execution` tag)
    service_job: str  # the Batch service job's name
    training_job: str
    capacity: str  # "spot" | "on-demand" | "training-plan"
    instance_type: str
    instance_count: int
    ended: bool
    completed: bool
    billed_seconds: int
    training_seconds: int
    lost_work_seconds: float
    work_seconds: float  # the whole job's work (the training code's duration)
    upload_seconds: float
    region: str = ""  # where it ran ("": the stack's region)
    created: float = 0.0  # when it was created (epoch seconds): the order across regions
    restored_step: int = 0  # the checkpoint step it started from (0: the beginning)
    total_steps: int = 0  # the job's steps (0: not known; its work then counts whole)


@dataclass(frozen=True)
class LedgerPart:
    """What a run was billed on one instance type in one region (each job at its own count)."""

    instance_counts: tuple[int, ...]
    billed_seconds: int  # per instance, as BillableTimeInSeconds (prepaid plan time included)
    training_seconds: int
    training_plan_seconds: int  # of billed_seconds, on a training plan: paid up front, not in cost_usd
    lost_work_seconds: float
    cost_usd: float | None  # None: no price for the type in that region


@dataclass(frozen=True)
class RunLedger:
    """A run's entries, oldest first, and its totals."""

    entries: tuple[LedgerEntry, ...]
    on_demand_start_delay: float

    @property
    def billed_seconds(self) -> int:
        return sum(e.billed_seconds for e in self.entries)

    @property
    def training_seconds(self) -> int:
        return sum(e.training_seconds for e in self.entries)

    @property
    def lost_work_seconds(self) -> float:
        return sum(e.lost_work_seconds for e in self.entries)

    @property
    def completed(self) -> bool:
        return bool(self.entries) and self.entries[-1].completed

    @property
    def training_plan_seconds(self) -> int:
        """Billed time on training plans: paid up front with the plan, not in the cost."""
        return sum(e.billed_seconds for e in self.entries if e.capacity == "training-plan")

    def cost_usd(self, region: str) -> float | None:
        """Each job's bill at its type's on-demand rate, added up (None: a type without a price; a job
        on a training plan adds nothing: the plan was paid up front)."""
        costs = [_entry_cost(e, region) for e in self.entries]
        return None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 4)

    def kept_work_by_type(self) -> dict[str, float]:
        """The work the run kept on each instance type, in that type's own seconds: each job's steps
        from the one it started at to the one the next job started from (the last job's: to the
        end), at its own pace (its work over its steps). Without step counts, the last job's work."""
        last = self.entries[-1]
        if any(not e.total_steps for e in self.entries):
            return {last.instance_type: last.work_seconds}
        kept: dict[str, float] = {}
        following = [e.restored_step for e in self.entries[1:]] + [last.total_steps]
        for entry, reached in zip(self.entries, following, strict=True):
            done = max(0, reached - entry.restored_step)
            kept[entry.instance_type] = (
                kept.get(entry.instance_type, 0.0) + done / entry.total_steps * entry.work_seconds
            )
        return kept

    def on_demand_seconds(self, speeds: Mapping[str, float] | None = None) -> float | None:
        """The job run once on-demand on its primary type: its work there as the manifest declares
        it (the work kept on each type times that type's declared speed `speeds`, relative to the
        primary; a type not in it at 1.0), an on-demand start's billed download and the upload.
        None when the run did not finish."""
        if not self.completed:
            return None
        last = self.entries[-1]
        work = sum(seconds * (speeds or {}).get(kind, 1.0) for kind, seconds in self.kept_work_by_type().items())
        download = min(DOWNLOAD_SECONDS, self.on_demand_start_delay / 2)
        return work + download + last.upload_seconds

    def parts(self, region: str) -> dict[tuple[str, str], LedgerPart]:
        """The run's bill per (instance type, region where it ran), in the order first billed: the
        figures that add up to the run's. `region` is the stack's (an entry without one ran there)."""
        grouped: dict[tuple[str, str], list[LedgerEntry]] = {}
        for entry in self.entries:
            grouped.setdefault((entry.instance_type, entry.region or region), []).append(entry)
        parts = {}
        for (instance_type, where), entries in grouped.items():
            costs = [_entry_cost(e, where) for e in entries]
            parts[(instance_type, where)] = LedgerPart(
                instance_counts=tuple(sorted({e.instance_count for e in entries})),
                billed_seconds=sum(e.billed_seconds for e in entries),
                training_seconds=sum(e.training_seconds for e in entries),
                training_plan_seconds=sum(e.billed_seconds for e in entries if e.capacity == "training-plan"),
                lost_work_seconds=sum(e.lost_work_seconds for e in entries),
                cost_usd=None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 4),
            )
        return parts

    def on_demand_cost_usd(self, region: str, primary: ManifestTypes | None = None) -> float | None:
        """The baseline's price on the manifest's primary type and count (`primary`; without it, the
        type the run ended on: a job of one type)."""
        baseline = self.on_demand_seconds(primary.speeds if primary else None)
        if baseline is None or not self.entries:
            return None
        last = self.entries[-1]
        kind, count = (
            (primary.instance_type, primary.instance_count) if primary else (last.instance_type, last.instance_count)
        )
        return cost_usd(kind, count, round(baseline), region=region)


@dataclass(frozen=True)
class ManifestTypes:
    """What a manifest says of its instance types: its primary (spec.resources.instanceType and
    instanceCount) and each type's declared speed relative to it (the primary's 1.0)."""

    instance_type: str
    instance_count: int
    speeds: Mapping[str, float]


def billed_seconds(plan: Plan, *, spot: bool, spot_price_ratio: float, until: float) -> tuple[int, int]:
    """(TrainingTimeInSeconds, BillableTimeInSeconds) of a job's timeline up to `until`: what
    DescribeTrainingJob reports once the job has ended, and what the ledger records."""
    training = round(plan.seconds_in(BILLED, min(until, plan.end)))
    return training, round(training * spot_price_ratio) if spot else training


def lost_work(plan: Plan, *, duration: float, total_steps: int) -> float:
    """The work a timeline lost: back to the last checkpoint at each spot interruption and each
    cluster repair, and at its end, if it did not complete, the training since its last checkpoint
    (or since it began, without checkpoints)."""
    lost = sum(amount for _, amount in plan.interruptions) + sum(amount for _, amount in plan.repairs)
    if plan.status == "Completed":
        return lost
    trainings = [i for i, s in enumerate(plan.segments) if s.status == "Training"]
    if not trainings:
        return lost
    last = trainings[-1]
    if any(s.status in ("Interrupted", "Pending", "Restarting") for s in plan.segments[last + 1 :]):
        return lost  # it ended while restarting (or pending after its plan's end): that counted what was lost
    segment = plan.segments[last]
    stop = plan.segments[last + 1].start if last + 1 < len(plan.segments) else plan.end
    reached = segment.progress + max(0.0, stop - segment.start)
    saved = max(
        [segment.progress] + [step / total_steps * duration for t, step in plan.checkpoints if t >= segment.start - EPS]
    )
    return lost + max(0.0, reached - saved)


def runs_of(
    entries: Iterable[LedgerEntry], on_demand_start_delay: float, *, by_service_job: bool = False
) -> dict[str, RunLedger]:
    """The ledger per run (execution tag), or per service job, each run's entries oldest first."""
    runs: dict[str, list[LedgerEntry]] = {}
    for entry in entries:
        runs.setdefault(entry.service_job if by_service_job else entry.execution, []).append(entry)
    return {name: RunLedger(tuple(items), on_demand_start_delay) for name, items in runs.items()}


def _entry_cost(entry: LedgerEntry, region: str) -> float | None:
    """A job's bill at its type's on-demand rate; nothing for one on a training plan (paid up front)."""
    if entry.capacity == "training-plan":
        return 0.0
    return cost_usd(entry.instance_type, entry.instance_count, entry.billed_seconds, region=entry.region or region)
