"""AWS Batch's SAGEMAKER_TRAINING job queues: registering them, SubmitServiceJob's own checks
against them, and DescribeJobQueues.

A queue with quota shares (`batch_shares`) is a quota management queue: "Quota management job
queues require that all jobs specify a quota share at job submission" ("Submitting jobs to a
quota share"), and quotaShareName is for such queues only (API reference, SubmitServiceJob:
"Don't specify this parameter if the job queue doesn't have a quota share scheduling policy").
The stand-in knows a queue is one once a share is registered on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spotline_dev.standin.http_answers import ApiError

if TYPE_CHECKING:
    from spotline_dev.standin.batch_shares import QuotaShare

BATCH_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")


@dataclass
class Queue:
    name: str
    arn: str
    state: str
    status: str
    scheduling_policy_arn: str | None
    capacity_instances: int | None = None  # the service environment's maxCapacity (NUM_INSTANCES)
    quota_shares: dict[str, QuotaShare] = field(default_factory=dict)  # by name (batch_shares)


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
        capacity_instances: int | None = None,
    ) -> str:
        arn = f"arn:aws:batch:{self.region}:{self.account}:job-queue/{name}"
        self.queues[name] = Queue(name, arn, state, status, scheduling_policy_arn, capacity_instances)
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
