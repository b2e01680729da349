"""The job queue's AWS Batch quota shares: list them, and apply what `spotline.core.teams.quota_shares`
planned (CreateQuotaShare, UpdateQuotaShare, DeleteQuotaShare). Used by SyncQuotaShares, the
template's custom resource. Tearing down waits between disabling and deleting: DeleteQuotaShare
takes only a DISABLED share, and UpdateQuotaShare's change may not be read back at once."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from spotline.aws.common.clients import client, error_code
from spotline.aws.common.observability import logger
from spotline.aws.teams.quota_share_reads import existing_shares
from spotline.core.teams.quota_shares import TEAM_TAG, Action, Capacity, ExistingShare, Plan, plan, teardown
from spotline.core.teams.team_policy import TeamPolicy

POLL_SECONDS = 3.0  # between ListQuotaShares reads while disabled shares settle
_UNSETTLED = ("CREATING", "UPDATING")  # QuotaShareStatus values of a change still under way


def apply(job_queue: str, actions: Iterable[Action]) -> None:
    """Make the calls, in order; the first refusal raises (botocore's ClientError, naming the share)."""
    batch = client("batch")
    for action in actions:
        logger.info("Quota share", extra={"action": action.kind, "quotaShare": action.name, "reason": action.reason})
        desired = action.desired
        if action.kind == "create":
            assert desired is not None
            batch.create_quota_share(
                quotaShareName=desired.name,
                jobQueue=job_queue,
                capacityLimits=desired.capacity_limits,
                resourceSharingConfiguration=desired.resource_sharing,
                preemptionConfiguration=desired.preemption,
                state="ENABLED",
                tags={TEAM_TAG: desired.team},
            )
        elif action.kind == "update":
            assert desired is not None
            batch.update_quota_share(
                quotaShareArn=action.arn,
                capacityLimits=desired.capacity_limits,
                resourceSharingConfiguration=desired.resource_sharing,
                preemptionConfiguration=desired.preemption,
                state="ENABLED",
            )
        elif action.kind == "disable":
            batch.update_quota_share(quotaShareArn=action.arn, state="DISABLED")
        else:
            batch.delete_quota_share(quotaShareArn=action.arn)


def reconcile(
    job_queue: str, policy: TeamPolicy, capacity: Capacity, existing: Sequence[ExistingShare] | None = None
) -> Plan:
    """Bring the queue's shares to the policy's (see `spotline.core.teams.quota_shares.plan`);
    `capacity` is the service environment's limits per instance type; `existing`, the queue's
    shares when the caller has just listed them."""
    planned = plan(policy, existing_shares(job_queue) if existing is None else existing, capacity)
    for warning in planned.warnings:
        logger.warning("Team quotas", extra={"warning": warning})
    apply(job_queue, planned.actions)
    return planned


class TeardownIncomplete(Exception):
    """The queue's shares could not all be deleted: `deleted` were, `left` are still on the queue
    (or unknown, when the queue's shares could not even be listed), and the message says why."""

    def __init__(self, reason: str, *, deleted: Sequence[str] = (), left: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.reason, self.deleted, self.left = reason, tuple(deleted), tuple(left)


def tear_down(
    job_queue: str,
    *,
    deadline: float | None = None,
    poll_seconds: float = POLL_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Action]:
    """Delete every share of a queue that is going away, as DeleteQuotaShare requires (API
    reference: "You must first disable submissions for the share by updating the state to
    DISABLED using the UpdateQuotaShare operation"): disable the enabled ones, wait until
    ListQuotaShares reads every one DISABLED and settled (status neither CREATING nor UPDATING),
    polling every `poll_seconds` until `deadline` (a `clock()` value: the Lambda's remaining time),
    then delete them. Nothing when the queue is already gone. Returns the actions made; raises
    TeardownIncomplete naming what was deleted and what was left, whatever went wrong (a Batch
    error, the wait running out of time)."""
    try:
        shares = existing_shares(job_queue)
    except Exception as exc:
        if _queue_gone(exc):
            logger.info("Job queue already gone: no quota shares to delete", extra={"jobQueue": job_queue})
            return []
        raise TeardownIncomplete(f"ListQuotaShares failed: {exc}", left=("every share of the queue",)) from exc
    actions = teardown(shares)
    names = [a.name for a in actions if a.kind == "delete"]
    deleted: list[str] = []
    try:
        apply(job_queue, [a for a in actions if a.kind == "disable"])
        gone = _wait_until_disabled(
            job_queue, set(names), deadline=deadline, poll_seconds=poll_seconds, clock=clock, sleep=sleep
        )
        for action in actions:
            if action.kind == "delete" and action.name not in gone:
                apply(job_queue, [action])
            if action.kind == "delete":
                deleted.append(action.name)
    except Exception as exc:
        left = [name for name in names if name not in deleted]
        if isinstance(exc, TeardownIncomplete):
            raise TeardownIncomplete(exc.reason, deleted=deleted, left=left) from exc
        raise TeardownIncomplete(f"{type(exc).__name__}: {exc}", deleted=deleted, left=left) from exc
    return actions


def _wait_until_disabled(
    job_queue: str,
    names: set[str],
    *,
    deadline: float | None,
    poll_seconds: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> set[str]:
    """Poll ListQuotaShares until each of `names` reads DISABLED with a settled status; returns
    those already on their way out (status DELETING, or gone) that need no DeleteQuotaShare. Raises
    TeardownIncomplete when `deadline` passes first. Checks at least once, whatever the deadline;
    without one it does not wait."""
    while True:
        try:
            states = _states(job_queue)
        except Exception as exc:
            if _queue_gone(exc):
                return set(names)  # the queue went, and its shares with it
            raise
        waiting = sorted(
            name
            for name in names
            if name in states and (states[name][0] != "DISABLED" or states[name][1] in _UNSETTLED)
        )
        if not waiting:
            return {name for name in names if name not in states or states[name][1] == "DELETING"}
        if deadline is None or clock() + poll_seconds > deadline:
            shown = ", ".join(f"{name} ({'/'.join(states[name])})" for name in waiting)
            raise TeardownIncomplete(f"quota shares not yet DISABLED when time ran out: {shown}")
        logger.info("Waiting for quota shares to read DISABLED", extra={"quotaShares": waiting})
        sleep(poll_seconds)


def _states(job_queue: str) -> dict[str, tuple[str, str]]:
    """Each share of the queue: (state, status) as ListQuotaShares reads them, every page."""
    batch, states = client("batch"), {}
    request: dict[str, Any] = {"jobQueue": job_queue, "maxResults": 100}
    while True:
        page = batch.list_quota_shares(**request)
        for detail in page.get("quotaShares", []):
            states[str(detail["quotaShareName"])] = (str(detail.get("state") or ""), str(detail.get("status") or ""))
        if not page.get("nextToken"):
            return states
        request["nextToken"] = page["nextToken"]


def _queue_gone(exc: Exception) -> bool:
    return error_code(exc) == "ClientException" and "does not exist" in str(exc).lower()
