"""A local stand-in for AWS Batch service jobs (SAGEMAKER_TRAINING) and the SageMaker training
jobs they start.

moto has no Batch service jobs, and its training jobs finish at once, so the workflow's real
decisions (spot interruptions, MaxWait, capacity errors, progress) could not be exercised. The
stand-in answers those few calls at botocore's `before-send` hook: handlers run unchanged,
botocore parses (and retries) its answers exactly as it would AWS's, and moto serves the rest.

Time comes from the clock passed in. A training job's whole timeline is computed once, when the
job is created, from the weather, the behaviour and the progress restored from its checkpoint
(cut short if it is stopped); every intercepted call then replays events up to `clock()`. No
randomness, no wall clock, no threads.
"""

from __future__ import annotations

import base64
import json
import math
import re
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from io import BytesIO
from typing import Any, Protocol, cast
from urllib.parse import urlsplit

import boto3
import botocore.session
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.compat import HTTPHeaders
from botocore.validate import ParamValidator

SAGEMAKER_PREFIX = "Received status from SageMaker: "
CAPACITY_REASON = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
CHECKPOINT_INTERVAL_ENV = "SPOTLINE_CHECKPOINT_INTERVAL_MINUTES"
DEFAULT_CHECKPOINT_INTERVAL_S = 15 * 60
DEFAULT_MAX_RUNTIME_S = 86_400  # SageMaker's default when StoppingCondition omits it
MAX_RUNTIME_LIMIT_S = 28 * 86_400
DOWNLOAD_SECONDS = 60.0  # last part of every start delay: instances up, input data downloading
INTERRUPTED_SECONDS = 120.0  # first part of a restart: the two-minute spot notice and teardown
STARTUP_FAILURE_SECONDS = 60.0  # a job failed by fail_next_attempt fails this long after creation
STOPPING_SECONDS = 30.0  # StopTrainingJob: SIGTERM, last checkpoint, instances released
EPS = 1e-6

TRAINING_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
BATCH_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_BILLED = frozenset({"Downloading", "Training", "Uploading"})

_WAITING = "Insufficient capacity error from EC2 while launching instances, retrying!"
_LAUNCHING = "Launching requested ML instances"
_DOWNLOADING = "Downloading input data"
_TRAINING = "Training image download completed. Training in progress."
_UPLOADING = "Uploading generated training model"
_INTERRUPTED = "Training job interrupted: spot capacity was reclaimed. It resumes from its last checkpoint."
_ALGORITHM_ERROR = "AlgorithmError: ExecuteUserScriptError: ExitCode 1 (the training script failed)"


# --- public types ---------------------------------------------------------------------------


@dataclass
class SpotWeather:
    """Spot capacity, the same for every job (times in seconds)."""

    capacity_gaps: list[tuple[datetime, datetime]] = field(default_factory=list)
    interruptions: list[float] = field(default_factory=list)
    spot_start_delay: float = 300.0
    on_demand_start_delay: float = 480.0
    queue_delay: float = 30.0
    restart_delay: float | None = None
    spot_price_ratio: float = 0.3


@dataclass
class TrainingBehaviour:
    """What the training code in the image does (times in seconds)."""

    duration: float
    fail_after: float | None = None
    upload_seconds: float = 60.0
    steps_per_hour: int = 60

    @property
    def total_steps(self) -> int:
        return max(1, math.ceil(self.duration / 3600 * self.steps_per_hour))


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

    @property
    def interruptions(self) -> int:
        return len(self.interrupted_at)


@dataclass(frozen=True)
class ServiceJobView:
    """One Batch service job with its attempts, as of the stand-in's last advance."""

    job_id: str
    job_name: str
    job_arn: str
    queue: str  # queue name
    capacity: str  # of the latest attempt (of the payload before the first one)
    submitted_at: datetime
    status: str  # Batch status now
    status_reason: str | None
    attempts: tuple[TrainingJobView, ...]

    @property
    def latest(self) -> TrainingJobView | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def training_job_name(self) -> str | None:
        return self.latest.name if self.latest else None

    @property
    def training_status(self) -> str | None:
        return self.latest.status if self.latest else None

    @property
    def secondary_status(self) -> str | None:
        return self.latest.secondary_status if self.latest else None

    @property
    def training_seconds(self) -> float:
        return sum(a.training_seconds for a in self.attempts)

    @property
    def billable_seconds(self) -> float:
        return sum(a.billable_seconds for a in self.attempts)

    @property
    def interruptions(self) -> int:
        return sum(a.interruptions for a in self.attempts)

    @property
    def lost_work_seconds(self) -> float:
        return sum(a.lost_work_seconds for a in self.attempts)

    @property
    def restored_from_step(self) -> int | None:
        return self.latest.restored_from_step if self.latest else None


# --- internals ------------------------------------------------------------------------------


class _ApiError(Exception):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


@dataclass
class _Segment:
    status: str  # SecondaryStatus from `start` until the next segment (or the plan's end)
    start: float
    message: str
    progress: float = 0.0  # Training only: progress seconds at `start`


