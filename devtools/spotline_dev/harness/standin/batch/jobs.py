"""AWS Batch service jobs (SAGEMAKER_TRAINING): submit, describe, list, terminate, their status.

Batch accepts a service job without looking inside its payload, hands the payload to SageMaker
(one training job per attempt), and decides from each attempt's end whether the job succeeded,
is retried or failed, as the AWS Batch user guide documents it:

- "Service job retry strategies": "When a SageMaker Training job fails due to insufficient
  capacity, AWS Batch retries the job automatically until capacity becomes available", and
  "These capacity-based retries don't consume your configured retry attempts". The job is back
  in RUNNABLE meanwhile, its statusReason CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY ("Jobs stuck in
  RUNNABLE due to capacity": a training job whose FailureReason begins with CapacityError).
- Other failures follow `retryStrategy`: the first `evaluateOnExit` rule whose `onStatusReason`
  matches "Received status from SageMaker: <reason>" decides RETRY or EXIT, and `attempts` is "The
  number of times to move a service job to RUNNABLE status" (API reference, ServiceJobRetryStrategy).
- Every retry is a new SageMaker training job: `attempts[]` grows, the latest is the current one.
- In a queue with quota shares, admission, borrowing and preemption follow `batch_capacity`
  (quota_schedule); a preempted attempt (`batch_preemption`) puts the job back in RUNNABLE without
  using up its retryStrategy attempts. SubmitServiceJob's quotaShareName and
  preemptionConfiguration are kept and described; a quota share's job's capacityUsage is the
  payload's instances of its instance type (API reference, DescribeServiceJob: "The number of
  instances should be the same value as the serviceRequestPayload.InstanceCount field"; left out
  for other jobs, as in the project's sample event).

How long a retried job stays RUNNABLE is `SpotWeather.requeue_wait` (capacity returning, the
scheduler picking the job up again).
"""

from __future__ import annotations

import json
import re
from typing import Any

from spotline_dev.harness.standin.base.clock import EPS, ObservedTime, dt, ms
from spotline_dev.harness.standin.base.http_answers import ApiError
from spotline_dev.harness.standin.base.records import Queue, QuotaShare, ServiceJob, TrainingJob
from spotline_dev.harness.standin.base.spot_weather import SpotWeather
from spotline_dev.harness.standin.base.timeline import Plan
from spotline_dev.harness.standin.batch.capacity import (
    admit,
    fits,
    instance_type_of,
    instances_of,
    misconfiguration,
    quota_schedule,
)
from spotline_dev.harness.standin.batch.listing import capacity_usage, list_page
from spotline_dev.harness.standin.batch.names import batch_training_job_name, service_job_id
from spotline_dev.harness.standin.batch.preemption import (
    IN_PROGRESS,
    exhausted,
    preempt,
    preemption_of,
    preemption_summary,
    stopped_preemptions,
)
from spotline_dev.harness.standin.batch.queues import JobQueues
from spotline_dev.harness.standin.batch.tags import merged_tags
from spotline_dev.harness.standin.batch.views import ServiceJobView
from spotline_dev.harness.standin.sagemaker.training_jobs import SageMakerTrainingJobs

__all__ = [
    "CAPACITY_REASON",
    "SAGEMAKER_PREFIX",
    "ServiceJobView",
    "ServiceJobs",
    "batch_training_job_name",
    "service_job_id",
]

