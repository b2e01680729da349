"""AWS Batch service jobs (SAGEMAKER_TRAINING): submit, describe, list, terminate, their status.

Batch accepts a service job without looking inside its payload, hands the payload to SageMaker
(one training job per attempt), and decides from each attempt's end whether the job succeeded,
is retried or failed, as the AWS Batch user guide documents it:

- "Service job retry strategies": "When a SageMaker Training job fails due to insufficient
  capacity, AWS Batch retries the job automatically until capacity becomes available", and
  "these capacity-based retries don't consume your configured retry attempts". The job is back
  in RUNNABLE meanwhile, its statusReason CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY ("Jobs stuck in
  RUNNABLE due to capacity": a training job whose FailureReason begins with CapacityError).
- Other failures follow `retryStrategy`: the first `evaluateOnExit` rule whose `onStatusReason`
  matches "Received status from SageMaker: <reason>" decides RETRY or EXIT, and `attempts` is "the
  number of times to move a service job to RUNNABLE status" (API reference, ServiceJobRetryStrategy).
- Every retry is a new SageMaker training job: `attempts[]` grows, the latest is the current one.

How long a retried job stays RUNNABLE is `SpotWeather.requeue_wait` (capacity returning, the
scheduler picking the job up again).
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from spotline_dev.standin.batch_capacity import admit, fits, instances_of
from spotline_dev.standin.batch_queues import JobQueues, Queue
from spotline_dev.standin.clock import EPS, ObservedTime, dt, ms
from spotline_dev.standin.http_answers import ApiError
from spotline_dev.standin.spot_weather import SpotWeather
from spotline_dev.standin.training_jobs import SageMakerTrainingJobs, TrainingJob, TrainingJobView
from spotline_dev.standin.training_timeline import Plan

SAGEMAKER_PREFIX = "Received status from SageMaker: "
# "Jobs stuck in RUNNABLE due to capacity": the statusReason while the job waits for capacity.
CAPACITY_REASON = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Unable to provision requested compute resources"

_BATCH_STATUSES = {"SUBMITTED", "PENDING", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING", "SUCCEEDED", "FAILED"}


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


@dataclass
class ServiceJob:
    job_id: str
    name: str
    arn: str
    queue: Queue
    created: float
    request: dict[str, Any]
    runnable_at: float
    next_attempt_at: float | None
    attempts: list[TrainingJob] = field(default_factory=list)
    counted_attempts: int = 0  # attempts that use up retryStrategy.attempts (capacity retries do not)
    final_status: str | None = None
    final_at: float = 0.0
    final_reason: str | None = None
    terminate_reason: str | None = None
    terminated_at: float | None = None  # when TerminateServiceJob was called
    instances: int = 1  # what it holds of the queue's capacity while an attempt runs
    sequence: int = 0  # submission order (jobs submitted at the same moment keep it)
    awaiting_capacity: bool = False  # RUNNABLE until the queue's capacity lets it start (batch_capacity)

    def attempts_at(self, t: float) -> list[TrainingJob]:
        """The attempts Batch had started by `t` (every attempt, once the stand-in is past `t`)."""
        return [a for a in self.attempts if a.created <= t + EPS]

    def final_at_or_before(self, t: float) -> bool:
        return self.final_status is not None and self.final_at <= t + EPS

    @property
    def retry_attempts(self) -> int:
        return int((self.request.get("retryStrategy") or {}).get("attempts", 1))


class ServiceJobs:
    """Batch service jobs, on the shared clock; their attempts run as SageMaker training jobs."""

    def __init__(
        self,
        clock: ObservedTime,
        weather: SpotWeather,
        queues: JobQueues,
        trainings: SageMakerTrainingJobs,
        *,
        account: str,
        region: str,
    ) -> None:
        self.clock, self.weather, self.queues, self.trainings = clock, weather, queues, trainings
        self.account, self.region = account, region
        self.jobs: dict[str, ServiceJob] = {}
        self._tokens: dict[str, dict[str, Any]] = {}  # clientToken -> the request it came with

    # --- Batch's decisions ------------------------------------------------------------------

    def training_ended(self, job: TrainingJob) -> None:
        """Batch's view of an attempt that ended: success, retry (capacity or retryStrategy) or
        failure; the instances it held go to the jobs waiting for them."""
        self._decide_after(job)
        admit(list(self.jobs.values()), job.service_job.queue.name, job.plan.end)

    def _decide_after(self, job: TrainingJob) -> None:
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
            sjob.next_attempt_at = end + self.weather.requeue_delay
            return
        if sjob.counted_attempts < sjob.retry_attempts and self._retry_action(sjob, reason) == "RETRY":
            sjob.next_attempt_at = end + self.weather.requeue_delay
            return
        self._finish(sjob, "FAILED", end, reason)

    @staticmethod
    def _reason_of(plan: Plan) -> str:
        if plan.failure_reason:
            return plan.failure_reason
        return f"{plan.final}: {plan.message}"

    @staticmethod
    def _retry_action(sjob: ServiceJob, reason: str) -> str:
        """First evaluateOnExit entry whose onStatusReason matches wins; none matching means RETRY."""
        for rule in (sjob.request.get("retryStrategy") or {}).get("evaluateOnExit") or []:
            if _glob(rule.get("onStatusReason", "*"), reason):
                return str(rule.get("action", "RETRY")).upper()
        return "RETRY"

    @staticmethod
    def _finish(sjob: ServiceJob, status: str, at: float, reason: str | None) -> None:
        sjob.final_status, sjob.final_at, sjob.final_reason = status, at, reason
        sjob.next_attempt_at, sjob.awaiting_capacity = None, False

    def start_attempt(self, sjob: ServiceJob) -> None:
        """Batch hands the payload to SageMaker (CreateTrainingJob) at SCHEDULED."""
        assert sjob.next_attempt_at is not None
        t = sjob.next_attempt_at
        sjob.next_attempt_at = None
        if not fits(sjob, list(self.jobs.values()), t):
            sjob.awaiting_capacity = True  # RUNNABLE until admitted (batch_capacity.admit)
            return
        try:
            request = self.trainings.validated_payload(sjob.request["serviceRequestPayload"])
            number = len(sjob.attempts) + 1
            if number > 1:
                suffix = f"-{number}"
                request["TrainingJobName"] = request["TrainingJobName"][: 63 - len(suffix)] + suffix
            name = request["TrainingJobName"]
            if name.lower() in self.trainings.jobs:
                raise ApiError(
                    "ResourceInUse",
                    "Training job names must be unique within an AWS account and region, and a training job "
                    f"with this name already exists ({self.trainings.training_arn(name)})",
                )
        except ApiError as error:
            self._finish(sjob, "FAILED", t, f"{SAGEMAKER_PREFIX}{error.code}: {error.message}")
            return
        job = self.trainings.create_training(request, t, sjob)
        sjob.attempts.append(job)
        if not (job.plan.failure_reason or "").startswith("CapacityError"):
            sjob.counted_attempts += 1

    # --- Batch operations -------------------------------------------------------------------

    def _find(self, job_id: str | None) -> ServiceJob:
        job = self.jobs.get(job_id or "") or next((j for j in self.jobs.values() if j.arn == job_id), None)
        if job is None:
            raise ApiError("ClientException", f"Job {job_id} not found")
        return job

    def submit_service_job(self, body: dict[str, Any]) -> dict[str, Any]:
        token = body.get("clientToken")
        request = {k: v for k, v in body.items() if k != "clientToken"}
        if token is not None and token in self._tokens:
            # AWS Batch API reference, SubmitServiceJob, clientToken: "If this parameter is
            # specified and two submit requests with identical payloads and clientTokens are
            # received, these requests are considered the same request and the second request is
            # rejected." The reference names no error of its own for it, so it is the operation's
            # ClientException (HTTP 400); the messages are the stand-in's. The reference says
            # nothing of the same token with other parameters: rejected too, for another reason.
            if self._tokens[token] != request:
                raise ApiError("ClientException", f"clientToken {token} was already used with different parameters")
            raise ApiError(
                "ClientException",
                f"clientToken {token} was already used: the request is the same as an earlier one and is rejected",
            )
        queue = self.queues.validate_submit(body)
        job_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"standin/{self.account}/service-job/{len(self.jobs)}"))
        now, delay = self.clock.now, self.weather.queue_delay
        job = ServiceJob(
            job_id=job_id,
            name=body["jobName"],
            arn=f"arn:aws:batch:{self.region}:{self.account}:service-job/{job_id}",
            queue=queue,
            created=now,
            request=request,
            runnable_at=now + delay / 2,
            next_attempt_at=now + delay,
            instances=instances_of(request),
            sequence=len(self.jobs),
        )
        self.jobs[job_id] = job
        if token is not None:
            self._tokens[token] = request
        return {"jobArn": job.arn, "jobName": job.name, "jobId": job.job_id}

    @staticmethod
    def batch_status(job: ServiceJob, t: float) -> tuple[str, str | None]:
        """(status, statusReason) at `t`, from what the job went through (valid for any `t` up to
        the stand-in's last advance; later plan cuts only ever change what follows them)."""
        if job.final_at_or_before(t):
            return str(job.final_status), job.final_reason
        attempts = job.attempts_at(t)
        if not attempts:
            return ("SUBMITTED" if t < job.runnable_at - EPS else "RUNNABLE"), None
        latest = attempts[-1].plan
        if latest.end <= t + EPS:  # Batch requeued the job after this attempt (retry or capacity)
            capacity = (latest.failure_reason or "").startswith("CapacityError")
            return "RUNNABLE", CAPACITY_REASON if capacity else None
        started = {s.status for s in latest.segments if s.start <= t + EPS}
        if "Training" in started:
            return "RUNNING", None
        return ("STARTING" if "Downloading" in started else "SCHEDULED"), None

    def _attempt_reason(self, attempt: TrainingJob) -> str | None:
        plan = attempt.plan
        if plan.status == "Completed":
            return None
        if plan.stop_kind == "terminate":
            return f"Terminated: {attempt.service_job.terminate_reason}"
        if plan.stop_kind == "timeout":
            return "Job attempt duration exceeded timeout"
        return SAGEMAKER_PREFIX + self._reason_of(plan)

    @staticmethod
    def _times(job: ServiceJob, now: float) -> dict[str, int]:
        times = {"createdAt": ms(job.created)}
        attempts = job.attempts_at(now)
        if attempts:
            times["scheduledAt"] = ms(attempts[0].created)
        starts = [s.start for a in attempts for s in a.plan.segments if s.status == "Downloading" and s.start <= now]
        if starts:
            times["startedAt"] = ms(min(starts))
        if job.final_at_or_before(now):
            times["stoppedAt"] = ms(job.final_at)
        return times

    def describe_service_job(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.describe(self._find(body.get("jobId")), self.clock.now)

    def describe(self, job: ServiceJob, now: float) -> dict[str, Any]:
        """DescribeServiceJob's answer as of `now` (any moment up to the stand-in's last advance)."""
        status, reason = self.batch_status(job, now)
        attempts = []
        for attempt in job.attempts_at(now):
            entry: dict[str, Any] = {
                "serviceResourceId": {"name": "TrainingJobArn", "value": attempt.arn},
                "startedAt": ms(attempt.created),
            }
            if attempt.handled and attempt.plan.end <= now + EPS:
                entry["stoppedAt"] = ms(attempt.plan.end)
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
            "isTerminated": job.terminated_at is not None and job.terminated_at <= now + EPS,
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

    def list_service_jobs(self, body: dict[str, Any]) -> dict[str, Any]:
        now = self.clock.now
        jobs = list(self.jobs.values())
        if body.get("jobQueue"):
            queue = self.queues.queue(body["jobQueue"])
            jobs = [j for j in jobs if queue is not None and j.queue is queue]
        filters = body.get("filters") or []
        names = {f.get("name") for f in filters}
        status_filter = body.get("jobStatus") or "RUNNING"
        if status_filter not in _BATCH_STATUSES:
            raise ApiError("ClientException", f"jobStatus {status_filter} is not valid")
        summaries = []
        for job in sorted(jobs, key=lambda j: (-j.created, j.job_id)):
            status, reason = self.batch_status(job, now)
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
            raise ApiError("ClientException", "maxResults must be between 1 and 100")
        offset = _decode_token(body.get("nextToken"))
        page: dict[str, Any] = {"jobSummaryList": summaries[offset : offset + size]}
        if offset + size < len(summaries):
            page["nextToken"] = base64.urlsafe_b64encode(json.dumps({"offset": offset + size}).encode()).decode()
        return page

    def tag_resource(self, body: dict[str, Any]) -> dict[str, Any]:
        """TagResource on a service job: the tags DescribeServiceJob shows from now on."""
        job = self._find(body["resourceArn"])
        job.request["tags"] = {**(job.request.get("tags") or {}), **body.get("tags", {})}
        return {}

    def terminate_service_job(self, body: dict[str, Any]) -> dict[str, Any]:
        job = self._find(body.get("jobId"))
        if not body.get("reason"):
            raise ApiError("ClientException", "reason is required")
        if job.final_status is not None or job.terminate_reason is not None:
            return {}
        job.terminate_reason, job.terminated_at = str(body["reason"]), self.clock.now
        if job.next_attempt_at is not None or job.awaiting_capacity or not job.attempts:
            self._finish(job, "FAILED", self.clock.now, f"Terminated: {job.terminate_reason}")
        elif self.trainings.training_status(job.attempts[-1], self.clock.now)[0] == "InProgress":
            self.trainings.stop(job.attempts[-1], "terminate")
        return {}

    def update_service_job(self, body: dict[str, Any]) -> dict[str, Any]:
        """UpdateServiceJob: a new schedulingPriority (0 to 9999, API reference) for a job not yet
        ended; a job waiting for capacity is admitted by it from now on (batch_capacity)."""
        job = self._find(body.get("jobId"))
        priority = body.get("schedulingPriority")
        if not isinstance(priority, int) or not 0 <= priority <= 9999:
            raise ApiError("ClientException", "schedulingPriority must be between 0 and 9999")
        if job.final_at_or_before(self.clock.now):
            raise ApiError("ClientException", f"Job {job.job_id} has ended ({job.final_status}): it cannot be updated")
        job.request["schedulingPriority"] = priority
        return {"jobArn": job.arn, "jobId": job.job_id, "jobName": job.name}

    # --- views ------------------------------------------------------------------------------

    def view(self, job: ServiceJob, now: float) -> ServiceJobView:
        status, reason = self.batch_status(job, now)
        attempts = tuple(self.trainings.training_view(a, now) for a in job.attempts)
        if attempts:
            capacity = attempts[-1].capacity
        else:
            try:
                spot = bool(json.loads(job.request["serviceRequestPayload"]).get("EnableManagedSpotTraining"))
            except (ValueError, AttributeError):
                spot = False
            capacity = "spot" if spot else "on-demand"
        return ServiceJobView(
            job.job_id, job.name, job.arn, job.queue.name, capacity, dt(job.created), status, reason, attempts
        )


def _glob(pattern: str, text: str) -> bool:
    """Batch's onStatusReason glob: `*` matches anything, everything else literally."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text, re.DOTALL) is not None


def _filter_matches(rule: dict[str, Any], job: ServiceJob, status: str) -> bool:
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
        return ms(job.created) < int(value)
    if name == "AFTER_CREATED_AT":
        return ms(job.created) > int(value)
    raise ApiError("ClientException", f"Filter {name} is not supported")


def _decode_token(token: str | None) -> int:
    if not token:
        return 0
    try:
        return int(json.loads(base64.urlsafe_b64decode(token.encode()))["offset"])
    except (ValueError, KeyError, TypeError) as error:
        raise ApiError("ClientException", "nextToken is not valid") from error
