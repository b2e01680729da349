"""AWS Batch quota shares on a SAGEMAKER_TRAINING job queue: CreateQuotaShare, DescribeQuotaShare,
ListQuotaShares, UpdateQuotaShare and DeleteQuotaShare (shapes from botocore's model), as the AWS
Batch user guide documents them:

- "Quota shares": "Quota shares are virtual queues that are nested under a job queue. A maximum
  of 20 can be attached to any job queue." "... a quota share requires at least one capacity limit
  be provided and supports a maximum of 5 capacity limits." Resource sharing RESERVE (idle compute
  "reserved for only its jobs"), LEND (lent to other shares) or LEND_AND_BORROW ("jobs from the
  quota share should be allowed to borrow idle compute, select LEND_AND_BORROW with a configured
  borrow limit").
- API reference, QuotaShareResourceSharingConfiguration: borrowLimit is "the maximum percentage of
  additional capacity that the quota share can borrow", applied to each capacity unit, "can only
  be applied to quota shares with a strategy of LEND_AND_BORROW", default -1 ("unlimited").
- CreateQuotaShare: "A job queue must be in the VALID state before you can associate it with a
  quota share"; "Creating quota shares" needs "A quota management scheduling policy, service
  environment, and job queue with quota management enabled".
  A DISABLED share accepts no new jobs, "but jobs already submitted can finish".
- DeleteQuotaShare: "You must first disable submissions for the share by updating the state to
  DISABLED using the UpdateQuotaShare operation. All jobs in the share are eventually terminated
  when you delete a quota share."
- ARNs as the Service Authorization Reference writes them:
  `arn:aws:batch:<region>:<account>:job-queue/<queue>/quota-share/<share>`.

Capacity units: quota management counts capacity per instance type. QuotaShareCapacityLimit's
capacityUnit is "The unit of compute capacity for the capacityLimit. For example, ml.m5.large",
and CapacityLimit's: "For SAGEMAKER_TRAINING jobs in a quota management enabled service
environment, specify the instance type ... Otherwise, use NUM_INSTANCES". So a share's units are
instance types, and a queue whose service environment counts NUM_INSTANCES takes no share. A job
of a type its share has no limit for waits (maxCapacity: "jobs requiring other instance types
wait until a matching capacity limit is configured"). Admission, borrowing and preemption are in
`batch_capacity`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from spotline_dev.harness.standin.base.http_answers import ApiError
from spotline_dev.harness.standin.base.page_tokens import offset_of, token_for
from spotline_dev.harness.standin.base.records import ANY_INSTANCE_TYPE, Queue, QuotaShare
from spotline_dev.harness.standin.batch.queues import INSTANCE_TYPE, JobQueues

STRATEGIES = ("RESERVE", "LEND", "LEND_AND_BORROW")
MAX_SHARES_PER_QUEUE = 20
MAX_CAPACITY_LIMITS = 5
SHARE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
MAX_TAGS = 50
_ON_OFF = ("ENABLED", "DISABLED")


def _reject(message: str) -> ApiError:
    return ApiError("ClientException", message)


class QuotaShares:
    """The quota shares of the stand-in's job queues (kept on each `Queue.quota_shares`)."""

    def __init__(
        self,
        queues: JobQueues,
        *,
        changed: Callable[[Queue], None],
        unshared: Callable[[Queue], bool],
        terminate: Callable[[QuotaShare, str], int] | None = None,
    ) -> None:
        self.queues = queues
        self._changed = changed  # the queue's admission and preemption must be looked at again
        self._unshared = unshared  # whether the queue has jobs, not ended, of no quota share
        # TerminateServiceJob for each job of the share that has not ended, with the reason; how many
        self._terminate = terminate

    # --- set-up -----------------------------------------------------------------------------

    def register(
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
    ) -> QuotaShare:
        """CreateQuotaShare's checks, then the share. `capacity`: {instance type: instances}, one
        capacity limit each."""
        queue = self.queues.queue(queue_name_or_arn)
        # AWS: batch ClientException: "Another cause is specifying an identifier that's not valid."
        if queue is None:
            raise _reject(f"jobQueue {queue_name_or_arn} does not exist")
        # AWS: batch CreateQuotaShare.jobQueue: "A job queue must be in the VALID state before you can associate
        # it with a quota share."
        if queue.status != "VALID":
            raise _reject(f"Job queue {queue.name} is {queue.status}: it must be VALID to have quota shares")
        # AWS guide: AWS Batch User Guide, "Creating quota shares": "A quota management scheduling policy,
        # service environment, and job queue with quota management enabled."
        if not queue.scheduling_policy_arn:
            raise _reject(f"Job queue {queue.name} has no quota management scheduling policy")
        # AWS: batch CapacityLimit.capacityUnit: "For SAGEMAKER_TRAINING jobs in a quota management enabled
        # service environment, specify the instance type ... Otherwise, use NUM_INSTANCES"
        if queue.capacity is not None and not queue.counts_instance_types:
            raise _reject(
                f"Job queue {queue.name}'s service environment counts {ANY_INSTANCE_TYPE}: a quota management "
                "service environment's capacity limits name instance types"
            )
        # AWS: batch CreateQuotaShare.quotaShareName: "It can be up to 128 characters long. It can contain
        # uppercase and lowercase letters, numbers, hyphens (-), and underscores (_)."
        if not SHARE_NAME.match(share_name or ""):
            raise _reject(
                "quotaShareName must be 1 to 128 characters long and contain only uppercase and lowercase letters, "
                "numbers, hyphens (-), and underscores (_)"
            )
        # Stand-in: a queue's scheduling policy type cannot change, and the stand-in's queue becomes a
        # quota management queue with its first share, so that share must come before any job.
        # AWS: batch CreateSchedulingPolicy.quotaSharePolicy: "Once set, this policy type cannot be removed or
        # changed to a fairSharePolicy."
        if not queue.quota_shares and self._unshared(queue):
            raise _reject(f"Job queue {queue.name} already has jobs without a quota share")
        # Stand-in: the share's name makes its ARN (job-queue/<queue>/quota-share/<name>), so two shares
        # of one queue cannot have the same name; AWS documents no message for it.
        if share_name in queue.quota_shares:
            raise _reject(f"Quota share {share_name} already exists in job queue {queue.name}")
        # AWS guide: AWS Batch User Guide, "Quota shares": "A maximum of 20 can be attached to any job queue."
        if len(queue.quota_shares) >= MAX_SHARES_PER_QUEUE:
            raise _reject(
                f"Job queue {queue.name} already has {MAX_SHARES_PER_QUEUE} quota shares, the most it can have"
            )
        # Stand-in: botocore's model caps CreateQuotaShare's tags (TagrisTagsMap) at 50, which
        # request_problems checks over HTTP; `register` takes them from Python callers too.
        if len(tags or {}) > MAX_TAGS:
            raise _reject(f"tags has {len(tags or {})} entries: a quota share can have at most {MAX_TAGS}")
        limits = dict(capacity)
        share = QuotaShare(
            share_name,
            f"arn:aws:batch:{self.queues.region}:{self.queues.account}:job-queue/{queue.name}/quota-share/{share_name}",
            queue,
            _checked_limits(limits),
            _checked_strategy(strategy, borrow_limit),
            borrow_limit,
            in_share_preemption,
            _checked_state(state),
            dict(tags or {}),
        )
        queue.quota_shares[share_name] = share
        return share

    def share(self, arn: str | None) -> QuotaShare:
        for queue in self.queues.queues.values():
            for share in queue.quota_shares.values():
                if share.arn == arn:
                    return share
        # AWS: batch ClientException: "Another cause is specifying an identifier that's not valid."
        raise _reject(f"Quota share {arn} does not exist")

    def serves(self, operation: str, body: dict[str, Any]) -> bool:
        """Whether the request is about one of the stand-in's queues (others go to moto)."""
        if operation in ("CreateQuotaShare", "ListQuotaShares"):
            return self.queues.queue(str(body.get("jobQueue") or "")) is not None
        arn = str(body.get("quotaShareArn") or "")
        return any(arn.startswith(f"{queue.arn}/quota-share/") for queue in self.queues.queues.values())

    # --- Batch operations -------------------------------------------------------------------

    def create_quota_share(self, body: dict[str, Any]) -> dict[str, Any]:
        """CreateQuotaShare over HTTP: botocore's client and `request_problems` have checked the
        required members and the enums (strategy, inSharePreemption, state) already."""
        sharing = body["resourceSharingConfiguration"]
        share = self.register(
            body["jobQueue"],
            body["quotaShareName"],
            _limits_of(body["capacityLimits"]),
            strategy=str(sharing.get("strategy") or ""),
            borrow_limit=_borrow_limit_of(sharing),
            in_share_preemption=_in_share_of(body["preemptionConfiguration"]),
            state=str(body.get("state") or "ENABLED"),
            tags=body.get("tags"),
        )
        return {"quotaShareName": share.name, "quotaShareArn": share.arn}

    def describe_quota_share(self, body: dict[str, Any]) -> dict[str, Any]:
        share = self.share(body.get("quotaShareArn"))
        return {**share.detail(), "tags": dict(share.tags)}

    def list_quota_shares(self, body: dict[str, Any]) -> dict[str, Any]:
        queue = self.queues.queue(str(body.get("jobQueue") or ""))
        # AWS: batch ClientException: "Another cause is specifying an identifier that's not valid."
        if queue is None:
            raise _reject(f"jobQueue {body.get('jobQueue')} does not exist")
        size = body.get("maxResults")
        size = 100 if size is None else size
        # AWS: batch ListQuotaShares.maxResults: "This value can be between 1 and 100."
        if not isinstance(size, int) or not 1 <= size <= 100:
            raise _reject(f"maxResults {size} is not between 1 and 100")
        offset = _offset(body.get("nextToken"))
        details = [share.detail() for share in queue.quota_shares.values()]
        page: dict[str, Any] = {"quotaShares": details[offset : offset + size]}
        if offset + size < len(details):
            page["nextToken"] = token_for(offset + size)
        return page

    def update_quota_share(self, body: dict[str, Any]) -> dict[str, Any]:
        """UpdateQuotaShare: what is given replaces what was there; a lowered limit can make the
        share's running jobs preemptible ("Administrators lowering a quota share's
        capacity limits can also make SCHEDULED, STARTING, or RUNNING jobs within that quota share
        eligible for preemption", user guide, "Quota shares", "Capacity restoration via preemption")."""
        share = self.share(body.get("quotaShareArn"))
        limits = _checked_limits(_limits_of(body["capacityLimits"])) if "capacityLimits" in body else share.limits
        strategy, borrow_limit = share.strategy, share.borrow_limit
        if "resourceSharingConfiguration" in body:
            sharing = body["resourceSharingConfiguration"] or {}
            strategy, borrow_limit = str(sharing.get("strategy") or ""), _borrow_limit_of(sharing)
            _checked_strategy(strategy, borrow_limit)
        in_share = share.in_share_preemption
        if "preemptionConfiguration" in body:
            in_share = _in_share_of(body["preemptionConfiguration"] or {})
        state = _checked_state(str(body["state"])) if "state" in body else share.state
        share.limits, share.strategy, share.borrow_limit = limits, strategy, borrow_limit
        share.in_share_preemption, share.state = in_share, state
        self._changed(share.queue)
        return {"quotaShareName": share.name, "quotaShareArn": share.arn}

    def delete_quota_share(self, body: dict[str, Any]) -> dict[str, Any]:
        """DeleteQuotaShare, as the API reference describes it: "You must first disable submissions
        for the share by updating the state to DISABLED using the UpdateQuotaShare operation", so an
        ENABLED share is refused (ClientException, the operation's error for a client's mistake);
        and "All jobs in the share are eventually terminated when you delete a quota share": each
        job of the share that has not ended is terminated as TerminateServiceJob does (a waiting one
        at once, a training one once its training job has stopped). The share is gone from
        ListQuotaShares and DescribeQuotaShare at once: QuotaShareStatus has a DELETING value, but
        the reference does not say how long a share stays in it. The answer is empty, as
        botocore's output shape has no member."""
        share = self.share(body.get("quotaShareArn"))
        # AWS: batch DeleteQuotaShare: "You must first disable submissions for the share by updating the state
        # to DISABLED using the UpdateQuotaShare operation."
        if share.state != "DISABLED":
            raise _reject(
                f"Quota share {share.name} is {share.state}: you must first disable submissions for the share by "
                "updating the state to DISABLED using the UpdateQuotaShare operation"
            )
        if self._terminate is not None:
            self._terminate(share, f"Quota share {share.name} was deleted")
        del share.queue.quota_shares[share.name]
        self._changed(share.queue)
        return {}


