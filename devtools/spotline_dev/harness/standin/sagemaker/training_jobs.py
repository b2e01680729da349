"""The SageMaker training jobs Batch starts (one per attempt): CreateTrainingJob's checks, the
timeline each job follows, DescribeTrainingJob and StopTrainingJob, the checkpoint progress the
training code writes, and the views the stand-in reports."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from spotline_dev.harness.standin.base.clock import EPS, ObservedTime, dt, rfc3339
from spotline_dev.harness.standin.base.http_answers import ApiError, shape
from spotline_dev.harness.standin.base.records import ServiceJob, TrainingJob
from spotline_dev.harness.standin.base.spot_weather import SpotWeather, TrainingBehaviour, capacity_from, merged_gaps
from spotline_dev.harness.standin.base.timeline import BILLED, Plan, cut, plan_training
from spotline_dev.harness.standin.base.training_plans import TrainingPlans
from spotline_dev.harness.standin.sagemaker.ledger import EXECUTION_TAG, LedgerEntry, billed_seconds, lost_work
from spotline_dev.harness.standin.sagemaker.sharded import marker_body, marker_name, world_size
from spotline_dev.harness.standin.sagemaker.training_requests import DEFAULT_MAX_RUNTIME_S, validated_payload

CHECKPOINT_INTERVAL_ENV = "SPOTLINE_CHECKPOINT_INTERVAL_MINUTES"
FIRST_CHECKPOINT_ENV = "SPOTLINE_FIRST_CHECKPOINT_MINUTES"
DEFAULT_CHECKPOINT_INTERVAL_S = 15 * 60


class CheckpointStore(Protocol):
    """Where progress.json lives (the local stack backs it with moto S3)."""

    def read(self, s3_uri: str) -> dict[str, Any] | None: ...

    def write(self, s3_uri: str, progress: dict[str, Any]) -> None: ...

    def put(self, s3_uri: str, name: str, body: bytes, at: datetime) -> None: ...


class InMemoryCheckpointStore:
    """Dict-backed CheckpointStore that also keeps every write, for assertions."""

    def __init__(self) -> None:
        self.files: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, dict[str, Any]]] = []
        self.objects: dict[str, bytes] = {}

    def read(self, s3_uri: str) -> dict[str, Any] | None:
        return self.files.get(s3_uri)

    def write(self, s3_uri: str, progress: dict[str, Any]) -> None:
        self.files[s3_uri] = dict(progress)
        self.writes.append((s3_uri, dict(progress)))

    def put(self, s3_uri: str, name: str, body: bytes, at: datetime) -> None:
        self.objects[f"{s3_uri.rstrip('/')}/{name}"] = body


@dataclass(frozen=True)
class TrainingJobView:
    """One SageMaker training job (one Batch attempt), as of the stand-in's last advance."""

    name: str
    arn: str
    capacity: str  # "spot" | "on-demand"
    created_at: datetime
    status: str  # TrainingJobStatus
    secondary_status: str
    ended_at: datetime | None
    failure_reason: str | None
    training_seconds: float  # Downloading + Training + Uploading so far
    billable_seconds: float
    interrupted_at: tuple[datetime, ...]
    lost_work_seconds: float
    restored_from_step: int | None
    instance_type: str = ""  # the type it runs on (SelectedInstanceType with InstancePreferences)
    instance_count: int = 1
    repaired_at: tuple[datetime, ...] = ()  # cluster repairs after a GPU failure (not spot interruptions)

    @property
    def interruptions(self) -> int:
        return len(self.interrupted_at)


