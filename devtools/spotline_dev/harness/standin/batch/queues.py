"""AWS Batch's SAGEMAKER_TRAINING job queues: registering them, SubmitServiceJob's own checks
against them, and DescribeJobQueues.

A queue with quota shares (`batch_shares`) is a quota management queue: "Quota management job
queues require that all jobs specify a quota share at job submission" ("Submitting jobs to a
quota share"), and quotaShareName is for such queues only (API reference, SubmitServiceJob:
"Don't specify this parameter if the job queue doesn't have a quota share scheduling policy").
The stand-in knows a queue is one once a share is registered on it.

A queue's capacity is its service environment's capacity limits. botocore's batch model,
CapacityLimit.capacityUnit: "For SAGEMAKER_TRAINING jobs in a quota management enabled service
environment, specify the instance type (for example, ml.m5.large). Otherwise, use NUM_INSTANCES";
maxCapacity: "For other service environments, this value represents the maximum quantity of all
resources", and with capacityUnit=ml.m5.large "only ml.m5.large instances count against this
limit, and jobs requiring other instance types wait until a matching capacity limit is configured".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from spotline_dev.harness.standin.base.http_answers import ApiError
from spotline_dev.harness.standin.base.records import ANY_INSTANCE_TYPE, Queue

INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+$")
BATCH_JOB_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
MAX_RETRY_RULES = 5
MAX_PAYLOAD_BYTES = 10 * 1024  # "Maximum job service request payload size", AWS Batch service quotas
MAX_REQUEST_BYTES = 30 * 1024  # "Maximum size of SubmitServiceJob request", AWS Batch service quotas
MAX_STATUS_REASON_PATTERN = 512


TIME_LIMIT_REASONS = (
    "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
    "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE",
    "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED",
)


def _check_time_limit(action: dict[str, Any]) -> None:
    """A jobStateTimeLimitActions entry as CreateJobQueue accepts it for a SAGEMAKER_TRAINING queue."""
    # AWS: batch JobStateTimeLimitAction.action: "For job queues connected to a SAGEMAKER_TRAINING service
    # environment, the only supported value is TERMINATE"
    if action["action"] != "TERMINATE":
        raise ApiError("ClientException", f"jobStateTimeLimitActions.action {action['action']}: only TERMINATE")
    # AWS: batch JobStateTimeLimitAction.maxTimeSeconds: "The minimum value is 600 (10 minutes) and the maximum
    # value is 86,400 (24 hours)."
    if not 600 <= int(action["maxTimeSeconds"]) <= 86_400:
        raise ApiError("ClientException", "jobStateTimeLimitActions.maxTimeSeconds must be 600 to 86,400")
    # AWS guide: AWS Batch User Guide, "Automatic remediation with jobStateTimeLimitActions": "The following
    # reason values support jobStateTimeLimitActions"
    if action["reason"] not in TIME_LIMIT_REASONS or action["state"] != "RUNNABLE":
        raise ApiError("ClientException", f"jobStateTimeLimitActions: {action['reason']} in {action['state']}")


def _checked_capacity(capacity: int | Mapping[str, int] | None, policy: str | None) -> dict[str, int] | None:
    """The service environment's capacityLimits as CreateServiceEnvironment takes them: an int is
    NUM_INSTANCES; per instance type only for quota management (a queue with a scheduling policy).
    Only `register_queue` (local.resources, tests) calls this: the stand-in serves no
    CreateServiceEnvironment."""
    if capacity is None:
        return None
    limits = {ANY_INSTANCE_TYPE: capacity} if isinstance(capacity, int) else dict(capacity)
    # Stand-in: CreateServiceEnvironment requires capacityLimits (botocore's model lists it among the
    # required members); an empty mapping would be an environment without limits, which is
    # `capacity=None` here, so it is refused as a missing capacityLimits.
    if not limits:
        raise ApiError("ClientException", "capacityLimits is required: give at least one capacity limit")
    for unit, count in limits.items():
        # AWS: batch CapacityLimit.capacityUnit: "For SAGEMAKER_TRAINING jobs in a quota management enabled
        # service environment, specify the instance type ... Otherwise, use NUM_INSTANCES"
        if unit != ANY_INSTANCE_TYPE and not INSTANCE_TYPE.match(unit):
            raise ApiError(
                "ClientException",
                f"capacityLimits[].capacityUnit {unit!r} is neither NUM_INSTANCES nor an instance type "
                "(for example, ml.m5.large)",
            )
        # Stand-in: maxCapacity is an Integer in botocore's model (its client refuses other types);
        # AWS documents no lower bound, and a negative quantity of instances means nothing here.
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ApiError(
                "ClientException", f"capacityLimits[].maxCapacity for {unit} must be a whole number (0 or more)"
            )
    # AWS: batch CapacityLimit.capacityUnit: "For SAGEMAKER_TRAINING jobs in a quota management enabled
    # service environment, specify the instance type ... Otherwise, use NUM_INSTANCES"
    if ANY_INSTANCE_TYPE in limits and len(limits) > 1:
        raise ApiError(
            "ClientException",
            "capacityLimits mixes NUM_INSTANCES with instance types: use instance types for quota management, "
            "otherwise NUM_INSTANCES",
        )
    # AWS: batch CapacityLimit.capacityUnit: "For SAGEMAKER_TRAINING jobs in a quota management enabled
    # service environment, specify the instance type ... Otherwise, use NUM_INSTANCES"
    # Stand-in: a queue with a scheduling policy stands for a quota management one (see the module).
    if ANY_INSTANCE_TYPE not in limits and policy is None:
        raise ApiError(
            "ClientException",
            "capacityLimits[].capacityUnit must be NUM_INSTANCES outside quota management (instance types need a "
            "quota share scheduling policy)",
        )
    return limits


class JobQueues:
    """The SAGEMAKER_TRAINING job queues registered with the stand-in."""

    def __init__(self, *, account: str, region: str) -> None:
        self.account, self.region = account, region
        self.queues: dict[str, Queue] = {}

    def register_queue(
        self,
        name: str,
        *,
        state: str,
        status: str,
        scheduling_policy_arn: str | None,
        capacity: int | Mapping[str, int] | None = None,
        time_limits: list[dict[str, Any]] | None = None,
    ) -> str:
        arn = f"arn:aws:batch:{self.region}:{self.account}:job-queue/{name}"
        limits = _checked_capacity(capacity, scheduling_policy_arn)
        for action in time_limits or []:
            _check_time_limit(action)
        self.queues[name] = Queue(
            name, arn, state, status, scheduling_policy_arn, limits, time_limits=time_limits or []
        )
        return arn

    def queue(self, name_or_arn: str) -> Queue | None:
        return next((q for q in self.queues.values() if name_or_arn in (q.name, q.arn)), None)

    def serves_queues(self, body: dict[str, Any]) -> bool:
        names = body.get("jobQueues") or []
        return any(self.queue(n) for n in names) if names else bool(self.queues)

    def validate_submit(self, body: dict[str, Any]) -> Queue:
        """SubmitServiceJob's own checks against the queue and what botocore's model leaves to the
        service (Batch does not look inside the payload). Required members, serviceJobType,
        evaluateOnExit actions and the sizes of tags and clientToken are the model's, checked
        before this (botocore's client, then `request_problems`). The size quotas answer
        ClientException: the guide names no error for them."""

        def reject(message: str) -> ApiError:
            return ApiError("ClientException", message)

        # AWS: batch SubmitServiceJob.jobName: "It can be up to 128 characters long. It can contain uppercase
        # and lowercase letters, numbers, hyphens (-), and underscores (_)."
        if not BATCH_JOB_NAME.match(str(body.get("jobName") or "")):
            raise reject(
                "jobName must be 1 to 128 characters long and contain only uppercase and lowercase letters, "
                "numbers, hyphens (-), and underscores (_)"
            )
        payload = str(body.get("serviceRequestPayload") or "")
        # AWS: batch SubmitServiceJob.serviceRequestPayload: "The request, in JSON, for the service that the
        # SubmitServiceJob operation is queueing."
        # Stand-in: botocore's client refuses a request without it; an empty one is no request at
        # all, and AWS documents no answer for it: refused as missing.
        if not payload:
            raise reject("serviceRequestPayload is required: the SageMaker request, in JSON")
        # AWS guide: AWS Batch User Guide, "AWS Batch service quotas": "Maximum job
        # service request payload size (for SubmitServiceJob API operations) | 10 KiB"
        if (size := len(payload.encode())) > MAX_PAYLOAD_BYTES:
            raise reject(
                f"serviceRequestPayload is {size} bytes, more than the {MAX_PAYLOAD_BYTES} (10 KiB) Batch takes"
            )
        # AWS guide: AWS Batch User Guide, "AWS Batch service quotas": "Maximum size
        # of SubmitServiceJob request | 30 KiB"
        if (size := len(json.dumps(body, separators=(",", ":")).encode())) > MAX_REQUEST_BYTES:
            raise reject(
                f"The SubmitServiceJob request is {size} bytes, more than the {MAX_REQUEST_BYTES} (30 KiB) Batch takes"
            )
        queue = self.queue(str(body.get("jobQueue") or ""))
        # AWS: batch ClientException: "Another cause is specifying an identifier that's not valid."
        if queue is None:
            raise reject(f"jobQueue {body.get('jobQueue')} does not exist")
        # AWS: batch JobQueueDetail.state: "If the job queue state is DISABLED , new jobs can't be added to the
        # queue, but jobs already in the queue can finish."
        if queue.state != "ENABLED":
            raise reject(f"Job queue {queue.name} is {queue.state}: new jobs can't be added to the queue")
        # Stand-in: AWS documents no answer for a submission to a queue whose status is not VALID
        # (JobQueueDetail.status: "for example, CREATING or VALID"); the stand-in's queues are VALID
        # unless a test registers one otherwise, to see a submission refused.
        if queue.status != "VALID":
            raise reject(f"Job queue {queue.name} is {queue.status}, not VALID: it does not accept jobs")
        priority = body.get("schedulingPriority")
        # AWS: batch SubmitServiceJob.schedulingPriority: "Valid values are integers between 0 and 9999."
        if priority is not None and not 0 <= priority <= 9999:
            raise reject(f"schedulingPriority {priority} is not an integer between 0 and 9999")
        self._check_retry_strategy(body.get("retryStrategy"))
        self._check_quota_share(queue, body)
        self._check_share_identifier(queue, body)
        retries = (body.get("preemptionConfiguration") or {}).get("preemptionRetriesBeforeTermination")
        # Stand-in: ServiceJobPreemptionConfiguration.preemptionRetriesBeforeTermination is "The number
        # of times a service job can be retried after it is preempted"; AWS documents no range, and a
        # negative number of retries means nothing.
        if retries is not None and retries < 0:
            raise ApiError(
                "ClientException", f"preemptionConfiguration.preemptionRetriesBeforeTermination {retries} is negative"
            )
        return queue

    @staticmethod
    def _check_retry_strategy(retry: dict[str, Any] | None) -> None:
        if retry is None:
            return
        attempts = retry.get("attempts")
        # AWS: batch ServiceJobRetryStrategy.attempts: "You can specify between 1 and 10 attempts."
        if not isinstance(attempts, int) or not 1 <= attempts <= 10:
            raise ApiError("ClientException", f"retryStrategy.attempts {attempts} is not between 1 and 10")
        rules = retry.get("evaluateOnExit") or []
        # AWS: batch RetryStrategy.evaluateOnExit: "Array of up to 5 objects that specify the conditions where
        # jobs are retried or failed."
        # Stand-in: that is the container jobs' RetryStrategy; ServiceJobRetryStrategy.evaluateOnExit
        # names no limit, but the user guide's "Service job retry strategies" sets the same 5 (its
        # English sentence was not at hand to quote).
        if len(rules) > MAX_RETRY_RULES:
            raise ApiError(
                "ClientException", f"retryStrategy.evaluateOnExit has {len(rules)} entries: at most {MAX_RETRY_RULES}"
            )
        for index, rule in enumerate(rules):
            pattern = str(rule.get("onStatusReason") or "")
            # AWS: batch ServiceJobEvaluateOnExit.onStatusReason: "The pattern can contain up to 512 characters
            # and can contain all printable characters."
            if len(pattern) > MAX_STATUS_REASON_PATTERN or not pattern.isprintable():
                raise ApiError(
                    "ClientException",
                    f"retryStrategy.evaluateOnExit[{index}].onStatusReason must be at most "
                    f"{MAX_STATUS_REASON_PATTERN} printable characters",
                )

    @staticmethod
    def _check_quota_share(queue: Queue, body: dict[str, Any]) -> None:
        name = body.get("quotaShareName")
        if not queue.quota_shares:
            # AWS: batch SubmitServiceJob.quotaShareName: "Don't specify this parameter if the job queue doesn't
            # have a quota share scheduling policy."
            if name:
                raise ApiError(
                    "ClientException",
                    f"quotaShareName {name} cannot be used: job queue {queue.name} has no quota share "
                    "scheduling policy",
                )
            return
        # AWS: batch SubmitServiceJob.quotaShareName: "If the job queue has a quota share scheduling policy,
        # then this parameter must be specified."
        if not name:
            raise ApiError(
                "ClientException", f"quotaShareName is required: job queue {queue.name} uses quota management"
            )
        share = queue.quota_shares.get(name)
        # AWS: batch ClientException: "Another cause is specifying an identifier that's not valid."
        if share is None:
            raise ApiError("ClientException", f"Quota share {name} does not exist in job queue {queue.name}")
        # AWS: batch CreateQuotaShare.state: "If the quota share is DISABLED , new jobs won't be accepted but
        # jobs already submitted can finish."
        if share.state != "ENABLED":
            raise ApiError("ClientException", f"Quota share {name} is {share.state}: it does not accept new jobs")

    @staticmethod
    def _check_share_identifier(queue: Queue, body: dict[str, Any]) -> None:
        """A queue with a scheduling policy and no quota share yet is a fair-share queue here; with
        shares, a quota management one. Without a policy (FIFO) shareIdentifier is not checked:
        fixtures of other modules still send one there."""
        if queue.scheduling_policy_arn is None:
            return
        identifier = body.get("shareIdentifier")
        # AWS: batch SubmitServiceJob.shareIdentifier: "Don't specify this parameter if the job queue doesn't
        # have a fair-share scheduling policy."
        if queue.quota_shares and identifier:
            raise ApiError(
                "ClientException",
                f"shareIdentifier cannot be used: job queue {queue.name} has a quota share scheduling policy, "
                "not a fair-share one (use quotaShareName)",
            )
        # AWS: batch SubmitServiceJob.shareIdentifier: "If the job queue has a fair-share scheduling policy,
        # then this parameter must be specified."
        if not queue.quota_shares and not identifier:
            raise ApiError(
                "ClientException",
                f"shareIdentifier is required: job queue {queue.name} has a fair-share scheduling policy",
            )

    def describe_job_queues(self, body: dict[str, Any]) -> dict[str, Any]:
        names = body.get("jobQueues") or []
        queues = [q for n in names if (q := self.queue(n))] if names else list(self.queues.values())
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
                "jobStateTimeLimitActions": list(queue.time_limits),
            }
            if queue.scheduling_policy_arn:
                entry["schedulingPolicyArn"] = queue.scheduling_policy_arn
            described.append(entry)
        return {"jobQueues": described}