def _limits_of(entries: Any) -> dict[str, int]:
    limits: dict[str, int] = {}
    for entry in entries or []:
        unit = str(entry.get("capacityUnit") or "")
        # Stand-in: a share has one maxCapacity per capacity unit (batch_capacity counts by unit); AWS
        # documents nothing of a unit listed twice.
        if unit in limits:
            raise _reject(f"capacityLimits names {unit} more than once")
        limits[unit] = entry.get("maxCapacity")
    return limits


def _checked_limits(limits: dict[str, int]) -> dict[str, int]:
    # AWS guide: AWS Batch User Guide, "Quota shares": "Quota shares enable allocating a compute quota to a
    # team or project, via the use of capacity limits; a quota share requires at least one capacity limit
    # be provided and supports a maximum of 5 capacity limits."
    if not 1 <= len(limits) <= MAX_CAPACITY_LIMITS:
        raise _reject(
            f"capacityLimits has {len(limits)} entries: a quota share needs between 1 and {MAX_CAPACITY_LIMITS} "
            "capacity limits"
        )
    for unit, count in limits.items():
        # AWS: batch QuotaShareCapacityLimit.capacityUnit: "The unit of compute capacity for the capacityLimit.
        # For example, ml.m5.large"
        # AWS guide: AWS Batch User Guide, "Quota shares": "Each capacity limit should be expressed as instance
        # limits for supported SageMaker Training job instances types."
        if not INSTANCE_TYPE.match(unit):
            raise _reject(f"capacityLimits[].capacityUnit {unit!r} is not an instance type (for example, ml.m5.large)")
        # Stand-in: maxCapacity is an Integer in botocore's model (its client refuses other types over
        # HTTP; `register` takes Python values); AWS documents no lower bound, and a negative
        # quantity of instances means nothing.
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise _reject(f"capacityLimits[].maxCapacity for {unit} must be a whole number of instances (0 or more)")
    return limits


