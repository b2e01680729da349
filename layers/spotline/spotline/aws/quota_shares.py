"""The job queue's AWS Batch quota shares: list them, and apply what `spotline.core.quota_shares`
planned (CreateQuotaShare, UpdateQuotaShare, DeleteQuotaShare). Used by SyncQuotaShares, the
template's custom resource."""

from __future__ import annotations

from collections.abc import Iterable

from spotline.aws.clients import client, error_code
from spotline.aws.observability import logger
from spotline.aws.quota_share_reads import existing_shares
from spotline.core.quota_shares import TEAM_TAG, Action, Capacity, Plan, plan, teardown
from spotline.core.team_policy import TeamPolicy


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


def reconcile(job_queue: str, policy: TeamPolicy, capacity: Capacity) -> Plan:
    """Bring the queue's shares to the policy's (see `spotline.core.quota_shares.plan`);
    `capacity` is the service environment's limits per instance type."""
    planned = plan(policy, existing_shares(job_queue), capacity)
    for warning in planned.warnings:
        logger.warning("Team quotas", extra={"warning": warning})
    apply(job_queue, planned.actions)
    return planned


def tear_down(job_queue: str) -> list[Action]:
    """Disable, then delete, every share of a queue that is going away; nothing when the queue is
    already gone."""
    try:
        shares = existing_shares(job_queue)
    except Exception as exc:
        if error_code(exc) == "ClientException" and "does not exist" in str(exc).lower():
            logger.info("Job queue already gone: no quota shares to delete", extra={"jobQueue": job_queue})
            return []
        raise
    actions = teardown(shares)
    apply(job_queue, actions)
    return actions
