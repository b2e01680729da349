"""The stand-in installed on a boto3 session: it routes the Batch, SageMaker and CloudWatch Logs
calls it serves to the job queues, service jobs, training jobs and their logs, after replaying
events up to the clock."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, cast
from urllib.parse import unquote, urlsplit

import boto3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse

from spotline_dev.harness.standin.base.clock import EPS, ObservedTime, dt
from spotline_dev.harness.standin.base.http_answers import (
    ApiError,
    StandInAnswerInvalid,
    answer,
    json_body,
    request_problems,
    shape,
    shape_problems,
    target_of,
)
from spotline_dev.harness.standin.base.records import ServiceJob, TrainingJob
from spotline_dev.harness.standin.base.spot_weather import SpotWeather, TrainingBehaviour
from spotline_dev.harness.standin.batch.jobs import ServiceJobs
from spotline_dev.harness.standin.batch.queues import JobQueues
from spotline_dev.harness.standin.batch.shares import QuotaShares
from spotline_dev.harness.standin.batch.views import ServiceJobView
from spotline_dev.harness.standin.sagemaker.ledger import LedgerEntry, RunLedger, runs_of
from spotline_dev.harness.standin.sagemaker.moto_objects import MotoObjects
from spotline_dev.harness.standin.sagemaker.training_jobs import CheckpointStore, SageMakerTrainingJobs
from spotline_dev.harness.standin.sagemaker.training_listing import list_training_jobs
from spotline_dev.harness.standin.sagemaker.training_logs import OPERATIONS as _LOGS_OPERATIONS
from spotline_dev.harness.standin.sagemaker.training_logs import TrainingLogs
from spotline_dev.harness.standin.sagemaker.transform_jobs import TransformJobs, TransformWeather
from spotline_dev.harness.standin.state_events import StateEvents

_BATCH_PATHS = {
    "/v1/submitservicejob": "SubmitServiceJob",
    "/v1/describeservicejob": "DescribeServiceJob",
    "/v1/listservicejobs": "ListServiceJobs",
    "/v1/terminateservicejob": "TerminateServiceJob",
    "/v1/updateservicejob": "UpdateServiceJob",
    "/v1/describejobqueues": "DescribeJobQueues",
    "/v1/createquotashare": "CreateQuotaShare",
    "/v1/describequotashare": "DescribeQuotaShare",
    "/v1/listquotashares": "ListQuotaShares",
    "/v1/updatequotashare": "UpdateQuotaShare",
    "/v1/deletequotashare": "DeleteQuotaShare",
}
_QUOTA_SHARE_OPERATIONS = {
    "CreateQuotaShare",
    "DescribeQuotaShare",
    "ListQuotaShares",
    "UpdateQuotaShare",
    "DeleteQuotaShare",
}
_BATCH_TAGS_PATH = "/v1/tags/"
_PLAN_OPERATIONS = {"DescribeTrainingPlan", "ListTrainingPlans"}
_TAG_OPERATIONS = {"AddTags", "ListTags"}  # tagging calls that name any SageMaker resource by its ARN
_TRANSFORM_OPERATIONS = {"CreateTransformJob", "DescribeTransformJob", "StopTransformJob", "ListTransformJobs"}
_SAGEMAKER_OPERATIONS = {
    "DescribeTrainingJob",
    "ListTrainingJobs",
    "StopTrainingJob",
    *_TAG_OPERATIONS,
    "CreateModel",
    *_PLAN_OPERATIONS,
    *_TRANSFORM_OPERATIONS,
}


class BatchSageMakerStandIn:
    """Batch service jobs, their SageMaker training jobs and the jobs' logs, on a clock, below boto3."""

    def __init__(
        self,
        clock: Callable[[], datetime],
        weather: SpotWeather,
        behaviour: Callable[[dict[str, Any]], TrainingBehaviour],
        checkpoint_store: CheckpointStore,
        *,
        account: str = "123456789012",
        region: str = "us-east-1",
        transform: TransformWeather | None = None,
    ) -> None:
        self.clock, self.weather, self.behaviour, self.store = clock, weather, behaviour, checkpoint_store
        self.account, self.region = account, region
        self._lock = threading.RLock()
        self._time = ObservedTime(clock)
        self._live_trainings: list[TrainingJob] = []  # jobs with events still to replay (_live_jobs)
        self._live_service_jobs: list[ServiceJob] = []
        self._seen = (0, 0)  # how many training and service jobs there were when _live_jobs last looked
        self._trainings = SageMakerTrainingJobs(
            self._time, weather, behaviour, checkpoint_store, account=account, region=region, advance=self._advance
        )
        self._queues = JobQueues(account=account, region=region)
        self._service_jobs = ServiceJobs(
            self._time, weather, self._queues, self._trainings, account=account, region=region
        )
        self._shares = QuotaShares(
            self._queues,
            changed=lambda queue: self._service_jobs.reschedule(queue, self._time.now),
            unshared=self._service_jobs.has_unshared_jobs,
            terminate=self._service_jobs.terminate_share_jobs,
        )
        self._logs = TrainingLogs(self._trainings, self._time, account=account, region=region)
        self.transform_records: dict[tuple[str, str], int] = {}  # (bucket, key) -> records: the sandbox's data
        objects = MotoObjects(account, region)
        self.transforms = TransformJobs(
            transform or TransformWeather(),
            account=account,
            region=region,
            models=objects.models,
            read=objects.read,
            write=objects.write,
            records_of=lambda bucket, key: self.transform_records.get((bucket, key)),
            listed=objects.keys,
        )
        self._operations: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "SubmitServiceJob": self._service_jobs.submit_service_job,
            "DescribeServiceJob": self._service_jobs.describe_service_job,
            "ListServiceJobs": self._service_jobs.list_service_jobs,
            "TerminateServiceJob": self._service_jobs.terminate_service_job,
            "UpdateServiceJob": self._service_jobs.update_service_job,
            "DescribeJobQueues": self._queues.describe_job_queues,
            "CreateQuotaShare": self._shares.create_quota_share,
            "DescribeQuotaShare": self._shares.describe_quota_share,
            "ListQuotaShares": self._shares.list_quota_shares,
            "UpdateQuotaShare": self._shares.update_quota_share,
            "DeleteQuotaShare": self._shares.delete_quota_share,
            "DescribeTrainingJob": self._trainings.describe_training_job,
            "ListTrainingJobs": lambda body: list_training_jobs(
                self._trainings.jobs.values(), body, lambda job: self._trainings.describe(job, self._time.now)
            ),
            "DescribeTrainingPlan": self._trainings.plans.describe_training_plan,
            "ListTrainingPlans": self._trainings.plans.list_training_plans,
            "StopTrainingJob": self._trainings.stop_training_job,
            "TagResource": self._service_jobs.tag_resource,
            "AddTags": self._add_tags,
            "ListTags": self._trainings.plans.list_tags,
            "FilterLogEvents": self._logs.filter_log_events,
            "DescribeLogStreams": self._logs.describe_log_streams,
            "GetLogEvents": self._logs.get_log_events,
            "CreateTransformJob": lambda body: self.transforms.create(body, self._time.now),
            "DescribeTransformJob": lambda body: self.transforms.describe(body["TransformJobName"], self._time.now),
            "StopTransformJob": lambda body: self.transforms.stop(body["TransformJobName"], self._time.now),
            "ListTransformJobs": lambda body: self.transforms.list_jobs(body, self._time.now),
        }
        self._events = StateEvents(self._service_jobs, self._trainings)
        self._throttles: dict[str, int] = {}
        self._serial = 0

    # --- set-up and controls ----------------------------------------------------------------

    def install(self, session: boto3.Session) -> None:
        """Answer Batch, SageMaker and CloudWatch Logs calls of clients created from `session` from now on.

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
        events.register_first(
            "before-send.logs", cast(Callable[..., None], self._on_logs), unique_id=f"standin-logs-{id(self)}"
        )

    def register_queue(
        self,
        name: str,
        *,
        state: str = "ENABLED",
        status: str = "VALID",
        scheduling_policy_arn: str | None = None,
        capacity: int | Mapping[str, int] | None = None,
        time_limits: list[dict[str, Any]] | None = None,
    ) -> str:
        """A SAGEMAKER_TRAINING job queue. With a scheduling policy (fair share), submissions
        without a shareIdentifier are refused, as Batch does; without one, shareIdentifier is not checked.
        With `capacity` (its service environment's capacity limits: an int in NUM_INSTANCES, or
        {instance type: instances} for quota management), jobs that do not fit wait RUNNABLE (see
        batch_capacity)."""
        with self._lock:
            return self._queues.register_queue(
                name,
                state=state,
                status=status,
                scheduling_policy_arn=scheduling_policy_arn,
                capacity=capacity,
                time_limits=time_limits or [],
            )

    def register_quota_share(
        self,
        queue_name_or_arn: str,
        share_name: str,
        capacity: Mapping[str, int],
        *,
        strategy: str = "LEND_AND_BORROW",
        borrow_limit: int = -1,
        in_share_preemption: bool = False,
        state: str = "ENABLED",
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """A quota share on a registered queue (which needs a scheduling policy), as CreateQuotaShare
        makes one; returns its ARN. `capacity`: {instance type: instances} (the API's
        capacityLimits); `strategy` RESERVE, LEND or
        LEND_AND_BORROW; `borrow_limit` a percentage of its limits (-1 unlimited, LEND_AND_BORROW
        only); `in_share_preemption` its preemptionConfiguration.inSharePreemption. From then on the
        queue is a quota management queue: every submission names one of its shares
        (quotaShareName), and admission, borrowing and preemption follow batch_capacity. The first
        share comes before any job is submitted to the queue. Raises ApiError (ClientException) for
        what CreateQuotaShare refuses."""
        with self._lock:
            self._advance()
            share = self._shares.register(
                queue_name_or_arn,
                share_name,
                capacity,
                strategy=strategy,
                borrow_limit=borrow_limit,
                in_share_preemption=in_share_preemption,
                state=state,
                tags=tags,
            )
            return share.arn

    def throttle(self, operation: str, times: int = 1) -> None:
        """The next `times` calls of `operation` answer ThrottlingException (HTTP 400)."""
        with self._lock:
            self._throttles[operation] = self._throttles.get(operation, 0) + times

    def fail_next_attempt(self, reason: str) -> None:
        """The next training job created fails at start-up with this FailureReason."""
        with self._lock:
            self._trainings.fail_next_attempt(reason)

    @property
    def jobs(self) -> list[ServiceJobView]:
        """Every service job as of clock() (reading them replays events up to now)."""
        with self._lock:
            now = self._advance()
            return [self._service_jobs.view(job, now) for job in self._service_jobs.jobs.values()]

    def ledger(self, *, by_service_job: bool = False) -> dict[str, RunLedger]:
        """What the stand-in billed, per run (`spotline_dev.harness.standin.sagemaker.ledger`) or per service job,
        as of clock()."""
        return runs_of(self.ledger_entries(), self.weather.on_demand_start_delay, by_service_job=by_service_job)

    def ledger_entries(self) -> list[LedgerEntry]:
        """Every training job as billed by clock(), in the order they were created."""
        with self._lock:
            return self._trainings.ledger(self._advance())

    # --- EventBridge events (see state_events) ----------------------------------------------

    def resource_tags(self, arn: str) -> dict[str, str] | None:
        """The tags of one of this region's service jobs, training jobs, transform jobs or training plans (what IAM
        reads as aws:ResourceTag/<key>), None when it is not one of ours."""
        with self._lock:
            for job in self._service_jobs.jobs.values():
                if job.arn == arn:
                    return dict(job.request.get("tags") or {})
            kind, _, name = arn.rpartition(":")[2].partition("/")
            if kind == "training-job" and (training := self._trainings.jobs.get(name.lower())) is not None:
                return {t["Key"]: t["Value"] for t in training.request.get("Tags") or []}
            if kind == "transform-job" and (transform := self.transforms.jobs.get(name)) is not None:
                return {t["Key"]: t["Value"] for t in transform.request.get("Tags") or []}
            if kind == "training-plan" and (plan := self._trainings.plans.by_arn(arn)) is not None:
                return dict(self._trainings.plans.tags[plan.name])
        return None

    def next_change_after(self, now: datetime) -> datetime | None:
        """The earliest moment strictly after `now` at which any service job's Batch status, or any
        training job's TrainingJobStatus or SecondaryStatus, changes if nothing else happens
        (None when nothing is scheduled to change). Used by the local stack to stop its virtual
        clock at each change. `now` should not be ahead of clock(): what follows from events
        between clock() and `now` (a retried job's next attempt) is not known yet."""
        with self._lock:
            self._advance()
            moments = [
                m
                for m in (
                    self._events.next_change_after(now.timestamp()),
                    self.transforms.next_change_after(now.timestamp()),
                )
                if m is not None
            ]
            return dt(min(moments)) if moments else None

    def state_change_events(self) -> list[dict[str, Any]]:
        """PutEvents entries for every change since the previous call (first call: since the job
        was submitted; no event for the submission itself, as Batch documents), in time order, each
        {"Source", "DetailType", "Detail" (a JSON string), "Resources": [arn], "Time": datetime}."""
        with self._lock:
            now = self._advance()
            return sorted(self._events.events_until(now) + self.transforms.events_until(now), key=lambda e: e["Time"])

    # --- botocore hooks ---------------------------------------------------------------------

    def _elsewhere(self, request: AWSPreparedRequest) -> bool:
        """A request to another region's endpoint (batch.<region>.amazonaws.com): another region's
        stand-in, or moto, answers it. Batch queues and SageMaker training jobs are regional."""
        return self.region not in urlsplit(request.url).netloc.split(".")

    def _on_batch(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        if self._elsewhere(request):
            return None
        path = urlsplit(request.url).path
        if path.startswith(_BATCH_TAGS_PATH) and request.method == "POST":
            arn = unquote(path.removeprefix(_BATCH_TAGS_PATH))
            with self._lock:
                if not any(job.arn == arn for job in self._service_jobs.jobs.values()):
                    return None  # not one of ours: moto answers
                return self._answer(request, "rest-json", "TagResource", {**json_body(request), "resourceArn": arn})
        operation = _BATCH_PATHS.get(path.rstrip("/").lower())
        if operation is None:
            return None
        body = json_body(request)
        with self._lock:
            if operation == "DescribeJobQueues" and not self._queues.serves_queues(body):
                return None
            if operation in _QUOTA_SHARE_OPERATIONS and not self._shares.serves(operation, body):
                return None  # not one of ours: moto answers
            return self._answer(request, "rest-json", operation, body)

    def _on_sagemaker(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        if self._elsewhere(request):
            return None
        operation = _target(request)
        if operation not in _SAGEMAKER_OPERATIONS:
            return None
        body = json_body(request)
        with self._lock:
            self._advance()  # a training job created by now is ours
            if operation in _PLAN_OPERATIONS | _TRANSFORM_OPERATIONS:  # the account's plans and transform jobs
                return self._answer(request, "json", operation, body)
            if operation in _TAG_OPERATIONS and self._trainings.plans.serves_tags(body):  # moto has no plans
                return self._answer(request, "json", operation, body)
            if operation == "ListTags":
                return None  # a model's, a training job's...: moto answers
            if operation == "ListTrainingJobs":  # every training job is one Batch started: ours
                return self._answer(request, "json", operation, body)
            if operation == "CreateModel":  # refused here as SageMaker would (transform_jobs), else moto's
                refusal = self.transforms.model_refusal(body)
                if refusal is None:
                    return None
                self._serial += 1
                return answer(request, "json", self._serial, refusal.raise_it)
            name = body.get("TrainingJobName") or str(body.get("ResourceArn", "")).rpartition("training-job/")[2]
            if str(name).lower() not in self._trainings.jobs:
                return None  # not one of ours: moto answers
            return self._answer(request, "json", operation, body)

    def _on_logs(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        """The training jobs' log group (see training_logs); other groups and streams go to moto."""
        if self._elsewhere(request):
            return None
        operation = _target(request)
        if operation not in _LOGS_OPERATIONS:
            return None
        body = json_body(request)
        with self._lock:
            self._advance()  # a training job created by now is ours
            if not self._logs.serves(body):
                return None
            return self._answer(request, "json", operation, body)

    def _add_tags(self, body: dict[str, Any]) -> dict[str, Any]:
        if self._trainings.plans.serves_tags(body):
            return self._trainings.plans.add_tags(body)
        return self._trainings.add_tags(body)

    def _answer(self, request: AWSPreparedRequest, protocol: str, operation: str, body: dict[str, Any]) -> AWSResponse:
        """Replay events up to now, then run the operation (unless it is throttled) and answer."""
        self._serial += 1
        return answer(request, protocol, self._serial, lambda: self._run(operation, body))

    def _run(self, operation: str, body: dict[str, Any]) -> dict[str, Any]:
        self._advance()
        if self._throttles.get(operation, 0) > 0:
            self._throttles[operation] -= 1
            # Stand-in: a throttle a test asked for (`throttle`); AWS documents no rate for these
            # operations, and botocore retries ThrottlingException as it would AWS's.
            raise ApiError("ThrottlingException", "Rate exceeded")
        service = _service_of(operation)
        refused = request_problems(body, shape(service, operation, "input"))
        if refused:
            # AWS: batch ClientException: "Another cause is specifying an identifier that's not valid."
            # AWS: logs InvalidParameterException: "A parameter is specified incorrectly."
            # Stand-in: SageMaker's model names no validation error shape; the API reference's Common
            # Errors list ValidationError, "The input fails to satisfy the constraints specified by an
            # AWS service", which SageMaker answers with the code ValidationException.
            raise ApiError(_VALIDATION_ERROR[service], "; ".join(refused[:5]))
        result = self._operations[operation](body)
        problems = shape_problems(result, shape(service, operation, "output"), operation)
        if problems:
            raise StandInAnswerInvalid("; ".join(problems[:5]))
        return result

    # --- simulation -------------------------------------------------------------------------

    def _advance(self) -> float:
        """Replay every event up to clock(), in time order: checkpoint writes, training job ends
        (Batch decides: done, retry, fail), new attempts."""
        now = self._time.advance()
        while True:
            best: tuple[float, int, int] | None = None
            action: Callable[[], None] | None = None
            trainings, service_jobs = self._live_jobs()
            for order, job in enumerate(trainings):
                if job.written < len(job.plan.checkpoints):
                    t = job.plan.checkpoints[job.written][0]
                    if t <= now + EPS and (best is None or (t, 0, order) < best):
                        best, action = (t, 0, order), self._bind(self._trainings.write_checkpoint, job)
                if job.world is not None and job.torn < len(job.plan.interruptions):
                    t = job.plan.interruptions[job.torn][0]
                    if t <= now + EPS and (best is None or (t, 0, order) < best):
                        best, action = (t, 0, order), self._bind(self._trainings.write_torn_step, job)
                if not job.handled and job.plan.end <= now + EPS and (best is None or (job.plan.end, 1, order) < best):
                    best, action = (job.plan.end, 1, order), self._bind(self._service_jobs.training_ended, job)
            for order, sjob in enumerate(service_jobs):
                when = sjob.next_attempt_at
                if when is not None and when <= now + EPS and (best is None or (when, 2, order) < best):
                    best, action = (when, 2, order), self._bind(self._service_jobs.start_attempt, sjob)
            if action is None:
                return now
            action()

    def _live_jobs(self) -> tuple[list[TrainingJob], list[ServiceJob]]:
        """The jobs that may still have events to replay, in creation order (the order that breaks
        ties): a training job that ended and was reported, its checkpoints all written, and a
        service job with its final status have none left. A month of a fleet holds hundreds of
        them, and every call replayed up to its time by looking at each (quadratic in the jobs)."""
        trainings, service_jobs = self._trainings.jobs, self._service_jobs.jobs
        if (len(trainings), len(service_jobs)) != self._seen:  # the dicts only grow, in creation order
            self._live_trainings += list(trainings.values())[self._seen[0] :]
            self._live_service_jobs += list(service_jobs.values())[self._seen[1] :]
            self._seen = (len(trainings), len(service_jobs))
        self._live_trainings = [
            j
            for j in self._live_trainings
            if not (j.handled and j.written >= len(j.plan.checkpoints) and j.torn >= _torn_steps(j))
        ]
        self._live_service_jobs = [j for j in self._live_service_jobs if j.final_status is None]
        return self._live_trainings, self._live_service_jobs

    @staticmethod
    def _bind(method: Callable[[Any], None], arg: Any) -> Callable[[], None]:
        return lambda: method(arg)


_VALIDATION_ERROR = {
    "batch": "ClientException",
    "sagemaker": "ValidationException",
    "logs": "InvalidParameterException",
}
"""The error each service answers a request its model refuses with (API references, Errors)."""


def _service_of(operation: str) -> str:
    if operation in _SAGEMAKER_OPERATIONS:
        return "sagemaker"
    return "logs" if operation in _LOGS_OPERATIONS else "batch"


def _target(request: AWSPreparedRequest) -> str:
    """The operation a JSON-protocol request names in X-Amz-Target (`Prefix.Operation`)."""
    return target_of(request).rpartition(".")[2]


def _torn_steps(job: TrainingJob) -> int:
    """The torn steps a job's interruptions leave (a distributed job's only)."""
    return len(job.plan.interruptions) if job.world is not None else 0