@dataclass
class _Plan:
    """A training job's timeline, fixed at creation (and cut short by a stop)."""

    segments: list[_Segment]
    end: float
    status: str  # final TrainingJobStatus: Completed | Failed | Stopped
    final: str  # final SecondaryStatus
    message: str
    failure_reason: str | None = None
    checkpoints: list[tuple[float, int]] = field(default_factory=list)  # (time, step saved)
    interruptions: list[tuple[float, float]] = field(default_factory=list)  # (time, work lost)
    stop_kind: str | None = None  # "user" | "terminate" | "timeout" | "limit"

    def segment_at(self, t: float) -> _Segment:
        current = self.segments[0]
        for segment in self.segments:
            if segment.start > t + EPS:
                break
            current = segment
        return current

    def seconds_in(self, statuses: frozenset[str] | set[str], until: float) -> float:
        total, bound = 0.0, min(until, self.end)
        for i, segment in enumerate(self.segments):
            stop = self.segments[i + 1].start if i + 1 < len(self.segments) else self.end
            if segment.status in statuses:
                total += max(0.0, min(stop, bound) - segment.start)
        return total

    def when_seconds_in(self, statuses: frozenset[str], amount: float) -> float | None:
        """The time at which `amount` seconds have been spent in `statuses`, if ever."""
        spent = 0.0
        for i, segment in enumerate(self.segments):
            stop = self.segments[i + 1].start if i + 1 < len(self.segments) else self.end
            if segment.status in statuses:
                if spent + (stop - segment.start) >= amount - EPS:
                    return segment.start + max(0.0, amount - spent)
                spent += stop - segment.start
        return None


@dataclass
class _Queue:
    name: str
    arn: str
    state: str
    status: str
    scheduling_policy_arn: str | None


@dataclass
class _ServiceJob:
    job_id: str
    name: str
    arn: str
    queue: _Queue
    created: float
    request: dict[str, Any]
    runnable_at: float
    next_attempt_at: float | None
    attempts: list[_TrainingJob] = field(default_factory=list)
    counted_attempts: int = 0  # attempts that use up retryStrategy.attempts (capacity retries do not)
    waiting_reason: str | None = None
    final_status: str | None = None
    final_at: float = 0.0
    final_reason: str | None = None
    terminate_reason: str | None = None

    @property
    def retry_attempts(self) -> int:
        return int((self.request.get("retryStrategy") or {}).get("attempts", 1))


@dataclass
class _TrainingJob:
    name: str
    arn: str
    request: dict[str, Any]
    key: str | None  # CheckpointConfig.S3Uri: progress and cumulative training are kept per key
    spot: bool
    created: float
    behaviour: TrainingBehaviour
    plan: _Plan
    restored_from_step: int | None
    service_job: _ServiceJob
    written: int = 0  # checkpoints of the plan already written to the store
    handled: bool = False  # its end has been reported to the Batch job


class _RawBody(BytesIO):
    """What botocore reads a response body from (moto's MockRawResponse does the same)."""

    def stream(self, **_: Any) -> Any:
        contents = self.read()
        while contents:
            yield contents
            contents = self.read()


def _ms(t: float) -> int:
    return round(t * 1000)


