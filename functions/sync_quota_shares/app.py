"""SyncQuotaShares: the Lambda behind the template's TeamQuotaShares custom resource.

CloudFormation cannot loop over the team registry, so this function makes the job queue's AWS
Batch quota shares follow it when the stack changes (a new queue, a new TrainingCapacity): on
Create and Update one share per quota share of the registry (created, updated, or disabled for
one no team counts in any more: `spotline.core.teams.quota_shares`); a change of the registry itself
brings the shares in step at once (ApplyTeamChange). On Delete (the
stack or the queue going away) every share of the queue disabled and, once Batch reads it
DISABLED, deleted (`spotline.aws.teams.quota_shares.tear_down`). It always answers CloudFormation's
ResponseURL (`spotline.aws.common.custom_resource`): on Create and Update FAILED with the reason when
anything goes wrong; on Delete always SUCCESS, so Spotline's own clean-up never leaves a stack in
DELETE_FAILED: a share it could not delete (a Batch error, the wait for DISABLED running out of
time) is logged and named in the answer's Reason and Data (`LeftInPlace`), with what to run.

ResourceProperties: JobQueue (the queue's ARN), TeamRegistryBucket (the registry's bucket),
Capacity (TrainingCapacity: `ml.g5.2xlarge=8,...`, the service environment's limit per instance type).
PhysicalResourceId: the queue's ARN, so a replaced queue's old shares are torn down by the Delete
CloudFormation sends for the old id.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import custom_resource
from spotline.aws.common.custom_resource import CustomResourceError, Result
from spotline.aws.common.observability import logger
from spotline.aws.teams import quota_shares
from spotline.aws.teams.team_registry import read_registry
from spotline.core.teams.quota_shares import QuotaSharesInvalid, parse_capacity

JOB_QUEUE_ARN = re.compile(r"^arn:aws[a-z-]*:batch:[a-z0-9-]+:[0-9]{12}:job-queue/[A-Za-z0-9_-]{1,128}$")
MAX_DATA_NAMES = 1000  # characters of share names in Data (20 names of at most 24 fit)
# The tear-down's waiting stops this long before the watchdog answers (custom_resource's margin),
# leaving time for the DeleteQuotaShare calls and the answer itself.
TEARDOWN_SLACK_SECONDS = 20.0


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> None:
    properties = event.get("ResourceProperties") or {}
    deadline = time.monotonic() + context.get_remaining_time_in_millis() / 1000.0 - TEARDOWN_SLACK_SECONDS
    custom_resource.run(
        event,
        context,
        lambda request: _sync(request, deadline),
        failure_physical_id=str(properties.get("JobQueue") or "") or None,
        delete_succeeds=True,
    )


def _sync(event: Mapping[str, Any], deadline: float | None = None) -> Result:
    request = event.get("RequestType")
    properties = event.get("ResourceProperties") or {}
    if request == "Delete":
        queue = str(event.get("PhysicalResourceId") or "")
        if not JOB_QUEUE_ARN.match(queue):
            logger.info("Nothing was created for this resource: nothing to delete", extra={"physicalId": queue})
            return Result(queue or custom_resource.fallback_physical_id(event))
        return _tear_down(queue, deadline)
    if request not in ("Create", "Update"):
        raise CustomResourceError(f"RequestType {request!r} is not Create, Update or Delete")
    queue = _required(properties, "JobQueue")
    policy = read_registry(_required(properties, "TeamRegistryBucket")).policy()
    planned = quota_shares.reconcile(queue, policy, _capacity(_required(properties, "Capacity")))
    counts = planned.summary
    logger.info("Quota shares in step with the team policy", extra={"jobQueue": queue, **counts})
    return Result(
        queue,
        {
            "JobQueueArn": queue,
            "QuotaShareNames": ",".join(share.name for share in planned.desired)[:MAX_DATA_NAMES],
            "Warnings": str(len(planned.warnings)),
            **{kind.capitalize() + "d": str(n) for kind, n in counts.items() if kind != "delete"},
        },
    )


def _tear_down(queue: str, deadline: float | None) -> Result:
    """Delete the queue's shares; never fails: what could not be deleted is logged and named."""
    try:
        removed = quota_shares.tear_down(queue, deadline=deadline)
    except Exception as exc:  # a Delete never answers FAILED: the stack's deletion must go on
        deleted = exc.deleted if isinstance(exc, quota_shares.TeardownIncomplete) else ()
        left = exc.left if isinstance(exc, quota_shares.TeardownIncomplete) else ("unknown",)
        cause = exc.reason if isinstance(exc, quota_shares.TeardownIncomplete) else f"{type(exc).__name__}: {exc}"
        logger.exception(
            "Quota shares left in place: the stack's deletion goes on",
            extra={"jobQueue": queue, "deleted": list(deleted), "leftInPlace": list(left), "cause": cause},
        )
        reason = (
            f"Quota shares left in place on {queue}: {', '.join(left)} ({cause}). The stack's deletion goes on; "
            "for each share run aws batch update-quota-share --state DISABLED --quota-share-arn "
            f"{queue}/quota-share/<share>, then aws batch delete-quota-share with the same ARN once it reads DISABLED."
        )
        return Result(
            queue,
            {"Deleted": str(len(deleted)), "LeftInPlace": ",".join(left)[:MAX_DATA_NAMES]},
            reason=reason,
        )
    return Result(queue, {"Deleted": str(sum(a.kind == "delete" for a in removed))})


def _required(properties: Mapping[str, Any], name: str) -> str:
    value = properties.get(name)
    if not isinstance(value, str) or not value:
        raise CustomResourceError(f"ResourceProperties.{name} is required (a non-empty string)")
    return value


def _capacity(text: str) -> dict[str, int]:
    try:
        return parse_capacity(text)
    except QuotaSharesInvalid as exc:
        raise CustomResourceError(f"ResourceProperties.Capacity: {exc}") from None