def _checked_strategy(strategy: str, borrow_limit: int) -> str:
    # Stand-in: botocore's model lists the strategies (QuotaShareResourceSharingStrategy), which
    # request_problems checks over HTTP; `register` takes the strategy from Python callers too.
    if strategy not in STRATEGIES:
        raise _reject(f"resourceSharingConfiguration.strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    # AWS: batch QuotaShareResourceSharingConfiguration.borrowLimit: "borrowLimit can only be applied to quota
    # shares with a strategy of LEND_AND_BORROW"
    if borrow_limit != -1 and strategy != "LEND_AND_BORROW":
        raise _reject(
            f"borrowLimit {borrow_limit}: borrowLimit can only be applied to quota shares with a strategy of "
            "LEND_AND_BORROW"
        )
    # Stand-in: borrowLimit is a percentage, and "The default borrowLimit is -1, which indicates
    # unlimited borrowing" (QuotaShareResourceSharingConfiguration.borrowLimit); AWS documents no
    # value below -1.
    if borrow_limit < -1:
        raise _reject(f"borrowLimit {borrow_limit} must be -1 (unlimited) or a percentage of 0 or more")
    return strategy


def _checked_state(state: str) -> str:
    # Stand-in: botocore's model lists ENABLED and DISABLED (QuotaShareState), which request_problems
    # checks over HTTP; `register` takes the state from Python callers too.
    if state not in _ON_OFF:
        raise _reject(f"state {state!r} is not ENABLED or DISABLED")
    return state


def _borrow_limit_of(sharing: dict[str, Any]) -> int:
    value = sharing.get("borrowLimit", -1)
    return -1 if value is None else int(value)


def _in_share_of(preemption: dict[str, Any]) -> bool:
    """ENABLED or DISABLED: botocore's client requires it, and request_problems checks the enum."""
    return bool(preemption.get("inSharePreemption") == "ENABLED")


def _offset(token: str | None) -> int:
    offset = offset_of(token)
    # AWS: batch ListQuotaShares.nextToken: "The nextToken value that's returned from a previous paginated
    # ListQuotaShares request where maxResults was used and the results exceeded the value of that parameter."
    # Stand-in: a token the stand-in never returned is refused; AWS names no message for it.
    if offset is None:
        raise _reject("nextToken is not valid: pass the nextToken of a previous ListQuotaShares answer")
    return offset
