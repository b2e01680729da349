"""The SageMaker training jobs Batch starts (one per attempt): CreateTrainingJob's checks, the
timeline each job follows, DescribeTrainingJob and StopTrainingJob, the checkpoint progress the
training code writes, and the views the stand-in reports."""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from botocore.validate import ParamValidator

from spotline_dev.standin.clock import EPS, ObservedTime, dt, rfc3339
from spotline_dev.standin.http_answers import ApiError, request_problems, shape
from spotline_dev.standin.ledger import EXECUTION_TAG, LedgerEntry, billed_seconds, lost_work
from spotline_dev.standin.records import ServiceJob, TrainingJob
from spotline_dev.standin.spot_weather import SpotWeather, TrainingBehaviour, capacity_from, merged_gaps
from spotline_dev.standin.training_plans import TrainingPlans
from spotline_dev.standin.training_timeline import BILLED, Plan, cut, plan_training

CHECKPOINT_INTERVAL_ENV = "SPOTLINE_CHECKPOINT_INTERVAL_MINUTES"
DEFAULT_CHECKPOINT_INTERVAL_S = 15 * 60
DEFAULT_MAX_RUNTIME_S = 86_400  # MaxRuntimeInSeconds: "The default value is 1 day."
MAX_RUNTIME_LIMIT_S = 28 * 86_400  # StoppingCondition.MaxRuntimeInSeconds: "The maximum value is 28 days."
MAX_WARM_POOL_S = 3600  # the warm pools guide's limit on KeepAlivePeriodInSeconds

TRAINING_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


class CheckpointStore(Protocol):
    """Where progress.json lives (the local stack backs it with moto S3)."""

    def read(self, s3_uri: str) -> dict[str, Any] | None: ...

    def write(self, s3_uri: str, progress: dict[str, Any]) -> None: ...


