"""What one check of a training attempt knows, as records (pure): what AWS said (`Observation`),
the run's attempts so far (`History`) and the queue settings a decision needs (`QueueLimits`);
and progress.json's content in figures (`progress_figures`).

CheckTrainingStatus gathers them from Batch, SageMaker, S3 and DynamoDB (`spotline.aws.capacity.checking`);
`spotline simulate` builds them from a trace. Both hand them to `spotline.core.capacity.assess.assess`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from spotline.core.capacity.policy import measured_work_seconds, training_since_checkpoint
from spotline.core.capacity.speeds import measured_throughputs, primary_throughput, type_speeds
from spotline.core.capacity.training_plans import PlanView
from spotline.core.regions.regions import RegionRecord, Sighting, latest_sightings, region_records
from spotline.core.spec.model import JobSpec
from spotline.core.state import ExcludedRegion
from spotline.core.training.status import TrainingStatus
from spotline.core.training.training_request import Capacity


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of the run: the current one (`$.training`) or an ended one (its previousAttempts)."""

    capacity: Capacity
    instance_type: str | None = None
    submitted_at: datetime | None = None
    queue_wait_seconds: float | None = None
    """An ended attempt's wait for instances (its finalStatus.queueWaitSeconds)."""
    training_seconds: int = 0
    """An ended attempt's training seconds (its finalStatus.trainingSeconds)."""
    plan_usable_until: datetime | None = None
    """A training-plan attempt: when its plan begins terminating its instances."""
    region: str | None = None
    """Where it ran (None: the home region)."""
    zone: str | None = None
    """The one zone it ran in (a job of many instances)."""


@dataclass(frozen=True, slots=True)
class History:
    """The run so far, as the execution state keeps it."""

    current: Attempt
    previous: tuple[Attempt, ...] = ()
    checks: int = 0
    """Checks of the run made before this one."""
    at_risk: Mapping[str, Any] | None = None
    """The DeadlineAtRisk notice already sent (once per run)."""
    seed: str = ""
    """The backoff jitter's seed (the execution and the attempt)."""


@dataclass(frozen=True, slots=True)
class FleetRecord:
    """The fleet's record of spot capacity in the run's regions, for one instance type."""

    latest: Mapping[str, Sighting]
    """The latest fresh sighting per region (`latest_sightings`)."""
    records: Mapping[str, RegionRecord]
    """Each region's record over the last day (`region_records`)."""

    @classmethod
    def of(cls, sightings: Iterable[Sighting], now: datetime) -> FleetRecord:
        seen = list(sightings)
        return cls(latest_sightings(seen, now), region_records(seen, now))


@dataclass(frozen=True, slots=True)
class Observation:
    """What AWS said at one check. `fleet` and `plans` are read only when the decision needs them:
    None means not read (`Assessment.needs` says when they are wanted)."""

    status: TrainingStatus
    """The attempt's normalized status (`spotline.core.training.status.normalize`)."""
    region: str
    """Where the attempt runs."""
    priority: int | None = None
    """The Batch job's schedulingPriority (None: the manifest's)."""
    queue_wait_now_seconds: float = 0.0
    """The wait a new attempt would meet in the queue now (`spotline.core.capacity.queue.queue_wait_now`)."""
    progress: Mapping[str, Any] | None = None
    """progress.json's content (`spotline.aws.state.progress.read_progress`); None: none yet."""
    copy_seconds: float = 0.0
    """The longest checkpoint copy to another of the run's regions: what a spot attempt's restart
    counts, and a return to spot from on-demand leaves room for."""
    checkpoint_bytes: int = 0
    checkpoint_region: str | None = None
    """Where the latest checkpoint is (None: `region`)."""
    regions: tuple[str, ...] = ()
    """The regions the run may use, home first."""
    excluded: tuple[ExcludedRegion, ...] = field(default_factory=tuple)
    """The regions ValidateResources left out (`$.resources.regions.excluded`)."""
    fleet: FleetRecord | None = None
    zone: str | None = None
    """The one zone the attempt runs in (a job of many instances at home: `$.training.zone`)."""
    zones: tuple[str, ...] = ()
    """The zones its attempts may take, in the stack's order (`$.resources.zones`)."""
    plans: tuple[PlanView, ...] | None = None
    """The team's candidate training plans (`spotline.aws.capacity.training_plans.candidate_plans`)."""


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """The queue settings a decision reads: the team's highest schedulingPriority (None: no raise)."""

    max_priority: int | None = None


def _checkpointed_at(saved: Any) -> datetime | None:
    """progress.json's updatedAt (when the training code wrote the last checkpoint); None if unreadable."""
    try:
        at = datetime.fromisoformat(str(saved["updatedAt"]))
    except (KeyError, ValueError):
        return None
    return at if at.tzinfo else None


def progress_figures(
    spec: JobSpec, status: TrainingStatus, saved: Any, previous: tuple[Attempt, ...], now: datetime | None = None
) -> dict[str, Any]:
    """The attempt's progress from progress.json's content (`saved`), else from training time. With
    `now`, a job training since its last checkpoint also gets `estimatedFraction`: the checkpointed
    fraction plus the seconds trained since (`training_since_checkpoint`) at the measured pace on its type."""
    if saved:
        fraction = min(1.0, saved["step"] / saved["totalSteps"])
        measured = measured_work_seconds(fraction, saved.get("trainingSeconds"))
        by_type = saved.get("byInstanceType") if isinstance(saved.get("byInstanceType"), dict) else None
        if spec.alternatives and (throughput := primary_throughput(spec, measured_throughputs(by_type))):
            measured = saved["totalSteps"] / throughput  # in seconds on the primary type
        speeds = [s.to_dict() for s in type_speeds(spec, by_type)] if spec.alternatives else None
        since = 0.0
        if now is not None and status.state == "training" and status.secondary_status == "Training":
            interval = spec.checkpoint_interval_minutes * 60.0
            since = training_since_checkpoint(now, _checkpointed_at(saved), status.state_since, interval)
        work = measured or spec.expected_duration_seconds or spec.max_runtime_seconds  # on the primary type
        speed = next((float(s["speed"]) for s in speeds or [] if s["instanceType"] == status.instance_type), 1.0)
        return {
            "fraction": fraction,
            "step": saved["step"],
            "totalSteps": saved["totalSteps"],
            "source": "progress.json",
            "trainingSeconds": saved.get("trainingSeconds"),
            "estimatedWorkSeconds": round(measured) if measured is not None else None,
            "speeds": speeds,
            "trainingSinceCheckpointSeconds": int(since),
            "estimatedFraction": min(1.0, fraction + since * speed / work) if work else fraction,
        }
    total = spec.expected_duration_seconds or spec.max_runtime_seconds
    # Without checkpoints, earlier attempts' work is lost: Spotline's and Batch's own retries alike.
    trained = status.attempt_training_seconds
    if spec.checkpoint_s3_uri:
        trained = status.training_seconds
        trained += sum(a.training_seconds for a in previous)
    return {
        "fraction": min(1.0, trained / total) if total else 0.0,
        "step": None,
        "totalSteps": None,
        "source": "training time (no progress.json yet)",
        "trainingSeconds": None,
        "estimatedWorkSeconds": None,
        "speeds": [s.to_dict() for s in type_speeds(spec, None)] if spec.alternatives else None,
        "trainingSinceCheckpointSeconds": None,
        "estimatedFraction": None,
    }