SAGEMAKER_PREFIX = "Received status from SageMaker: "
# "Jobs stuck in RUNNABLE due to capacity": the statusReason while the job waits for capacity.
CAPACITY_REASON = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Unable to provision requested compute resources"
TIME_LIMIT_TERMINATED = "Terminated by JobStateTimeLimit action due to reason: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"


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
        self.capacity_freed(job.service_job.queue, job.plan.end)

    def capacity_freed(self, queue: Queue, t: float) -> None:
        """Instances were freed (or a waiting job left, or the rules changed) at `t`."""
        if queue.quota_shares:
            self.reschedule(queue, t)
        else:
            admit(list(self.jobs.values()), queue.name, t)

    def reschedule(self, queue: Queue, t: float) -> None:
        """Quota management at `t`: the jobs that start now, the attempts preempted for others."""
        decision = quota_schedule(list(self.jobs.values()), queue, t)
        for sjob in decision.admitted:
            sjob.admitted, sjob.awaiting_capacity, sjob.next_attempt_at = True, False, t
        for sjob, reason in decision.preempted:
            preempt(sjob, t, reason)

    def _decide_after(self, job: TrainingJob) -> None:
        job.handled = True
        sjob, plan, end = job.service_job, job.plan, job.plan.end
        if (preemption := preemption_of(sjob, job)) is not None:
            if sjob.terminate_reason is not None:
                self._finish(sjob, "FAILED", end, f"Terminated: {sjob.terminate_reason}")
            elif (reason := exhausted(sjob)) is not None:
                self._finish(sjob, "FAILED", end, reason)
            else:  # "re-queued as RUNNABLE"; the attempt does not count against retryStrategy
                sjob.counted_attempts -= int(preemption.counted)
                sjob.awaiting_capacity = True
            return
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
            self._requeue_for_capacity(sjob, job, end)
            return
        if sjob.counted_attempts < sjob.retry_attempts and self._retry_action(sjob, reason) == "RETRY":
            sjob.next_attempt_at = end + self.weather.requeue_delay
            return
        self._finish(sjob, "FAILED", end, reason)

    def _requeue_for_capacity(self, sjob: ServiceJob, attempt: TrainingJob, end: float) -> None:
        """Back to RUNNABLE for capacity, unless the queue's time limit ends the wait first. AWS guide: AWS Batch
        User Guide, "Jobs stuck in RUNNABLE due to capacity": "the time the corresponding AWS Batch job spent in
        SCHEDULED between job submission and failure accumulates between job submissions for comparison against
        maxTimeSeconds". Stand-in: the RUNNABLE time between attempts counts too (the action is on RUNNABLE), and
        the job is terminated as soon as it is RUNNABLE past the limit."""
        sjob.capacity_waited += end - attempt.created
        limit, delay = sjob.queue.capacity_wait_limit(), self.weather.requeue_delay
        if limit is not None and sjob.capacity_waited + delay >= limit - EPS:
            sjob.next_attempt_at = end + max(0.0, limit - sjob.capacity_waited)
            sjob.time_limit_due = True
            return
        sjob.capacity_waited += delay
        sjob.next_attempt_at = end + delay

    @staticmethod
    def _reason_of(plan: Plan) -> str:
        if plan.failure_reason:
            return plan.failure_reason
        return f"{plan.final}: {plan.message}"

    @staticmethod
    def _retry_action(sjob: ServiceJob, reason: str) -> str:
        """First evaluateOnExit entry whose onStatusReason matches wins; none matching means RETRY (documented
        for container jobs, EvaluateOnExit: "If none of the EvaluateOnExit conditions in a RetryStrategy match,
        then the job is retried."; ServiceJobEvaluateOnExit says nothing of it)."""
        for rule in (sjob.request.get("retryStrategy") or {}).get("evaluateOnExit") or []:
            if _glob(rule.get("onStatusReason", "*"), reason):
                return str(rule.get("action", "RETRY")).upper()
        return "RETRY"

    @staticmethod
    def _finish(sjob: ServiceJob, status: str, at: float, reason: str | None) -> None:
        sjob.final_status, sjob.final_at, sjob.final_reason = status, at, reason
        sjob.next_attempt_at, sjob.awaiting_capacity, sjob.admitted = None, False, False

    def start_attempt(self, sjob: ServiceJob) -> None:
        """Batch hands the payload to SageMaker (CreateTrainingJob) at SCHEDULED."""
        assert sjob.next_attempt_at is not None
        t = sjob.next_attempt_at
        sjob.next_attempt_at = None
        if sjob.time_limit_due:
            # AWS guide: AWS Batch User Guide, "Jobs stuck in RUNNABLE due to capacity": "statusReason message after
            # the job is terminated by jobStateTimeLimitActions: Terminated by JobStateTimeLimit action due to
            # reason: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
            self._finish(sjob, "FAILED", t, TIME_LIMIT_TERMINATED)
            if sjob.quota_share is not None:
                self.reschedule(sjob.queue, t)
            return
        if sjob.quota_share is not None and not sjob.admitted:
            # RUNNABLE until quota_schedule admits it (now, maybe), together with every job of the
            # queue asking at this same moment: their order is the scheduler's, not the replay's.
            for other in [sjob, *self._asking(sjob.queue, t)]:
                other.next_attempt_at, other.awaiting_capacity = None, True
            self.reschedule(sjob.queue, t)
            return
        if sjob.quota_share is None and not fits(sjob, list(self.jobs.values()), t):
            sjob.awaiting_capacity = True  # RUNNABLE until admitted (batch_capacity.admit)
            sjob.blocked_reason = misconfiguration(sjob)
            return
        sjob.admitted, sjob.blocked_reason = False, None
        try:
            request = self.trainings.validated_payload(sjob.request["serviceRequestPayload"])
            name = batch_training_job_name(request["TrainingJobName"], sjob.job_id, len(sjob.attempts) + 1)
            request["TrainingJobName"] = name
            # AWS: sagemaker CreateTrainingJob.TrainingJobName: "The name must be unique within an Amazon Web
            # Services Region in an Amazon Web Services account."
            if name.lower() in self.trainings.jobs:
                raise ApiError(
                    "ResourceInUse",
                    "Training job names must be unique within an AWS account and region, and a training job "
                    f"with this name already exists ({self.trainings.training_arn(name)})",
                )
        except ApiError as error:
            self._finish(sjob, "FAILED", t, f"{SAGEMAKER_PREFIX}{error.code}: {error.message}")
            if sjob.quota_share is not None:
                self.reschedule(sjob.queue, t)  # what it was admitted with is free again
            return
        job = self.trainings.create_training(request, t, sjob)
        sjob.attempts.append(job)
        if not (job.plan.failure_reason or "").startswith("CapacityError"):
            sjob.counted_attempts += 1

    def terminate_share_jobs(self, share: QuotaShare, reason: str) -> int:
        """TerminateServiceJob for every job of a deleted quota share that has not ended (DeleteQuotaShare:
        "All jobs in the share are eventually terminated when you delete a quota share"). The
        reason is the stand-in's wording: the API reference gives none. Returns how many."""
        ending = [j for j in self.jobs.values() if j.quota_share is share and j.final_status is None]
        for job in ending:
            self.terminate_service_job({"jobId": job.job_id, "reason": reason})
        return len(ending)

    def has_unshared_jobs(self, queue: Queue) -> bool:
        """Whether jobs of no quota share, not ended, are in the queue (it cannot get shares then)."""
        return any(j.queue is queue and j.quota_share is None and j.final_status is None for j in self.jobs.values())

    def _asking(self, queue: Queue, t: float) -> list[ServiceJob]:
        """The queue's quota jobs whose next attempt is due at `t` and not admitted yet."""
        return [
            j
            for j in self.jobs.values()
            if j.queue is queue
            and j.quota_share is not None
            and not j.admitted
            and j.next_attempt_at is not None
            and abs(j.next_attempt_at - t) <= EPS
        ]

    # --- Batch operations -------------------------------------------------------------------

    def _find(self, job_id: str) -> ServiceJob:
        """The job of a jobId (DescribeServiceJob: "The job ID for the service job to describe"; not its ARN)."""
        # AWS: batch ClientException: "Another cause is specifying an identifier that's not valid."
        if (job := self.jobs.get(job_id)) is None:
            raise ApiError("ClientException", f"jobId: no service job has the ID {job_id}")
        return job

    def submit_service_job(self, body: dict[str, Any]) -> dict[str, Any]:
        token = body.get("clientToken")
        request = {k: v for k, v in body.items() if k != "clientToken"}
        if token is not None and token in self._tokens:
            # Stand-in: the API reference says nothing of a clientToken sent again with other parameters;
            # the stand-in rejects it too (another request under the same token), as ClientException.
            if self._tokens[token] != request:
                raise ApiError("ClientException", f"clientToken {token} was already used with different parameters")
            # AWS: batch SubmitServiceJob.clientToken: "If this parameter is specified and two submit requests
            # with identical payloads and clientToken ... are received, these requests are considered the same
            # request and the second request is rejected."
            raise ApiError(
                "ClientException",
                f"clientToken {token} was already used: the request is the same as an earlier one and is rejected",
            )
        queue = self.queues.validate_submit(body)
        job_id = service_job_id(self.account, len(self.jobs))
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
            quota_share=queue.quota_shares.get(str(body.get("quotaShareName") or "")),
            instance_type=instance_type_of(request),
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
            if t < job.runnable_at - EPS:
                return "SUBMITTED", None
            return "RUNNABLE", job.blocked_reason
        preemption = preemption_of(job, attempts[-1])
        latest = attempts[-1].plan
        if latest.end <= t + EPS:  # Batch requeued the job after this attempt (retry, capacity, preemption)
            if preemption is not None:
                return "RUNNABLE", preemption.reason
            capacity = (latest.failure_reason or "").startswith("CapacityError")
            return "RUNNABLE", CAPACITY_REASON if capacity else job.blocked_reason
        reason = IN_PROGRESS + preemption.reason if preemption and preemption.at <= t + EPS else None
        started = {s.status for s in latest.segments if s.start <= t + EPS}
        if "Training" in started:
            return "RUNNING", reason
        return ("STARTING" if "Downloading" in started else "SCHEDULED"), reason

    def _attempt_reason(self, attempt: TrainingJob) -> str | None:
        plan = attempt.plan
        if plan.status == "Completed":
            return None
        if (preemption := preemption_of(attempt.service_job, attempt)) is not None:
            return preemption.reason
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
        # DescribeServiceJob API reference: "startedAt ... Required: Yes" for every status; it does
        # not say what it holds before a start: 0 here (nothing started), which Spotline never reads.
        times["startedAt"] = ms(min(starts)) if starts else 0
        if job.final_at_or_before(now):
            times["stoppedAt"] = ms(job.final_at)
        return times

    def describe_service_job(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.describe(self._find(body["jobId"]), self.clock.now)

    def describe(self, job: ServiceJob, now: float) -> dict[str, Any]:
        """DescribeServiceJob's answer as of `now` (any moment up to the stand-in's last advance)."""
        status, reason = self.batch_status(job, now)
        attempts = []
        for attempt in job.attempts_at(now):
            entry: dict[str, Any] = {
                "serviceResourceId": {"name": "TrainingJobArn", "value": attempt.batch_arn},
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
        if job.quota_share is not None:  # quota management counts capacity per instance type
            described["capacityUsage"] = capacity_usage(job)
        if (summary := preemption_summary(job, now)) is not None:
            described["preemptionSummary"] = summary
        for name in (
            "retryStrategy",
            "schedulingPriority",
            "shareIdentifier",
            "quotaShareName",
            "preemptionConfiguration",
            "tags",
            "timeoutConfig",
        ):
            if job.request.get(name) is not None:
                described[name] = job.request[name]
        return described

    def list_service_jobs(self, body: dict[str, Any]) -> dict[str, Any]:
        jobs = list(self.jobs.values())
        if body.get("jobQueue"):
            queue = self.queues.queue(body["jobQueue"])
            jobs = [j for j in jobs if queue is not None and j.queue is queue]
        return list_page(jobs, body, self.clock.now, self.batch_status, self._times)

    def tag_resource(self, body: dict[str, Any]) -> dict[str, Any]:
        """TagResource on a service job (stand_in routes only its jobs' ARNs here): the tags
        DescribeServiceJob shows from now on."""
        job = next(j for j in self.jobs.values() if j.arn == body["resourceArn"])
        job.request["tags"] = merged_tags(job.request.get("tags"), body["tags"])
        return {}

    def terminate_service_job(self, body: dict[str, Any]) -> dict[str, Any]:
        job = self._find(body["jobId"])
        if job.final_status is not None or job.terminate_reason is not None:
            return {}
        job.terminate_reason, job.terminated_at = str(body["reason"]), self.clock.now
        if job.next_attempt_at is not None or job.awaiting_capacity or not job.attempts:
            self._finish(job, "FAILED", self.clock.now, f"Terminated: {job.terminate_reason}")
            self.capacity_freed(job.queue, self.clock.now)  # it may have held back others
        elif self.trainings.training_status(job.attempts[-1], self.clock.now)[0] == "InProgress":
            self.trainings.stop(job.attempts[-1], "terminate")
        return {}

    def update_service_job(self, body: dict[str, Any]) -> dict[str, Any]:
        """UpdateServiceJob: a new schedulingPriority (0 to 9999, API reference) for a job not yet
        ended; a job waiting for capacity is admitted by it from now on (batch_capacity)."""
        job, priority = self._find(body["jobId"]), body["schedulingPriority"]
        # AWS: batch UpdateServiceJob.schedulingPriority: "The minimum supported value is 0 and the maximum
        # supported value is 9999."
        if not 0 <= priority <= 9999:
            raise ApiError("ClientException", f"schedulingPriority: {priority} is not between 0 and 9999")
        # Stand-in: the API reference says nothing of updating a job that has ended; the stand-in refuses
        # it rather than change a priority that can no longer schedule anything.
        if job.final_at_or_before(self.clock.now):
            raise ApiError("ClientException", f"Job {job.job_id} has ended ({job.final_status}): it cannot be updated")
        job.request["schedulingPriority"] = priority
        if job.queue.quota_shares:  # a waiting job may now preempt ("Preemption selection algorithm")
            self.reschedule(job.queue, self.clock.now)
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
            job.job_id,
            job.name,
            job.arn,
            job.queue.name,
            capacity,
            dt(job.created),
            status,
            reason,
            attempts,
            job.quota_share.name if job.quota_share else None,
            len(stopped_preemptions(job, now)),
            dt(job.final_at) if job.final_at_or_before(now) else None,
        )


def _glob(pattern: str, text: str) -> bool:
    """Batch's onStatusReason glob ("Contains a glob pattern to match against the StatusReason returned for a
    job"): `*` matches anything, everything else literally. The API reference documents only a trailing `*`;
    a `*` elsewhere (the tests' "*CapacityError*") is the stand-in's reading of "glob"."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text, re.DOTALL) is not None