class SageMakerTrainingJobs:
    """Every training job the stand-in created, keyed by lower-case name, on the shared clock."""

    def __init__(
        self,
        clock: ObservedTime,
        weather: SpotWeather,
        behaviour: Callable[[dict[str, Any]], TrainingBehaviour],
        store: CheckpointStore,
        *,
        account: str,
        region: str,
        advance: Callable[[], float],
    ) -> None:
        self.clock, self.weather, self.behaviour, self.store = clock, weather, behaviour, store
        self.account, self.region = account, region
        self._advance = advance  # replays every event (of both services) up to clock()
        self.jobs: dict[str, TrainingJob] = {}
        self.complete: dict[str, dict[str, Any]] = {}  # per checkpoint prefix: progress of its newest complete step
        self._failures: deque[str] = deque()
        self.plans = TrainingPlans(
            weather.training_plans, account=account, region=region, now=lambda: clock.now, in_use=self._in_use_on
        )

    def fail_next_attempt(self, reason: str) -> None:
        self._failures.append(reason)

    def write_checkpoint(self, job: TrainingJob) -> None:
        t, step = job.plan.checkpoints[job.written]
        job.written += 1
        if job.key is not None:
            total = job.behaviour.total_steps
            # As the helper records it (spotline.training.checkpoint), its per-type figures under
            # SM_CURRENT_INSTANCE_TYPE, the type SageMaker runs the job on.
            by_type = {name: dict(entry) for name, entry in job.by_type_before.items()}
            here = by_type.setdefault(job.selected[0], {"steps": 0, "seconds": 0.0})
            done = step - (job.restored_from_step or 0)
            here["steps"] = int(here["steps"]) + done
            here["seconds"] = round(float(here["seconds"]) + done / total * job.behaviour.duration, 1)
            progress = {
                "step": step,
                "totalSteps": total,
                "updatedAt": rfc3339(t),
                "trainingSeconds": round(step / total * job.behaviour.duration, 1),
                "byInstanceType": by_type,
            }
            if job.world is not None:
                self._put_markers(job, step, range(job.world), t)
                progress["shards"], progress["reshardable"] = job.world, False
                self.complete[job.key] = progress
            self.store.write(job.key, progress)

    def write_torn_step(self, job: TrainingJob) -> None:
        """A spot interruption of a distributed job (`sharded`): every rank saved the step it had
        reached and rank 0 wrote progress.json, but the reclaimed (last) instance's shards never
        reached S3. The training code's next restore takes the newest complete step."""
        t, lost = job.plan.interruptions[job.torn]
        job.torn += 1
        if job.key is None or job.world is None:
            return
        total = job.behaviour.total_steps
        saved = max((step for at, step in job.plan.checkpoints if at <= t + EPS), default=job.restored_from_step or 0)
        step = min(total - 1, saved + math.floor(lost / job.behaviour.duration * total))
        if step <= saved:
            return  # no whole step since the last save: the SIGTERM save writes nothing new
        per_host = job.world // job.selected[1]
        self._put_markers(job, step, range(job.world - per_host), t)
        torn = {
            **(self.complete.get(job.key) or {}),
            "step": step,
            "totalSteps": total,
            "updatedAt": rfc3339(t),
            "trainingSeconds": round(step / total * job.behaviour.duration, 1),
            "shards": job.world,
            "reshardable": False,
        }
        self.store.write(job.key, torn)

    def _put_markers(self, job: TrainingJob, step: int, ranks: Iterable[int], t: float) -> None:
        assert job.key is not None and job.world is not None
        for rank in ranks:
            body = marker_body(step, rank, job.world, job.name)
            self.store.put(job.key, marker_name(step, rank, job.world), body, dt(t))

    def training_arn(self, name: str) -> str:
        return f"arn:aws:sagemaker:{self.region}:{self.account}:training-job/{name.lower()}"

    def validated_payload(self, payload: str) -> dict[str, Any]:
        """What SageMaker's CreateTrainingJob would reject (training_requests)."""
        return validated_payload(payload, self.plans, self.clock.now)

    def create_training(self, request: dict[str, Any], created: float, sjob: ServiceJob) -> TrainingJob:
        name = request["TrainingJobName"]
        key = (request.get("CheckpointConfig") or {}).get("S3Uri")
        spot = bool(request.get("EnableManagedSpotTraining"))
        resources = request.get("ResourceConfig") or {}
        selected = self._selected(resources, created, spot)
        subnets = [str(s) for s in (request.get("VpcConfig") or {}).get("Subnets") or []]
        weather, zone = self.weather.for_job(selected[0], subnets, created, spot)
        # Its speed on the type it runs on: the same steps, in that type's time.
        behaviour = self.behaviour(request).at_speed(weather.speed)
        restored_step, restored = None, 0.0
        progress = self.store.read(key) if key else None
        if key in self.complete and progress and "shards" in progress:
            progress = self.complete[key]  # the helper restores the newest step whose shards are all there
        if progress and int(progress.get("totalSteps") or 0) > 0:
            restored_step = int(progress["step"])
            restored = min(behaviour.duration, restored_step / int(progress["totalSteps"]) * behaviour.duration)
        trained_before = (
            sum(other.plan.seconds_in({"Training"}, created) for other in self.jobs.values() if other.key == key)
            if key
            else 0.0
        )
        interval = _checkpoint_interval(request.get("Environment") or {})
        first_interval = _minutes(request.get("Environment") or {}, FIRST_CHECKPOINT_ENV)
        injected = self._failures.popleft() if self._failures else None
        stopping = request.get("StoppingCondition") or {}
        pending = stopping.get("MaxPendingTimeInSeconds")
        # AWS: sagemaker StoppingCondition.MaxPendingTimeInSeconds: "takes effect only for jobs that request
        # accelerated computing instance types, such as instances in the ml.p, ml.g, and ml.trn families"; with
        # InstancePreferences it "bounds the total time SageMaker spends working through your list".
        accelerated = any(_accelerated(t) for t in _requested_types(resources))
        plan = plan_training(
            weather,
            created,
            spot=spot,
            behaviour=behaviour,
            restored=restored,
            trained_before=trained_before,
            interval=interval,
            first_interval=first_interval,
            checkpointed=key is not None,
            injected=injected,
            max_pending=float(pending) if pending is not None and accelerated else None,
            window=self.plans.window(resources["TrainingPlanArn"]) if resources.get("TrainingPlanArn") else None,
        )
        limits: list[tuple[float, str, str]] = []
        max_runtime = float(stopping.get("MaxRuntimeInSeconds", DEFAULT_MAX_RUNTIME_S))
        at = plan.when_seconds_in(BILLED, max_runtime)
        if at is not None:
            message = f"Training job stopped: it reached MaxRuntimeInSeconds ({int(max_runtime)} seconds)"
            limits.append((at, "MaxRuntimeExceeded", message))
        if spot and stopping.get("MaxWaitTimeInSeconds") is not None:
            max_wait = float(stopping["MaxWaitTimeInSeconds"])
            message = f"Training job stopped: it exceeded MaxWaitTimeInSeconds ({int(max_wait)} seconds)"
            limits.append((created + max_wait, "MaxWaitTimeExceeded", message))
        if limits:
            at, final, message = min(limits)
            if at < plan.end - EPS:
                plan = cut(
                    plan,
                    at,
                    behaviour=behaviour,
                    checkpointed=key is not None,
                    final=final,
                    message=message,
                    kind="limit",
                )
        timeout = (sjob.request.get("timeoutConfig") or {}).get("attemptDurationSeconds")
        if timeout and created + timeout < plan.end - EPS:
            plan = cut(
                plan,
                created + timeout,
                behaviour=behaviour,
                checkpointed=key is not None,
                final="Stopped",
                message="Training job stopped",
                kind="timeout",
            )
        job = TrainingJob(
            name, self.training_arn(name), request, key, spot, created, behaviour, plan, restored_step, sjob
        )
        job.selected, job.zone = selected, zone
        job.world = world_size(request, *selected) if key else None
        if progress and isinstance(progress.get("byInstanceType"), dict):
            job.by_type_before = {k: dict(v) for k, v in progress["byInstanceType"].items()}
        self.jobs[name.lower()] = job
        return job

    def _in_use_on(self, plan_arn: str) -> int:
        """Instances of the jobs on the training plan that hold instances now."""
        now = self.clock.now
        return sum(
            job.selected[1]
            for job in self.jobs.values()
            if (job.request.get("ResourceConfig") or {}).get("TrainingPlanArn") == plan_arn
            and job.plan.end > now + EPS
            and job.plan.segment_at(now).status in BILLED
        )

    def _selected(self, resources: dict[str, Any], created: float, spot: bool) -> tuple[str, int]:
        """The instance type and count the job runs on. With InstancePreferences: "SageMaker launches the
        training job on the first instance type in the list that has available capacity. If capacity is
        insufficient, SageMaker evaluates the next instance type in the preferred list. Exactly one instance
        type is selected for the job." (ResourceConfig.InstancePreferences): the type whose on-demand
        capacity comes first, the earlier in the list on a tie."""
        preferences = resources.get("InstancePreferences")
        if not preferences:
            return str(resources.get("InstanceType") or ""), int(resources.get("InstanceCount") or 1)
        best: tuple[float, int] | None = None
        for index, preference in enumerate(preferences):
            weather = self.weather.for_type(str(preference["InstanceType"]))
            delay = weather.spot_start_delay if spot else weather.on_demand_start_delay
            start = capacity_from(merged_gaps(weather.on_demand_gaps), created, delay)
            if best is None or start < best[0] - EPS:
                best = (start, index)
        assert best is not None
        chosen = preferences[best[1]]
        count = chosen.get("InstanceCount", resources.get("InstanceCount", 1))
        return str(chosen["InstanceType"]), int(count)

    # --- stopping ---------------------------------------------------------------------------

    def stop(self, job: TrainingJob, kind: str) -> None:
        """SIGTERM now: the plan ends after Stopping, and its last checkpoint is written at once."""
        job.plan = cut(
            job.plan,
            self.clock.now,
            behaviour=job.behaviour,
            checkpointed=job.key is not None,
            final="Stopped",
            message="Training job stopped",
            kind=kind,
        )
        self._advance()

    def training_status(self, job: TrainingJob, now: float) -> tuple[str, str]:
        """(TrainingJobStatus, SecondaryStatus) at `now`."""
        plan = job.plan
        if plan.end <= now + EPS:
            return plan.status, plan.final
        secondary = plan.segment_at(now).status
        return ("Stopping" if secondary == "Stopping" else "InProgress"), secondary

    # --- SageMaker operations ---------------------------------------------------------------

    def describe_training_job(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.describe(self.jobs[body["TrainingJobName"].lower()], self.clock.now)

    def describe(self, job: TrainingJob, now: float) -> dict[str, Any]:
        """DescribeTrainingJob's answer as of `now` (any moment up to the stand-in's last advance)."""
        plan, request = job.plan, job.request
        status, secondary = self.training_status(job, now)
        members = shape("sagemaker", "DescribeTrainingJob", "output").members
        described: dict[str, Any] = {k: v for k, v in request.items() if k in members and k != "TrainingJobName"}
        stopping = dict(request.get("StoppingCondition") or {})
        stopping.setdefault("MaxRuntimeInSeconds", DEFAULT_MAX_RUNTIME_S)
        transitions = _transitions(plan, now)
        output = request["OutputDataConfig"]["S3OutputPath"].rstrip("/")
        described.update(
            TrainingJobName=job.name,
            TrainingJobArn=job.arn,
            TrainingJobStatus=status,
            SecondaryStatus=secondary,
            StoppingCondition=stopping,
            EnableManagedSpotTraining=job.spot,
            EnableNetworkIsolation=bool(request.get("EnableNetworkIsolation")),
            EnableInterContainerTrafficEncryption=bool(request.get("EnableInterContainerTrafficEncryption")),
            CreationTime=job.created,
            LastModifiedTime=max([job.created, *(t["StartTime"] for t in transitions)]),
            SecondaryStatusTransitions=transitions,
            # Required in the DescribeTrainingJob output shape (API reference: "ModelArtifacts ...
            # Required: Yes"), whatever the status: where the model is (or will be) written.
            ModelArtifacts={"S3ModelArtifacts": f"{output}/{job.name}/output/model.tar.gz"},
        )
        downloads = [s.start for s in plan.segments if s.status == "Downloading" and s.start <= now + EPS]
        if downloads:
            described["TrainingStartTime"] = downloads[0]
            if "InstancePreferences" in (request.get("ResourceConfig") or {}):
                # AWS: sagemaker ResourceConfig.SelectedInstanceType: "Returned by DescribeTrainingJob after an
                # instance type is selected." Stand-in: selected when the instances are acquired.
                described["ResourceConfig"] = {
                    **request["ResourceConfig"],
                    "SelectedInstanceType": job.selected[0],
                    "SelectedInstanceCount": job.selected[1],
                }
        if plan.end <= now + EPS:
            training, billable = billed_seconds(
                plan, spot=job.spot, spot_price_ratio=self.weather.spot_price_ratio, until=plan.end
            )
            described["TrainingEndTime"] = plan.end
            described["TrainingTimeInSeconds"] = training
            described["BillableTimeInSeconds"] = billable
            if plan.failure_reason:
                described["FailureReason"] = plan.failure_reason

        return described

    def add_tags(self, body: dict[str, Any]) -> dict[str, Any]:
        """AddTags on a training job (its ARN): a tag already there takes the new value."""
        job = self.jobs[str(body["ResourceArn"]).rpartition("training-job/")[2].lower()]
        tags = {t["Key"]: t["Value"] for t in job.request.get("Tags") or []}
        tags.update({t["Key"]: t["Value"] for t in body.get("Tags") or []})
        job.request["Tags"] = [{"Key": k, "Value": v} for k, v in tags.items()]
        return {"Tags": body.get("Tags") or []}

    def stop_training_job(self, body: dict[str, Any]) -> dict[str, Any]:
        job = self.jobs[body["TrainingJobName"].lower()]
        status, _ = self.training_status(job, self.clock.now)
        # AWS: sagemaker StopTrainingJob: "When it receives a StopTrainingJob request, SageMaker changes the status
        # of the job to Stopping"
        # Stand-in: only an InProgress job can move to Stopping; the API reference names no error for the others,
        # and this is SageMaker's answer for a job that is Stopping or has ended.
        if status != "InProgress":
            raise ApiError(
                "ValidationException", f"The request was rejected because the training job is in status {status}."
            )
        self.stop(job, "user")
        return {}

    # --- the ledger -------------------------------------------------------------------------

    def ledger(self, now: float) -> list[LedgerEntry]:
        """Every training job as billed by `now`, in the order they were created."""
        entries = []
        for job in sorted(self.jobs.values(), key=lambda j: j.created):
            ended = job.plan.end <= now + EPS
            training, billable = billed_seconds(
                job.plan, spot=job.spot, spot_price_ratio=self.weather.spot_price_ratio, until=now
            )
            tags = dict(job.service_job.request.get("tags") or {})
            billed_as = self._billed_as(job, now)
            entries.append(
                LedgerEntry(
                    execution=str(tags.get(EXECUTION_TAG) or job.service_job.name),
                    service_job=job.service_job.name,
                    training_job=job.name,
                    capacity=tier_of(job),
                    instance_type=billed_as[0],
                    instance_count=billed_as[1],
                    ended=ended,
                    completed=ended and job.plan.status == "Completed",
                    billed_seconds=billable if ended else 0,
                    training_seconds=training,
                    lost_work_seconds=lost_work(
                        job.plan, duration=job.behaviour.duration, total_steps=job.behaviour.total_steps
                    )
                    if ended
                    else sum(lost for t, lost in [*job.plan.interruptions, *job.plan.repairs] if t <= now + EPS),
                    work_seconds=job.behaviour.duration,
                    upload_seconds=job.behaviour.upload_seconds,
                    region=self.region,
                    created=job.created,
                    restored_step=job.restored_from_step or 0,
                    total_steps=job.behaviour.total_steps,
                )
            )
        return entries

    def _billed_as(self, job: TrainingJob, now: float) -> tuple[str, int]:
        """The type and count a job is billed for. With InstancePreferences, SelectedInstanceType is
        "Returned by DescribeTrainingJob after an instance type is selected. [...] The job is billed for
        this instance type and count" (sagemaker ResourceConfig): a job whose instances were never acquired
        had none selected, and is billed for no type ("", 0), whichever type the stand-in would have chosen."""
        acquired = any(s.status == "Downloading" and s.start <= now + EPS for s in job.plan.segments)
        if "InstancePreferences" in (job.request.get("ResourceConfig") or {}) and not acquired:
            return "", 0
        return job.selected

    # --- views ------------------------------------------------------------------------------

    def training_view(self, job: TrainingJob, now: float) -> TrainingJobView:
        plan = job.plan
        status, secondary = self.training_status(job, now)
        training = plan.seconds_in(BILLED, now)
        return TrainingJobView(
            name=job.name,
            arn=job.arn,
            capacity=tier_of(job),
            created_at=dt(job.created),
            status=status,
            secondary_status=secondary,
            ended_at=dt(plan.end) if plan.end <= now + EPS else None,
            failure_reason=plan.failure_reason if plan.end <= now + EPS else None,
            training_seconds=training,
            billable_seconds=training * self.weather.spot_price_ratio if job.spot else training,
            interrupted_at=tuple(dt(t) for t, _ in plan.interruptions if t <= now + EPS),
            lost_work_seconds=sum((lost for t, lost in [*plan.interruptions, *plan.repairs] if t <= now + EPS), 0.0),
            restored_from_step=job.restored_from_step,
            # With InstancePreferences the type is known once selected (its instances acquired).
            instance_type=job.selected[0]
            if "InstancePreferences" not in (job.request.get("ResourceConfig") or {})
            or any(s.status == "Downloading" and s.start <= now + EPS for s in plan.segments)
            else "",
            instance_count=job.selected[1],
            repaired_at=tuple(dt(t) for t, _ in plan.repairs if t <= now + EPS),
        )


def tier_of(job: TrainingJob) -> str:
    """spot, on-demand, or training-plan (a job on a plan's reserved capacity)."""
    if (job.request.get("ResourceConfig") or {}).get("TrainingPlanArn"):
        return "training-plan"
    return "spot" if job.spot else "on-demand"


def _requested_types(resources: dict[str, Any]) -> list[str]:
    preferences = resources.get("InstancePreferences") or []
    return [str(p.get("InstanceType")) for p in preferences] or [str(resources.get("InstanceType") or "")]


def _accelerated(instance_type: str) -> bool:
    """ml.p, ml.g and ml.trn families (MaxPendingTimeInSeconds' "accelerated computing instance types")."""
    family = instance_type.split(".")[1] if instance_type.count(".") == 2 else ""
    return family.startswith(("p", "g", "trn"))


def _checkpoint_interval(environment: dict[str, Any]) -> float:
    """Seconds between checkpoints: the training code reads Spotline's variable, else 15 minutes."""
    return _minutes(environment, CHECKPOINT_INTERVAL_ENV) or DEFAULT_CHECKPOINT_INTERVAL_S


def _minutes(environment: dict[str, Any], name: str) -> float | None:
    """Seconds from one of Spotline's minute variables (None: unset or not a positive number)."""
    try:
        minutes = float(environment.get(name) or 0)
    except ValueError:
        minutes = 0
    return minutes * 60 if minutes > 0 else None


def _transitions(plan: Plan, now: float) -> list[dict[str, Any]]:
    """SecondaryStatusTransitions as the API lists them: one entry per status change, its
    message the latest one, and the terminal status as a last entry."""
    entries: list[dict[str, Any]] = []
    for segment in plan.segments:
        if segment.start > now + EPS:
            break
        if entries and entries[-1]["Status"] == segment.status:
            entries[-1]["StatusMessage"] = segment.message
            continue
        if entries:
            entries[-1]["EndTime"] = segment.start
        entries.append({"Status": segment.status, "StartTime": segment.start, "StatusMessage": segment.message})
    if plan.end <= now + EPS:
        if entries:
            entries[-1]["EndTime"] = plan.end
        entries.append(
            {"Status": plan.final, "StartTime": plan.end, "EndTime": plan.end, "StatusMessage": plan.message}
        )
    return entries