def _dt(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _rfc3339(t: float) -> str:
    return _dt(t).strftime("%Y-%m-%dT%H:%M:%SZ")


@cache
def _shape(service: str, operation: str, which: str) -> Any:
    model = botocore.session.get_session().get_service_model(service).operation_model(operation)
    return model.input_shape if which == "input" else model.output_shape


def _glob(pattern: str, text: str) -> bool:
    """Batch's onStatusReason glob: `*` matches anything, everything else literally."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text, re.DOTALL) is not None


_BATCH_PATHS = {
    "/v1/submitservicejob": "SubmitServiceJob",
    "/v1/describeservicejob": "DescribeServiceJob",
    "/v1/listservicejobs": "ListServiceJobs",
    "/v1/terminateservicejob": "TerminateServiceJob",
    "/v1/describejobqueues": "DescribeJobQueues",
}
_ANSWERED_HOST = "answered-by-spotline-standin.invalid"
_SAGEMAKER_OPERATIONS = {"DescribeTrainingJob", "StopTrainingJob"}
_BATCH_STATUSES = {"SUBMITTED", "PENDING", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING", "SUCCEEDED", "FAILED"}


class BatchSageMakerStandIn:
    """Batch service jobs and their SageMaker training jobs, on a clock, below boto3."""

    def __init__(
        self,
        clock: Callable[[], datetime],
        weather: SpotWeather,
        behaviour: Callable[[dict[str, Any]], TrainingBehaviour],
        checkpoint_store: CheckpointStore,
        *,
        account: str = "123456789012",
        region: str = "us-east-1",
    ) -> None:
        self.clock, self.weather, self.behaviour, self.store = clock, weather, behaviour, checkpoint_store
        self.account, self.region = account, region
        self._lock = threading.RLock()
        self._queues: dict[str, _Queue] = {}
        self._service_jobs: dict[str, _ServiceJob] = {}
        self._trainings: dict[str, _TrainingJob] = {}
        self._tokens: dict[str, tuple[dict[str, Any], str]] = {}  # clientToken -> (request, job id)
        self._throttles: dict[str, int] = {}
        self._failures: deque[str] = deque()
        self._serial = 0
        self._now = float("-inf")

    # --- set-up and controls ----------------------------------------------------------------

    def install(self, session: boto3.Session) -> None:
        """Answer Batch and SageMaker calls of clients created from `session` from now on.

        Clients copy the session's event hooks when they are created, so install first.
        """
        events = session.events
        # botocore-stubs type event handlers as returning None; before-send handlers return a response.
        events.register_first(
            "before-send.batch", cast(Callable[..., None], self._on_batch), unique_id=f"standin-batch-{id(self)}"
        )
        events.register_first(
            "before-send.sagemaker",
            cast(Callable[..., None], self._on_sagemaker),
            unique_id=f"standin-sagemaker-{id(self)}",
        )

    def register_queue(
        self, name: str, *, state: str = "ENABLED", status: str = "VALID", scheduling_policy_arn: str | None = None
    ) -> str:
        """A SAGEMAKER_TRAINING job queue. With a scheduling policy (fair share), submissions
        without a shareIdentifier are refused, as Batch does; without one, shareIdentifier is not checked."""
        arn = f"arn:aws:batch:{self.region}:{self.account}:job-queue/{name}"
        with self._lock:
            self._queues[name] = _Queue(name, arn, state, status, scheduling_policy_arn)
        return arn

    def throttle(self, operation: str, times: int = 1) -> None:
        """The next `times` calls of `operation` answer ThrottlingException (HTTP 400)."""
        with self._lock:
            self._throttles[operation] = self._throttles.get(operation, 0) + times

    def fail_next_attempt(self, reason: str) -> None:
        """The next training job created fails at start-up with this FailureReason."""
        with self._lock:
            self._failures.append(reason)

    @property
    def jobs(self) -> list[ServiceJobView]:
        """Every service job as of clock() (reading them replays events up to now)."""
        with self._lock:
            now = self._advance()
            return [self._view(job, now) for job in self._service_jobs.values()]

    # --- botocore hooks ---------------------------------------------------------------------

    def _on_batch(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        operation = _BATCH_PATHS.get(urlsplit(request.url).path.rstrip("/").lower())
        if operation is None:
            return None
        body = _json_body(request)
        with self._lock:
            if operation == "DescribeJobQueues" and not self._serves_queues(body):
                return None
            return self._answer(request, "rest-json", operation, body)

    def _on_sagemaker(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", "")
        target = target.decode() if isinstance(target, bytes) else str(target)
        operation = target.rpartition(".")[2]
        if operation not in _SAGEMAKER_OPERATIONS:
            return None
        body = _json_body(request)
        with self._lock:
            self._advance()  # a training job created by now is ours
            if str(body.get("TrainingJobName", "")).lower() not in self._trainings:
                return None  # not one of ours: moto answers
            return self._answer(request, "json", operation, body)

    def _answer(self, request: AWSPreparedRequest, protocol: str, operation: str, body: dict[str, Any]) -> AWSResponse:
        """Run the operation and serialize its result or error the way botocore parses them.

        botocore still calls every later `before-send` handler (it takes the first response,
        but emits to all), and moto's stubber, registered on every session, would then serve
        the same request again (and raise NotImplementedError for StopTrainingJob). Pointing
        the answered request at a host that nothing stubs makes it a no-op for them.
        """
        url = request.url
        parts = urlsplit(url)
        request.url = parts._replace(netloc=_ANSWERED_HOST).geturl()
        self._serial += 1
        headers = HTTPHeaders()
        headers["x-amzn-RequestId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"standin/request/{self._serial}"))
        headers["Content-Type"] = "application/json" if protocol == "rest-json" else "application/x-amz-json-1.1"
        try:
            self._advance()
            if self._throttles.get(operation, 0) > 0:
                self._throttles[operation] -= 1
                raise _ApiError("ThrottlingException", "Rate exceeded")
            status, payload = 200, getattr(self, f"_{operation}")(body)
        except _ApiError as error:
            status = error.status
            if protocol == "rest-json":
                headers["x-amzn-ErrorType"] = error.code
                payload = {"message": error.message}
            else:
                payload = {"__type": error.code, "message": error.message}
        raw = json.dumps(payload).encode()
        headers["Content-Length"] = str(len(raw))
        return AWSResponse(url, status, headers, _RawBody(raw))

    # --- simulation -------------------------------------------------------------------------

    def _advance(self) -> float:
        """Replay every event up to clock(), in time order: checkpoint writes, training job ends
        (Batch decides: done, retry, fail), new attempts."""
        self._now = max(self._now, self.clock().timestamp())
        now = self._now
        while True:
            best: tuple[float, int, int] | None = None
            action: Callable[[], None] | None = None
            for order, job in enumerate(self._trainings.values()):
                if job.written < len(job.plan.checkpoints):
                    t = job.plan.checkpoints[job.written][0]
                    if t <= now + EPS and (best is None or (t, 0, order) < best):
                        best, action = (t, 0, order), self._bind(self._write_checkpoint, job)
                if not job.handled and job.plan.end <= now + EPS and (best is None or (job.plan.end, 1, order) < best):
                    best, action = (job.plan.end, 1, order), self._bind(self._training_ended, job)
            for order, sjob in enumerate(self._service_jobs.values()):
                when = sjob.next_attempt_at
                if when is not None and when <= now + EPS and (best is None or (when, 2, order) < best):
                    best, action = (when, 2, order), self._bind(self._start_attempt, sjob)
            if action is None:
                return now
            action()

    @staticmethod
    def _bind(method: Callable[[Any], None], arg: Any) -> Callable[[], None]:
        return lambda: method(arg)

    def _write_checkpoint(self, job: _TrainingJob) -> None:
        t, step = job.plan.checkpoints[job.written]
        job.written += 1
        if job.key is not None:
            progress = {"step": step, "totalSteps": job.behaviour.total_steps, "updatedAt": _rfc3339(t)}
            self.store.write(job.key, progress)

    def _training_ended(self, job: _TrainingJob) -> None:
        """Batch's view of an attempt that ended: success, retry (capacity or retryStrategy) or failure."""
        job.handled = True
        sjob, plan, end = job.service_job, job.plan, job.plan.end
        if plan.status == "Completed":
            self._finish(sjob, "SUCCEEDED", end, None)
            return
        if plan.stop_kind == "terminate":
            self._finish(sjob, "FAILED", end, f"Terminated: {sjob.terminate_reason}")
            return
        if plan.stop_kind == "timeout":
            self._finish(sjob, "FAILED", end, "Job attempt duration exceeded timeout")
            return
        reason = SAGEMAKER_PREFIX + self._reason_of(plan)
        if plan.stop_kind == "user":
            self._finish(sjob, "FAILED", end, reason)
            return
        if (plan.failure_reason or "").startswith("CapacityError"):
            sjob.next_attempt_at, sjob.waiting_reason = end + self.weather.queue_delay, CAPACITY_REASON
            return
        if sjob.counted_attempts < sjob.retry_attempts and self._retry_action(sjob, reason) == "RETRY":
            sjob.next_attempt_at, sjob.waiting_reason = end + self.weather.queue_delay, None
            return
        self._finish(sjob, "FAILED", end, reason)

    @staticmethod
    def _reason_of(plan: _Plan) -> str:
        if plan.failure_reason:
            return plan.failure_reason
        return f"{plan.final}: {plan.message}"

    @staticmethod
    def _retry_action(sjob: _ServiceJob, reason: str) -> str:
        """First evaluateOnExit entry whose onStatusReason matches wins; none matching means RETRY."""
        for rule in (sjob.request.get("retryStrategy") or {}).get("evaluateOnExit") or []:
            if _glob(rule.get("onStatusReason", "*"), reason):
                return str(rule.get("action", "RETRY")).upper()
        return "RETRY"

    @staticmethod
    def _finish(sjob: _ServiceJob, status: str, at: float, reason: str | None) -> None:
        sjob.final_status, sjob.final_at, sjob.final_reason = status, at, reason
        sjob.next_attempt_at = None

    def _start_attempt(self, sjob: _ServiceJob) -> None:
        """Batch hands the payload to SageMaker (CreateTrainingJob) at SCHEDULED."""
        assert sjob.next_attempt_at is not None
        t = sjob.next_attempt_at
        sjob.next_attempt_at = None
        try:
            request = self._validated_payload(sjob.request["serviceRequestPayload"])
            number = len(sjob.attempts) + 1
            if number > 1:
                suffix = f"-{number}"
                request["TrainingJobName"] = request["TrainingJobName"][: 63 - len(suffix)] + suffix
            name = request["TrainingJobName"]
            if name.lower() in self._trainings:
                raise _ApiError(
                    "ResourceInUse",
                    "Training job names must be unique within an AWS account and region, and a training job "
                    f"with this name already exists ({self._training_arn(name)})",
                )
        except _ApiError as error:
            self._finish(sjob, "FAILED", t, f"{SAGEMAKER_PREFIX}{error.code}: {error.message}")
            return
        job = self._create_training(request, t, sjob)
        sjob.attempts.append(job)
        if not (job.plan.failure_reason or "").startswith("CapacityError"):
            sjob.counted_attempts += 1
        sjob.waiting_reason = None

    def _training_arn(self, name: str) -> str:
        return f"arn:aws:sagemaker:{self.region}:{self.account}:training-job/{name.lower()}"

    def _validated_payload(self, payload: str) -> dict[str, Any]:
        """What SageMaker's CreateTrainingJob would reject (botocore's model plus its own rules)."""
        try:
            request = json.loads(payload)
        except json.JSONDecodeError as error:
            raise _ApiError("ValidationException", f"The request payload is not valid JSON: {error}") from error
        if not isinstance(request, dict):
            raise _ApiError("ValidationException", "The request payload must be a JSON object")
        report = ParamValidator().validate(request, _shape("sagemaker", "CreateTrainingJob", "input"))
        if report.has_errors():
            lines = report.generate_report().splitlines()
            raise _ApiError("ValidationException", "; ".join(line.strip() for line in lines[1:] or lines))
        name = request["TrainingJobName"]
        if not TRAINING_JOB_NAME.match(name):
            raise _ApiError(
                "ValidationException",
                f"1 validation error detected: Value '{name}' at 'trainingJobName' failed to satisfy constraint: "
                "Member must satisfy regular expression pattern: ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}",
            )
        for required in ("AlgorithmSpecification", "ResourceConfig"):
            if required not in request:
                raise _ApiError("ValidationException", f"{required} is required for a training job")
        stopping = request.get("StoppingCondition") or {}
        max_runtime = stopping.get("MaxRuntimeInSeconds", DEFAULT_MAX_RUNTIME_S)
        max_wait = stopping.get("MaxWaitTimeInSeconds")
        if max_runtime > MAX_RUNTIME_LIMIT_S:
            raise _ApiError(
                "ValidationException", f"MaxRuntimeInSeconds must be less than or equal to {MAX_RUNTIME_LIMIT_S}"
            )
        if max_wait is not None and not request.get("EnableManagedSpotTraining"):
            raise _ApiError(
                "ValidationException",
                "Invalid MaxWaitTimeInSeconds. It is only supported when EnableManagedSpotTraining is set to true",
            )
        if max_wait is not None and max_wait < max_runtime:
            raise _ApiError(
                "ValidationException",
                "Invalid MaxWaitTimeInSeconds. It must be greater than or equal to MaxRuntimeInSeconds",
            )
        return request

    def _create_training(self, request: dict[str, Any], created: float, sjob: _ServiceJob) -> _TrainingJob:
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
            sum(other.plan.seconds_in({"Training"}, created) for other in self._trainings.values() if other.key == key)
            if key
            else 0.0
        )
        interval = _checkpoint_interval(request.get("Environment") or {})
        injected = self._failures.popleft() if self._failures else None
        plan = self._plan(
            created,
            spot=spot,
            behaviour=behaviour,
            restored=restored,
            trained_before=trained_before,
            interval=interval,
            checkpointed=key is not None,
            injected=injected,
        )
        stopping = request.get("StoppingCondition") or {}
        limits: list[tuple[float, str, str]] = []
        max_runtime = float(stopping.get("MaxRuntimeInSeconds", DEFAULT_MAX_RUNTIME_S))
        at = plan.when_seconds_in(_BILLED, max_runtime)
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
                plan = self._cut(
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
            plan = self._cut(
                plan,
                created + timeout,
                behaviour=behaviour,
                checkpointed=key is not None,
                final="Stopped",
                message="Training job stopped",
                kind="timeout",
            )
        job = _TrainingJob(
            name, self._training_arn(name), request, key, spot, created, behaviour, plan, restored_step, sjob
        )
        self._trainings[name.lower()] = job
        return job

    def _plan(
        self,
        created: float,
        *,
        spot: bool,
        behaviour: TrainingBehaviour,
        restored: float,
        trained_before: float,
        interval: float,
        checkpointed: bool,
        injected: str | None,
    ) -> _Plan:
        """The job's timeline if nothing stops it: start (waiting out capacity gaps), train with
        periodic checkpoints, lose work back to the last one at each spot interruption, restart,
        and end Completed (after uploading) or Failed (fail_after). A start needs spot capacity for
        the whole start delay: a gap that begins before Training only delays it."""
        weather = self.weather
        delay = weather.spot_start_delay if spot else weather.on_demand_start_delay
        segments: list[_Segment] = []
        if injected is not None:
            segments.append(_Segment("Starting", created, _LAUNCHING))
            end = created + min(STARTUP_FAILURE_SECONDS, delay)
            return _Plan(segments, end, "Failed", "Failed", injected, failure_reason=injected)
        gaps = _merged(weather.capacity_gaps) if spot else []
        total = behaviour.total_steps
        marks = deque(sorted(m for m in weather.interruptions if m > trained_before + EPS)) if spot else deque()
        progress, saved, trained = restored, restored, trained_before
        checkpoints: list[tuple[float, int]] = []
        interruptions: list[tuple[float, float]] = []
        since, visible_from = created, created  # capacity wanted from `since`; Starting shown from `visible_from`
        while True:
            start = _capacity_from(gaps, since, delay)
            if start > visible_from + EPS:
                segments.append(_Segment("Starting", visible_from, _WAITING))
            segments.append(_Segment("Starting", max(start, visible_from), _LAUNCHING))
            segments.append(_Segment("Downloading", start + delay - min(DOWNLOAD_SECONDS, delay / 2), _DOWNLOADING))
            t = start + delay
            segments.append(_Segment("Training", t, _TRAINING, progress))
            remaining = behaviour.duration - progress
            to_fail = math.inf if behaviour.fail_after is None else max(0.0, behaviour.fail_after - trained)
            to_mark = marks[0] - trained if marks else math.inf
            to_gap = _next_gap_start(gaps, t) - t
            run = max(0.0, min(remaining, to_fail, to_mark, to_gap))
            completes = remaining <= run + EPS
            k = 1
            while checkpointed and k * interval <= run + EPS and not (completes and k * interval >= remaining - EPS):
                step = _step(behaviour, progress + k * interval)
                checkpoints.append((t + k * interval, step))
                saved = step / total * behaviour.duration
                k += 1
            t, progress, trained = t + run, progress + run, trained + run
            if completes:
                if checkpointed:
                    checkpoints.append((t, total))
                segments.append(_Segment("Uploading", t, _UPLOADING))
                end = t + behaviour.upload_seconds
                return _Plan(
                    segments, end, "Completed", "Completed", "Training job completed", None, checkpoints, interruptions
                )
            if to_fail <= run + EPS:
                return _Plan(
                    segments, t, "Failed", "Failed", _ALGORITHM_ERROR, _ALGORITHM_ERROR, checkpoints, interruptions
                )
            while marks and marks[0] <= trained + EPS:
                marks.popleft()
            interruptions.append((t, progress - saved))
            progress = saved
            segments.append(_Segment("Interrupted", t, _INTERRUPTED))
            delay = weather.spot_start_delay if weather.restart_delay is None else weather.restart_delay
            since, visible_from = t, t + min(INTERRUPTED_SECONDS, delay / 4)

    @staticmethod
    def _cut(
        plan: _Plan, at: float, *, behaviour: TrainingBehaviour, checkpointed: bool, final: str, message: str, kind: str
    ) -> _Plan:
        """The plan stopped at `at`: training saves once more on SIGTERM, later events vanish."""
        segments = [s for s in plan.segments if s.start < at - EPS] or plan.segments[:1]
        checkpoints = [c for c in plan.checkpoints if c[0] <= at + EPS]
        current = segments[-1]
        if current.status == "Training" and checkpointed:
            step = _step(behaviour, current.progress + at - current.start)
            if not checkpoints or checkpoints[-1][0] < at - EPS:
                checkpoints.append((at, step))
        interruptions = [i for i in plan.interruptions if i[0] < at - EPS]
        if kind in ("user", "terminate", "timeout"):
            segments.append(_Segment("Stopping", at, "Stopping the training job"))
            return _Plan(
                segments, at + STOPPING_SECONDS, "Stopped", "Stopped", message, None, checkpoints, interruptions, kind
            )
        return _Plan(segments, at, "Stopped", final, message, None, checkpoints, interruptions, kind)

    # --- stopping ---------------------------------------------------------------------------

    def _stop(self, job: _TrainingJob, kind: str) -> None:
        """SIGTERM now: the plan ends after Stopping, and its last checkpoint is written at once."""
        job.plan = self._cut(
            job.plan,
            self._now,
            behaviour=job.behaviour,
            checkpointed=job.key is not None,
            final="Stopped",
            message="Training job stopped",
            kind=kind,
        )
        self._advance()

    def _training_status(self, job: _TrainingJob, now: float) -> tuple[str, str]:
        """(TrainingJobStatus, SecondaryStatus) at `now`."""
        plan = job.plan
        if plan.end <= now + EPS:
            return plan.status, plan.final
        secondary = plan.segment_at(now).status
        return ("Stopping" if secondary == "Stopping" else "InProgress"), secondary

    # --- Batch operations -------------------------------------------------------------------

    def _queue(self, name_or_arn: str) -> _Queue | None:
        return next((q for q in self._queues.values() if name_or_arn in (q.name, q.arn)), None)

    def _serves_queues(self, body: dict[str, Any]) -> bool:
        names = body.get("jobQueues") or []
        return any(self._queue(n) for n in names) if names else bool(self._queues)

    def _find(self, job_id: str | None) -> _ServiceJob:
        job = self._service_jobs.get(job_id or "") or next(
            (j for j in self._service_jobs.values() if j.arn == job_id), None
        )
        if job is None:
            raise _ApiError("ClientException", f"Job {job_id} not found")
        return job

    def _SubmitServiceJob(self, body: dict[str, Any]) -> dict[str, Any]:
        token = body.get("clientToken")
        request = {k: v for k, v in body.items() if k != "clientToken"}
        if token is not None and token in self._tokens:
            earlier, job_id = self._tokens[token]
            if earlier != request:
                raise _ApiError("ClientException", f"clientToken {token} was already used with different parameters")
            job = self._service_jobs[job_id]
            return {"jobArn": job.arn, "jobName": job.name, "jobId": job.job_id}
        queue = self._validate_submit(body)
        job_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"standin/{self.account}/service-job/{len(self._service_jobs)}"))
        now, delay = self._now, self.weather.queue_delay
        job = _ServiceJob(
            job_id=job_id,
            name=body["jobName"],
            arn=f"arn:aws:batch:{self.region}:{self.account}:service-job/{job_id}",
            queue=queue,
            created=now,
            request=request,
            runnable_at=now + delay / 2,
            next_attempt_at=now + delay,
        )
        self._service_jobs[job_id] = job
        if token is not None:
            self._tokens[token] = (request, job_id)
        return {"jobArn": job.arn, "jobName": job.name, "jobId": job.job_id}

    def _validate_submit(self, body: dict[str, Any]) -> _Queue:
        """SubmitServiceJob's own checks (Batch does not look inside the payload)."""

        def reject(message: str) -> _ApiError:
            return _ApiError("ClientException", message)

        for name in ("jobName", "jobQueue", "serviceJobType", "serviceRequestPayload"):
            if not body.get(name):
                raise reject(f"{name} is required")
        if not BATCH_JOB_NAME.match(body["jobName"]):
            raise reject(
                "Job name must start with a letter or number and contain up to 128 letters (uppercase and "
                "lowercase), numbers, hyphens, and underscores"
            )
        if body["serviceJobType"] != "SAGEMAKER_TRAINING":
            raise reject(f"serviceJobType {body['serviceJobType']} is not supported")
        queue = self._queue(body["jobQueue"])
        if queue is None:
            raise reject(f"Job queue {body['jobQueue']} does not exist")
        if queue.state != "ENABLED" or queue.status != "VALID":
            raise reject(f"Job queue {queue.name} is {queue.state}/{queue.status}: it does not accept jobs")
        priority = body.get("schedulingPriority")
        if priority is not None and not 0 <= priority <= 9999:
            raise reject("schedulingPriority must be between 0 and 9999")
        retry = body.get("retryStrategy")
        if retry is not None:
            if not 1 <= int(retry.get("attempts", 0)) <= 10:
                raise reject("retryStrategy.attempts must be between 1 and 10")
            rules = retry.get("evaluateOnExit") or []
            if len(rules) > 5:
                raise reject("retryStrategy.evaluateOnExit can have at most 5 entries")
            if any(str(rule.get("action", "")).upper() not in ("RETRY", "EXIT") for rule in rules):
                raise reject("retryStrategy.evaluateOnExit[].action must be RETRY or EXIT")
        if queue.scheduling_policy_arn and not body.get("shareIdentifier"):
            raise reject(f"shareIdentifier is required: job queue {queue.name} has a fair-share scheduling policy")
        if len(body.get("tags") or {}) > 50:
            raise reject("A job can have at most 50 tags")
        if len(body.get("clientToken") or "") > 64:
            raise reject("clientToken can be at most 64 characters")
        return queue

    def _batch_status(self, job: _ServiceJob, now: float) -> tuple[str, str | None]:
        if job.final_status is not None:
            return job.final_status, job.final_reason
        if job.next_attempt_at is not None:
            if not job.attempts and now < job.runnable_at - EPS:
                return "SUBMITTED", None
            return "RUNNABLE", job.waiting_reason
        started = {s.status for s in job.attempts[-1].plan.segments if s.start <= now + EPS}
        if "Training" in started:
            return "RUNNING", None
        return ("STARTING" if "Downloading" in started else "SCHEDULED"), None

    def _attempt_reason(self, attempt: _TrainingJob) -> str | None:
        plan = attempt.plan
        if plan.status == "Completed":
            return None
        if plan.stop_kind == "terminate":
            return f"Terminated: {attempt.service_job.terminate_reason}"
        if plan.stop_kind == "timeout":
            return "Job attempt duration exceeded timeout"
        return SAGEMAKER_PREFIX + self._reason_of(plan)

    def _times(self, job: _ServiceJob, now: float) -> dict[str, int]:
        times = {"createdAt": _ms(job.created)}
        if job.attempts:
            times["scheduledAt"] = _ms(job.attempts[0].created)
        starts = [
            s.start for a in job.attempts for s in a.plan.segments if s.status == "Downloading" and s.start <= now
        ]
        if starts:
            times["startedAt"] = _ms(min(starts))
        if job.final_status is not None:
            times["stoppedAt"] = _ms(job.final_at)
        return times

    def _DescribeServiceJob(self, body: dict[str, Any]) -> dict[str, Any]:
        job, now = self._find(body.get("jobId")), self._now
        status, reason = self._batch_status(job, now)
        attempts = []
        for attempt in job.attempts:
            entry: dict[str, Any] = {
                "serviceResourceId": {"name": "TrainingJobArn", "value": attempt.arn},
                "startedAt": _ms(attempt.created),
            }
            if attempt.handled:
                entry["stoppedAt"] = _ms(attempt.plan.end)
                if (attempt_reason := self._attempt_reason(attempt)) is not None:
                    entry["statusReason"] = attempt_reason
            attempts.append(entry)
        described: dict[str, Any] = {
            "jobId": job.job_id,
            "jobName": job.name,
            "jobArn": job.arn,
            "jobQueue": job.queue.arn,
            "serviceJobType": "SAGEMAKER_TRAINING",
            "serviceRequestPayload": job.request["serviceRequestPayload"],
            "status": status,
            "attempts": attempts,
            "isTerminated": job.terminate_reason is not None,
            **self._times(job, now),
        }
        if reason is not None:
            described["statusReason"] = reason
        if attempts:
            described["latestAttempt"] = {"serviceResourceId": attempts[-1]["serviceResourceId"]}
        for name in ("retryStrategy", "schedulingPriority", "shareIdentifier", "tags", "timeoutConfig"):
            if job.request.get(name) is not None:
                described[name] = job.request[name]
        return described

    def _ListServiceJobs(self, body: dict[str, Any]) -> dict[str, Any]:
        now = self._now
        jobs = list(self._service_jobs.values())
        if body.get("jobQueue"):
            queue = self._queue(body["jobQueue"])
            jobs = [j for j in jobs if queue is not None and j.queue is queue]
        filters = body.get("filters") or []
        names = {f.get("name") for f in filters}
        status_filter = body.get("jobStatus") or "RUNNING"
        if status_filter not in _BATCH_STATUSES:
            raise _ApiError("ClientException", f"jobStatus {status_filter} is not valid")
        summaries = []
        for job in sorted(jobs, key=lambda j: (-j.created, j.job_id)):
            status, reason = self._batch_status(job, now)
            if (not filters or names <= {"SHARE_IDENTIFIER"}) and status != status_filter:
                continue
            if not all(_filter_matches(f, job, status) for f in filters):
                continue
            summary: dict[str, Any] = {
                "jobId": job.job_id,
                "jobName": job.name,
                "jobArn": job.arn,
                "serviceJobType": "SAGEMAKER_TRAINING",
                "status": status,
                "isTerminated": job.terminate_reason is not None,
                **self._times(job, now),
            }
            if reason is not None:
                summary["statusReason"] = reason
            if job.request.get("shareIdentifier"):
                summary["shareIdentifier"] = job.request["shareIdentifier"]
            if job.attempts:
                summary["latestAttempt"] = {
                    "serviceResourceId": {"name": "TrainingJobArn", "value": job.attempts[-1].arn}
                }
            summaries.append(summary)
        size = int(body.get("maxResults") or 100)
        if not 1 <= size <= 100:
            raise _ApiError("ClientException", "maxResults must be between 1 and 100")
        offset = _decode_token(body.get("nextToken"))
        page: dict[str, Any] = {"jobSummaryList": summaries[offset : offset + size]}
        if offset + size < len(summaries):
            page["nextToken"] = base64.urlsafe_b64encode(json.dumps({"offset": offset + size}).encode()).decode()
        return page

    def _TerminateServiceJob(self, body: dict[str, Any]) -> dict[str, Any]:
        job = self._find(body.get("jobId"))
        if not body.get("reason"):
            raise _ApiError("ClientException", "reason is required")
        if job.final_status is not None or job.terminate_reason is not None:
            return {}
        job.terminate_reason = str(body["reason"])
        if job.next_attempt_at is not None or not job.attempts:
            self._finish(job, "FAILED", self._now, f"Terminated: {job.terminate_reason}")
        elif self._training_status(job.attempts[-1], self._now)[0] == "InProgress":
            self._stop(job.attempts[-1], "terminate")
        return {}

    def _DescribeJobQueues(self, body: dict[str, Any]) -> dict[str, Any]:
        names = body.get("jobQueues") or []
        queues = [q for n in names if (q := self._queue(n))] if names else list(self._queues.values())
        described = []
        for queue in queues:
            entry: dict[str, Any] = {
                "jobQueueName": queue.name,
                "jobQueueArn": queue.arn,
                "state": queue.state,
                "status": queue.status,
                "statusReason": "JobQueue Healthy" if queue.status == "VALID" else "JobQueue is not valid",
                "priority": 1,
                "computeEnvironmentOrder": [],
                "serviceEnvironmentOrder": [
                    {
                        "order": 1,
                        "serviceEnvironment": f"arn:aws:batch:{self.region}:{self.account}:"
                        f"service-environment/{queue.name}",
                    }
                ],
                "jobQueueType": "SAGEMAKER_TRAINING",
                "tags": {},
                "jobStateTimeLimitActions": [],
            }
            if queue.scheduling_policy_arn:
                entry["schedulingPolicyArn"] = queue.scheduling_policy_arn
            described.append(entry)
        return {"jobQueues": described}

    # --- SageMaker operations ---------------------------------------------------------------

    def _DescribeTrainingJob(self, body: dict[str, Any]) -> dict[str, Any]:
        job, now = self._trainings[body["TrainingJobName"].lower()], self._now
        plan, request = job.plan, job.request
        status, secondary = self._training_status(job, now)
        members = _shape("sagemaker", "DescribeTrainingJob", "output").members
        described: dict[str, Any] = {k: v for k, v in request.items() if k in members and k != "TrainingJobName"}
        stopping = dict(request.get("StoppingCondition") or {})
        stopping.setdefault("MaxRuntimeInSeconds", DEFAULT_MAX_RUNTIME_S)
        transitions = _transitions(plan, now)
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
        )
        downloads = [s.start for s in plan.segments if s.status == "Downloading" and s.start <= now + EPS]
        if downloads:
            described["TrainingStartTime"] = downloads[0]
        if plan.end <= now + EPS:
            training = round(plan.seconds_in(_BILLED, plan.end))
            described["TrainingEndTime"] = plan.end
            described["TrainingTimeInSeconds"] = training
            described["BillableTimeInSeconds"] = (
                round(training * self.weather.spot_price_ratio) if job.spot else training
            )
            if plan.failure_reason:
                described["FailureReason"] = plan.failure_reason
            if plan.status == "Completed":
                output = request["OutputDataConfig"]["S3OutputPath"].rstrip("/")
                described["ModelArtifacts"] = {"S3ModelArtifacts": f"{output}/{job.name}/output/model.tar.gz"}
        return described

    def _StopTrainingJob(self, body: dict[str, Any]) -> dict[str, Any]:
        job = self._trainings[body["TrainingJobName"].lower()]
        status, _ = self._training_status(job, self._now)
        if status != "InProgress":
            raise _ApiError(
                "ValidationException", f"The request was rejected because the training job is in status {status}."
            )
        self._stop(job, "user")
        return {}

    # --- views ------------------------------------------------------------------------------

    def _view(self, job: _ServiceJob, now: float) -> ServiceJobView:
        status, reason = self._batch_status(job, now)
        attempts = tuple(self._training_view(a, now) for a in job.attempts)
        if attempts:
            capacity = attempts[-1].capacity
        else:
            try:
                spot = bool(json.loads(job.request["serviceRequestPayload"]).get("EnableManagedSpotTraining"))
            except (ValueError, AttributeError):
                spot = False
            capacity = "spot" if spot else "on-demand"
        return ServiceJobView(
            job.job_id, job.name, job.arn, job.queue.name, capacity, _dt(job.created), status, reason, attempts
        )

    def _training_view(self, job: _TrainingJob, now: float) -> TrainingJobView:
        plan = job.plan
        status, secondary = self._training_status(job, now)
        training = plan.seconds_in(_BILLED, now)
        return TrainingJobView(
            name=job.name,
            arn=job.arn,
            capacity="spot" if job.spot else "on-demand",
            created_at=_dt(job.created),
            status=status,
            secondary_status=secondary,
            ended_at=_dt(plan.end) if plan.end <= now + EPS else None,
            failure_reason=plan.failure_reason if plan.end <= now + EPS else None,
            training_seconds=training,
            billable_seconds=training * self.weather.spot_price_ratio if job.spot else training,
            interrupted_at=tuple(_dt(t) for t, _ in plan.interruptions if t <= now + EPS),
            lost_work_seconds=sum((lost for t, lost in plan.interruptions if t <= now + EPS), 0.0),
            restored_from_step=job.restored_from_step,
        )