class InMemoryCheckpointStore:
    """Dict-backed CheckpointStore that also keeps every write, for assertions."""

    def __init__(self) -> None:
        self.files: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, dict[str, Any]]] = []

    def read(self, s3_uri: str) -> dict[str, Any] | None:
        return self.files.get(s3_uri)

    def write(self, s3_uri: str, progress: dict[str, Any]) -> None:
        self.files[s3_uri] = dict(progress)
        self.writes.append((s3_uri, dict(progress)))


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
            progress = {
                "step": step,
                "totalSteps": total,
                "updatedAt": rfc3339(t),
                "trainingSeconds": round(step / total * job.behaviour.duration, 1),  # as the helper records
            }
            self.store.write(job.key, progress)

    def training_arn(self, name: str) -> str:
        return f"arn:aws:sagemaker:{self.region}:{self.account}:training-job/{name.lower()}"

    def validated_payload(self, payload: str) -> dict[str, Any]:
        """What SageMaker's CreateTrainingJob would reject: botocore's model (what botocore's client
        checks, then what request_problems checks), then the rules the model cannot express."""
        try:
            request = json.loads(payload)
        except json.JSONDecodeError as error:
            # AWS: batch SubmitServiceJob.serviceRequestPayload: "The request, in JSON, for the service that the
            # SubmitServiceJob operation is queueing."
            raise _reject(f"serviceRequestPayload is not valid JSON: {error}") from error
        if not isinstance(request, dict):
            # AWS: batch SubmitServiceJob.serviceRequestPayload: "The request, in JSON, for the service"
            # Stand-in: a CreateTrainingJob request is a JSON object; any other JSON value cannot be one.
            raise _reject("serviceRequestPayload must be a JSON object (a CreateTrainingJob request)")
        model = shape("sagemaker", "CreateTrainingJob", "input")
        report = ParamValidator().validate(request, model)
        if report.has_errors():
            lines = report.generate_report().splitlines()
            # Stand-in: the payload is a string inside SubmitServiceJob's request, so botocore's client never
            # validates it; SageMaker validates CreateTrainingJob's input against the same model (required
            # members, types, minimums), and these are botocore's own messages for it.
            raise _reject("; ".join(line.strip() for line in lines[1:] or lines))
        refused = request_problems(request, model)
        if refused:
            # Stand-in: the model's other constraints (enum values, maximum lengths and sizes, patterns,
            # ranges: the API reference's "Valid Values", "Length Constraints", "Pattern", "Valid Range"),
            # which stand_in.py checks on every HTTP request and SageMaker checks on this one.
            raise _reject("; ".join(refused[:5]))
        name = request["TrainingJobName"]
        # Stand-in: the API reference gives TrainingJobName's pattern anchored (^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62});
        # request_problems searches the model's unanchored pattern, which any name with one letter passes.
        if not TRAINING_JOB_NAME.match(name):
            raise _reject(
                f"1 validation error detected: Value '{name}' at 'trainingJobName' failed to satisfy constraint: "
                "Member must satisfy regular expression pattern: ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}",
            )
        serverless = "ServerlessJobConfig" in request
        algorithm = request.get("AlgorithmSpecification") or {}
        # AWS: sagemaker AlgorithmSpecification.TrainingImage: "You must specify either the algorithm name to the
        # AlgorithmName parameter or the image URI of the algorithm container to the TrainingImage parameter."
        # Stand-in: the model leaves AlgorithmSpecification optional only for serverless training jobs
        # (ServerlessJobConfig), where SageMaker picks the training configuration.
        if not serverless and not (algorithm.get("TrainingImage") or algorithm.get("AlgorithmName")):
            raise _reject("AlgorithmSpecification: TrainingImage or AlgorithmName is required")
        resources = request.get("ResourceConfig") or {}
        # Stand-in: the model leaves ResourceConfig optional for serverless training jobs ("SageMaker
        # automatically selects the volume size for serverless training jobs"); a job on ML instances (the
        # only kind a Batch service environment runs) says which ones, and Batch counts its capacity by them.
        if not serverless and "ResourceConfig" not in request:
            raise _reject("ResourceConfig is required for a training job on ML instances")
        # AWS: sagemaker ResourceConfig.SelectedInstanceType: "This field is read-only and isn't accepted in
        # CreateTrainingJob requests."
        if "SelectedInstanceType" in resources or "SelectedInstanceCount" in resources:
            raise _reject("ResourceConfig.SelectedInstanceType and SelectedInstanceCount are read-only")
        spot = bool(request.get("EnableManagedSpotTraining"))
        exclusive = [k for k in ("InstanceType", "InstanceGroups", "InstancePlacementConfig") if k in resources]
        clash = ", ".join(exclusive + (["EnableManagedSpotTraining"] if spot else []))
        # AWS: sagemaker ResourceConfig.InstancePreferences: "InstancePreferences is mutually exclusive with
        # InstanceType ... InstanceGroups ... InstancePlacementConfig ... and EnableManagedSpotTraining"
        if "InstancePreferences" in resources and clash:
            raise _reject(f"ResourceConfig.InstancePreferences is mutually exclusive with {clash}")
        if "InstancePreferences" in resources:
            _check_preferences(resources)
        plan_arn = resources.get("TrainingPlanArn")
        if plan_arn and (
            plan_refused := self.plans.refusal(plan_arn, str(resources.get("InstanceType")), self.clock.now)
        ):
            # AWS guide: SageMaker Developer Guide, "Training plans utilization for SageMaker training jobs": "The
            # training plan must be in the Scheduled or Active status to be used by a training job."
            # AWS: sagemaker InstancePreference.TrainingPlanArns: "The plan's instance type must match InstanceType"
            raise _reject(plan_refused)
        stopping = request.get("StoppingCondition") or {}
        max_runtime = stopping.get("MaxRuntimeInSeconds", DEFAULT_MAX_RUNTIME_S)
        max_wait = stopping.get("MaxWaitTimeInSeconds")
        # AWS: sagemaker StoppingCondition.MaxRuntimeInSeconds: "The maximum value is 28 days."
        if max_runtime > MAX_RUNTIME_LIMIT_S:
            raise _reject(f"StoppingCondition.MaxRuntimeInSeconds must be at most {MAX_RUNTIME_LIMIT_S} (28 days)")
        # AWS: sagemaker StoppingCondition.MaxWaitTimeInSeconds: "The maximum length of time, in seconds, that a
        # managed Spot training job has to complete."
        # Stand-in: SageMaker's message for it, as users report it (github.com/Kenza-AI/sagify/issues/111).
        if max_wait is not None and not spot:
            raise _reject(
                "Invalid MaxWaitTimeInSeconds. It is only supported when EnableManagedSpotTraining is set to true"
            )
        # AWS guide: SageMaker Developer Guide (Managed Spot Training), "Using Managed Spot Training":
        # "Set EnableManagedSpotTraining to True and specify the MaxWaitTimeInSeconds."
        if spot and max_wait is None:
            raise _reject("StoppingCondition.MaxWaitTimeInSeconds is required when EnableManagedSpotTraining is true")
        # AWS: sagemaker StoppingCondition.MaxWaitTimeInSeconds: "It must be equal to or greater than
        # MaxRuntimeInSeconds"
        if max_wait is not None and max_wait < max_runtime:
            raise _reject(
                "Invalid MaxWaitTimeInSeconds. It must be greater than or equal to MaxRuntimeInSeconds",
            )
        keep_alive = resources.get("KeepAlivePeriodInSeconds")
        # AWS guide: SageMaker Developer Guide (SageMaker AI Managed Warm Pools), "Considerations": "SageMaker
        # Managed Warm Pools cannot be used with spot instances."
        if keep_alive and spot:
            raise _reject("ResourceConfig.KeepAlivePeriodInSeconds (warm pools) cannot be used with spot instances")
        # AWS guide: SageMaker Developer Guide (SageMaker AI Managed Warm Pools), "Warm pool lifecycle":
        # "The maximum length of time allowed for the KeepAlivePeriodInSeconds is 3600 seconds (60 minutes)."
        if keep_alive is not None and keep_alive > MAX_WARM_POOL_S:
            raise _reject(f"ResourceConfig.KeepAlivePeriodInSeconds must be at most {MAX_WARM_POOL_S}")
        return request

    def create_training(self, request: dict[str, Any], created: float, sjob: ServiceJob) -> TrainingJob:
        name = request["TrainingJobName"]
        key = (request.get("CheckpointConfig") or {}).get("S3Uri")
        spot = bool(request.get("EnableManagedSpotTraining"))
        behaviour = self.behaviour(request)
        restored_step, restored = None, 0.0
        progress = self.store.read(key) if key else None
        if progress and int(progress.get("totalSteps") or 0) > 0:
            restored_step = int(progress["step"])
            restored = min(behaviour.duration, restored_step / int(progress["totalSteps"]) * behaviour.duration)
        trained_before = (
            sum(other.plan.seconds_in({"Training"}, created) for other in self.jobs.values() if other.key == key)
            if key
            else 0.0
        )
        interval = _checkpoint_interval(request.get("Environment") or {})
        injected = self._failures.popleft() if self._failures else None
        stopping = request.get("StoppingCondition") or {}
        resources = request.get("ResourceConfig") or {}
        selected = self._selected(resources, created, spot)
        pending = stopping.get("MaxPendingTimeInSeconds")
        # AWS: sagemaker StoppingCondition.MaxPendingTimeInSeconds: "takes effect only for jobs that request
        # accelerated computing instance types, such as instances in the ml.p, ml.g, and ml.trn families"; with
        # InstancePreferences it "bounds the total time SageMaker spends working through your list".
        accelerated = any(_accelerated(t) for t in _requested_types(resources))
        plan = plan_training(
            self.weather.for_type(selected[0]),
            created,
            spot=spot,
            behaviour=behaviour,
            restored=restored,
            trained_before=trained_before,
            interval=interval,
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
        job.selected = selected
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
            entries.append(
                LedgerEntry(
                    execution=str(tags.get(EXECUTION_TAG) or job.service_job.name),
                    service_job=job.service_job.name,
                    training_job=job.name,
                    capacity=tier_of(job),
                    instance_type=job.selected[0],
                    instance_count=job.selected[1],
                    ended=ended,
                    completed=ended and job.plan.status == "Completed",
                    billed_seconds=billable if ended else 0,
                    training_seconds=training,
                    lost_work_seconds=lost_work(
                        job.plan, duration=job.behaviour.duration, total_steps=job.behaviour.total_steps
                    )
                    if ended
                    else sum(lost for t, lost in job.plan.interruptions if t <= now + EPS),
                    work_seconds=job.behaviour.duration,
                    upload_seconds=job.behaviour.upload_seconds,
                )
            )
        return entries

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
            lost_work_seconds=sum((lost for t, lost in plan.interruptions if t <= now + EPS), 0.0),
            restored_from_step=job.restored_from_step,
            # With InstancePreferences the type is known once selected (its instances acquired).
            instance_type=job.selected[0]
            if "InstancePreferences" not in (job.request.get("ResourceConfig") or {})
            or any(s.status == "Downloading" and s.start <= now + EPS for s in plan.segments)
            else "",
            instance_count=job.selected[1],
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


def _check_preferences(resources: dict[str, Any]) -> None:
    preferences = resources["InstancePreferences"]
    types = [p.get("InstanceType") for p in preferences]
    # AWS: sagemaker InstancePreference.InstanceType: "An instance type can appear only once in an
    # InstancePreferences list."
    if len(set(types)) != len(types):
        raise _reject("ResourceConfig.InstancePreferences: an instance type can appear only once")
    counted = sum(1 for p in preferences if "InstanceCount" in p)
    # AWS: sagemaker InstancePreference.InstanceCount: "SageMaker rejects requests that set InstanceCount on only
    # some preferences, that set it both per preference and in ResourceConfig ... or that omit it in both places."
    if counted not in (0, len(preferences)) or (counted == 0) == ("InstanceCount" not in resources):
        raise _reject(
            "ResourceConfig.InstancePreferences: set InstanceCount on every preference or only in ResourceConfig"
        )
    # AWS: sagemaker InstancePreference.TrainingPlanArns: "Per-preference TrainingPlanArns is mutually exclusive
    # with the job-level TrainingPlanArn in ResourceConfig"
    if "TrainingPlanArn" in resources and any("TrainingPlanArns" in p for p in preferences):
        raise _reject("ResourceConfig: TrainingPlanArn and per-preference TrainingPlanArns are mutually exclusive")


def _checkpoint_interval(environment: dict[str, Any]) -> float:
    """Seconds between checkpoints: the training code reads Spotline's variable, else 15 minutes."""
    try:
        minutes = float(environment.get(CHECKPOINT_INTERVAL_ENV) or 0)
    except ValueError:
        minutes = 0
    return minutes * 60 if minutes > 0 else DEFAULT_CHECKPOINT_INTERVAL_S


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


def _reject(message: str) -> ApiError:
    """CreateTrainingJob's refusal of the payload (SageMaker answers ValidationException)."""
    return ApiError("ValidationException", message)
