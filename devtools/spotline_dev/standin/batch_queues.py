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

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spotline_dev.standin.http_answers import ApiError

if TYPE_CHECKING:
    from spotline_dev.standin.batch_shares import QuotaShare

ANY_INSTANCE_TYPE = "NUM_INSTANCES"  # a service environment's unit for instances of every type
INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+$")
BATCH_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")


@dataclass
class Queue:
    name: str
    arn: str
    state: str
    status: str
    scheduling_policy_arn: str | None
    capacity: dict[str, int] | None = None  # the service environment's limits: {NUM_INSTANCES: n} or per type
    quota_shares: dict[str, QuotaShare] = field(default_factory=dict)  # by name (batch_shares)

    @property
    def counts_instance_types(self) -> bool:
        """Whether its service environment counts capacity per instance type (quota management)."""
        return self.capacity is not None and ANY_INSTANCE_TYPE not in self.capacity

    def capacity_for(self, instance_type: str) -> int | None:
        """The environment's limit a job of this type counts against (None: no limit; 0: the
        environment has no limit for the type, so the job waits until one is configured)."""
        if self.capacity is None:
            return None
        if ANY_INSTANCE_TYPE in self.capacity:
            return self.capacity[ANY_INSTANCE_TYPE]
        return self.capacity.get(instance_type, 0)

    def same_limit(self, one: str, other: str) -> bool:
        """Whether jobs of the two instance types count against the same environment limit."""
        return not self.counts_instance_types or one == other


def _checked_capacity(capacity: int | Mapping[str, int] | None, policy: str | None) -> dict[str, int] | None:
    """The service environment's capacityLimits as CreateServiceEnvironment takes them: an int is
    NUM_INSTANCES; per instance type only for quota management (a queue with a scheduling policy)."""
    if capacity is None:
        return None
    limits = {ANY_INSTANCE_TYPE: capacity} if isinstance(capacity, int) else dict(capacity)
    if not limits:
        raise ApiError("ClientException", "capacityLimits is required")
    for unit, count in limits.items():
        if unit != ANY_INSTANCE_TYPE and not INSTANCE_TYPE.match(unit):
            raise ApiError("ClientException", f"capacityUnit {unit} is neither NUM_INSTANCES nor an instance type")
        if not isinstance(count, int) or count < 0:
            raise ApiError("ClientException", f"maxCapacity for {unit} must be a whole number")
    if ANY_INSTANCE_TYPE in limits and len(limits) > 1:
        raise ApiError("ClientException", "capacityLimits mixes NUM_INSTANCES with instance types")
    if ANY_INSTANCE_TYPE not in limits and policy is None:
        raise ApiError(
            "ClientException",
            "capacityUnit must be NUM_INSTANCES outside quota management (instance types need a quota share "
            "scheduling policy)",
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
    ) -> str:
        arn = f"arn:aws:batch:{self.region}:{self.account}:job-queue/{name}"
        limits = _checked_capacity(capacity, scheduling_policy_arn)
        self.queues[name] = Queue(name, arn, state, status, scheduling_policy_arn, limits)
        return arn

    def queue(self, name_or_arn: str) -> Queue | None:
        return next((q for q in self.queues.values() if name_or_arn in (q.name, q.arn)), None)

    def serves_queues(self, body: dict[str, Any]) -> bool:
        names = body.get("jobQueues") or []
        return any(self.queue(n) for n in names) if names else bool(self.queues)

    def validate_submit(self, body: dict[str, Any]) -> Queue:
        """SubmitServiceJob's own checks (Batch does not look inside the payload)."""

        def reject(message: str) -> ApiError:
            return ApiError("ClientException", message)

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
        queue = self.queue(body["jobQueue"])
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
        self._check_quota_share(queue, body)
        if queue.scheduling_policy_arn and not queue.quota_shares and not body.get("shareIdentifier"):
            raise reject(f"shareIdentifier is required: job queue {queue.name} has a fair-share scheduling policy")
        retries = (body.get("preemptionConfiguration") or {}).get("preemptionRetriesBeforeTermination")
        if retries is not None and retries < 0:
            raise reject("preemptionConfiguration.preemptionRetriesBeforeTermination must be 0 or more")
        if len(body.get("tags") or {}) > 50:
            raise reject("A job can have at most 50 tags")
        if len(body.get("clientToken") or "") > 64:
            raise reject("clientToken can be at most 64 characters")
        return queue

    @staticmethod
    def _check_quota_share(queue: Queue, body: dict[str, Any]) -> None:
        name = body.get("quotaShareName")
        if not queue.quota_shares:
            if name:
                raise ApiError(
                    "ClientException",
                    f"quotaShareName {name} cannot be used: job queue {queue.name} has no quota share "
                    "scheduling policy",
                )
            return
        if not name:
            raise ApiError(
                "ClientException", f"quotaShareName is required: job queue {queue.name} uses quota management"
            )
        share = queue.quota_shares.get(name)
        if share is None:
            raise ApiError("ClientException", f"Quota share {name} does not exist in job queue {queue.name}")
        if share.state != "ENABLED":
            raise ApiError("ClientException", f"Quota share {name} is {share.state}: it does not accept new jobs")

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
                "jobStateTimeLimitActions": [],
            }
            if queue.scheduling_policy_arn:
                entry["schedulingPolicyArn"] = queue.scheduling_policy_arn
            described.append(entry)
        return {"jobQueues": described}