# --- helpers --------------------------------------------------------------------------------


def _json_body(request: AWSPreparedRequest) -> dict[str, Any]:
    body = request.body
    if body is None or body in (b"", ""):
        return {}
    if hasattr(body, "read"):
        return {}  # streaming bodies belong to no operation the stand-in serves
    parsed = json.loads(body.decode() if isinstance(body, bytes) else str(body))
    return parsed if isinstance(parsed, dict) else {}


def _step(behaviour: TrainingBehaviour, progress: float) -> int:
    """The step a checkpoint saves after `progress` seconds of work (whole steps only)."""
    if behaviour.duration <= 0:
        return behaviour.total_steps
    return min(behaviour.total_steps, math.floor(progress / behaviour.duration * behaviour.total_steps + EPS))


def _checkpoint_interval(environment: dict[str, Any]) -> float:
    """Seconds between checkpoints: the training code reads Spotline's variable, else 15 minutes."""
    try:
        minutes = float(environment.get(CHECKPOINT_INTERVAL_ENV) or 0)
    except ValueError:
        minutes = 0
    return minutes * 60 if minutes > 0 else DEFAULT_CHECKPOINT_INTERVAL_S


def _merged(gaps: list[tuple[datetime, datetime]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted((a.timestamp(), b.timestamp()) for a, b in gaps if b > a):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _capacity_from(gaps: list[tuple[float, float]], t: float, length: float) -> float:
    """The earliest time from `t` with spot capacity for `length` seconds in a row."""
    candidate = t
    for start, end in gaps:
        if end <= candidate + EPS:
            continue
        if start >= candidate + length - EPS:
            break
        candidate = end
    return candidate


def _next_gap_start(gaps: list[tuple[float, float]], t: float) -> float:
    return next((start for start, _ in gaps if start >= t - EPS), math.inf)


def _transitions(plan: _Plan, now: float) -> list[dict[str, Any]]:
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


def _filter_matches(rule: dict[str, Any], job: _ServiceJob, status: str) -> bool:
    name, values = rule.get("name"), [str(v) for v in rule.get("values") or []]
    if not values:
        return True
    value = values[0]
    if name == "JOB_NAME":
        if value.endswith("*"):
            return job.name.lower().startswith(value[:-1].lower())
        return job.name.lower() == value.lower()
    if name == "JOB_STATUS":
        return status in values
    if name == "SHARE_IDENTIFIER":
        return job.request.get("shareIdentifier") in values
    if name == "BEFORE_CREATED_AT":
        return _ms(job.created) < int(value)
    if name == "AFTER_CREATED_AT":
        return _ms(job.created) > int(value)
    raise _ApiError("ClientException", f"Filter {name} is not supported")


def _decode_token(token: str | None) -> int:
    if not token:
        return 0
    try:
        return int(json.loads(base64.urlsafe_b64decode(token.encode()))["offset"])
    except (ValueError, KeyError, TypeError) as error:
        raise _ApiError("ClientException", "nextToken is not valid") from error
