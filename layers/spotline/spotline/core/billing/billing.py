"""What a run was billed, read from its SageMaker training jobs once they have ended (pure).

SageMaker fills `TrainingTimeInSeconds` and `BillableTimeInSeconds` only when a job has ended
(DescribeTrainingJob: "You are billed for the time interval between the value of
TrainingStartTime and this time"; BillableTimeInSeconds: "The billable time in seconds", set at
the end). A spot job that Spotline stops for its on-demand attempt is billed too: its figures
are read after it has ended, never from the last status check before the stop. Every figure
Spotline reports (cost, billed time, lost work, the on-demand baseline, the saving) comes from
these bills, so the report, the metrics, `runs`, `status`, `explain` and the sandbox say one
thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

ENDED = frozenset({"Completed", "Failed", "Stopped"})
BILLED = frozenset({"Downloading", "Training", "Uploading"})
"""SageMaker bills from TrainingStartTime (instances acquired): the download, the training and
the upload; waiting for instances (Starting) and a spot restart (Interrupted) are not billed."""
RESTARTS = frozenset({"Interrupted", "Restarting"})


@dataclass(frozen=True, slots=True)
class JobBill:
    """One SageMaker training job's bill and how its billed time was spent."""

    name: str
    ended: bool
    completed: bool
    training_seconds: int
    """TrainingTimeInSeconds once ended; the billed statuses so far before."""
    billable_seconds: int
    """BillableTimeInSeconds; 0 until the job has ended (SageMaker sets it then)."""
    in_training_seconds: int
    """Time in the Training status: the work the job did, kept or lost."""
    last_stretch_seconds: int
    """Training since the job's last spot restart: all a job without checkpoints keeps."""
    download_seconds: int
    """Its first start's billed download (Downloading), before any training."""
    upload_seconds: int
    interruptions: int = 0
    """Spot interruptions inside the job (Training -> Interrupted -> Starting)."""
    instance_type: str = ""
    """The type it was billed for: ResourceConfig.SelectedInstanceType with InstancePreferences ("The
    job is billed for this instance type and count"), else InstanceType."""
    instance_count: int = 0
    region: str = ""
    """Where it ran ("": the stack's region), for its price."""
    training_plan: bool = False
    """It ran on a training plan's reserved capacity (ResourceConfig.TrainingPlanArn): paid up front
    with the plan, so no cost of its own; its hours are shown apart."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobBill:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def bill_of(training_job: Mapping[str, Any], now: datetime) -> JobBill:
    """The bill of one DescribeTrainingJob answer as of `now`."""
    ended = training_job.get("TrainingJobStatus") in ENDED
    spent = _seconds_by_status(training_job.get("SecondaryStatusTransitions") or [], now)
    so_far = sum(seconds for status, seconds in spent if status in BILLED)
    training = training_job.get("TrainingTimeInSeconds")
    billable = training_job.get("BillableTimeInSeconds")
    last_stretch = 0.0
    for status, seconds in spent:
        if status in RESTARTS:
            last_stretch = 0.0
        elif status == "Training":
            last_stretch += seconds
    downloads = [seconds for status, seconds in spent if status == "Downloading"]
    resources = training_job.get("ResourceConfig") or {}
    return JobBill(
        name=str(training_job.get("TrainingJobName") or ""),
        ended=ended,
        completed=training_job.get("TrainingJobStatus") == "Completed",
        training_seconds=int(training) if ended and training is not None else round(so_far),
        billable_seconds=int(billable) if ended and billable is not None else 0,
        in_training_seconds=round(sum(seconds for status, seconds in spent if status == "Training")),
        last_stretch_seconds=round(last_stretch),
        download_seconds=round(downloads[0]) if downloads else 0,
        upload_seconds=round(sum(seconds for status, seconds in spent if status == "Uploading")),
        interruptions=sum(1 for status, _ in spent if status == "Interrupted"),
        instance_type=str(resources.get("SelectedInstanceType") or resources.get("InstanceType") or ""),
        instance_count=int(resources.get("SelectedInstanceCount") or resources.get("InstanceCount") or 0),
        training_plan=bool(resources.get("TrainingPlanArn")),
    )


def kept_by_type_of(progress: Mapping[str, Any] | None) -> dict[str, float] | None:
    """progress.json's `byInstanceType` as {type: seconds kept there}; None when it has none (an
    older helper, or one outside SageMaker: no $SM_CURRENT_INSTANCE_TYPE) or it is malformed."""
    by_type = (progress or {}).get("byInstanceType")
    if not isinstance(by_type, Mapping):
        return None
    kept = {}
    for name, entry in by_type.items():
        seconds = entry.get("seconds") if isinstance(entry, Mapping) else None
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            return None
        kept[str(name)] = float(seconds)
    return kept


def _seconds_by_status(transitions: list[dict[str, Any]], now: datetime) -> list[tuple[str, float]]:
    """(SecondaryStatus, seconds spent in it) for each transition, in order."""
    spent = []
    for transition in transitions:
        start = transition.get("StartTime")
        if not isinstance(start, datetime):
            continue
        end = transition.get("EndTime")
        spent.append((str(transition.get("Status")), max(0.0, ((end or now) - start).total_seconds())))
    return spent


@dataclass(frozen=True, slots=True)
class RunBill:
    """Every training job of a run, oldest first, with the work its checkpoints kept."""

    jobs: tuple[JobBill, ...]
    checkpointed: bool
    kept_work_seconds: float | None = None
    """progress.json's `trainingSeconds` at the end (the work the checkpoints hold), if any."""
    kept_by_type: Mapping[str, float] | None = None
    """progress.json's `byInstanceType` seconds at the end: the work kept on each type, in that
    type's own time (a type 0.8 as fast takes 1.25 s for a second of the primary's work)."""
    speeds: Mapping[str, float] | None = None
    """Each type the manifest may run on and its declared speed relative to its primary type
    (spec.resources.instanceType, 1.0; an alternative's `speed`): the on-demand baseline is the
    job on the primary. None when the manifest's types are not known (its spec could not be read):
    every type then counts as the primary's speed."""

    @property
    def settled(self) -> bool:
        """Every job has ended, so every billed figure is SageMaker's final one."""
        return all(job.ended for job in self.jobs)

    @property
    def completed(self) -> bool:
        return bool(self.jobs) and self.jobs[-1].completed

    @property
    def training_seconds(self) -> int:
        return sum(job.training_seconds for job in self.jobs)

    @property
    def billable_seconds(self) -> int:
        return sum(job.billable_seconds for job in self.jobs)

    @property
    def training_plan_seconds(self) -> int:
        """Billed time on training plans' reserved capacity (prepaid: not in the run's cost)."""
        return sum(job.billable_seconds for job in self.jobs if job.training_plan)

    @property
    def interruptions(self) -> int:
        return sum(job.interruptions for job in self.jobs)

    @property
    def work_kept_seconds(self) -> int | None:
        """The work the run holds at its end: what its checkpoints measured, or, without
        checkpoints, the completing job's training since its last restart (else nothing). None
        when checkpoints hold work they do not measure (a helper without `trainingSeconds`)."""
        if self.checkpointed:
            return round(self.kept_work_seconds) if self.kept_work_seconds is not None else None
        return self.jobs[-1].last_stretch_seconds if self.completed else 0

    @property
    def lost_work_seconds(self) -> int | None:
        """Training done and not kept: back to the last checkpoint at each interruption,
        preemption or stop, and all of it for a job without checkpoints that did not finish. A run
        on several types counts each type's training against the work kept there, both in that
        type's seconds (the total kept is in no single type's seconds)."""
        if self.checkpointed and self.kept_by_type is not None:
            trained: dict[str, int] = {}
            for job in self.jobs:
                trained[job.instance_type] = trained.get(job.instance_type, 0) + job.in_training_seconds
            return sum(max(0, round(seconds - self.kept_by_type.get(kind, 0.0))) for kind, seconds in trained.items())
        kept = self.work_kept_seconds
        return None if kept is None else max(0, sum(job.in_training_seconds for job in self.jobs) - kept)

    @property
    def primary_work_seconds(self) -> int | None:
        """The work the run kept, in its primary type's seconds as the manifest declares them: the
        work kept on each type times that type's declared speed (8 h kept on a type declared 0.8 as
        fast is 6h24m of the primary's). None when it is not measured, or when the run trained on
        several types and its checkpoints do not say how much on each (an older helper)."""
        kept = self.work_kept_seconds
        if kept is None:
            return None
        speeds = self.speeds or {}
        if self.checkpointed:
            trained = {job.instance_type for job in self.jobs if job.in_training_seconds}
        else:  # without checkpoints, all a run keeps is its last job's training
            trained = {self.jobs[-1].instance_type} if self.jobs else set()
        if len(trained) <= 1:  # one type: all its work is there
            return round(kept * speeds.get(next(iter(trained), ""), 1.0))
        if not self.kept_by_type:
            return None
        return round(sum(seconds * speeds.get(kind, 1.0) for kind, seconds in self.kept_by_type.items()))

    @property
    def on_demand_seconds(self) -> int | None:
        """What the whole job would have billed on-demand from the start on its primary type: its
        work there (`primary_work_seconds`), one start's download and the final upload. None for a
        run that did not finish (no job to compare), or whose work was not measured."""
        work = self.primary_work_seconds
        if not self.completed or work is None:
            return None
        # One start's download: the first job that acquired instances (an earlier one may have been
        # stopped while it waited for capacity, and downloaded nothing).
        download = next((job.download_seconds for job in self.jobs if job.download_seconds), 0)
        return work + download + self.jobs[-1].upload_seconds

    @property
    def savings_percent(self) -> float | None:
        """The one saving Spotline reports: billed time against the on-demand baseline (the ratio
        of the costs for a run billed all on its primary type). None for a run that did not finish."""
        baseline = self.on_demand_seconds
        if not baseline:
            return None
        return round(100 * (1 - self.billable_seconds / baseline), 2)
