"""Executions waiting for their training job's next change (DynamoDB), race-free.

One item per execution, `pk = <execution name>` (the `spotline:execution` tag's value):
- WaitForTrainingEvent stores the task token of the wait that follows a status check;
- TrainingEventGate records each Batch or SageMaker change of the execution's jobs
  (`lastEventAt`, in milliseconds) and takes the token, if one waits.

Both write first and read what the write left, in one UpdateItem each, so whatever the
interleaving one of them sees the other: a change recorded after the check read the status
(`lastEventAt` > `checkedAt`) releases the wait at once, at registration. Whoever removes the
token sends it; a token already spent (the wait timed out, the execution ended) is ignored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from spotline.aws.common.clients import client, error_code, resource
from spotline.aws.common.observability import logger
from spotline.core.spec.model import to_rfc3339

SPENT_TOKEN_CODES = {"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"}
ITEM_GRACE = timedelta(days=1)
"""How long an item outlives its wait or its last event (TTL), for on-call to read."""
TABLE_VARIABLE = "TRAINING_WATCHES_TABLE"
MAX_HAND_OVERS = 100
"""How many continuations a change follows (a 28-day run needs a handful)."""


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@dataclass(frozen=True)
class TrainingWatches:
    table: Any  # boto3 DynamoDB Table resource

    def register(
        self, execution: str, token: str, *, checked_at: datetime, now: datetime, timeout_seconds: int
    ) -> dict[str, Any] | None:
        """Store the wait's token. Returns the change recorded since `checked_at` (the moment
        the status the execution acts on was read) if there is one and the token is still
        here: the caller releases the wait at once with it."""
        item = self.table.update_item(
            Key={"pk": execution},
            UpdateExpression="SET taskToken = :token, registeredAt = :now, expiresAt = :expires",
            ExpressionAttributeValues={
                ":token": token,
                ":now": to_rfc3339(now),
                ":expires": int((now + timedelta(seconds=timeout_seconds) + ITEM_GRACE).timestamp()),
            },
            ReturnValues="ALL_NEW",
        )["Attributes"]
        if int(item.get("lastEventAt", 0)) <= _millis(checked_at):
            return None
        if not self._take(execution, token):
            return None  # the gate took it meanwhile and releases the wait itself
        return json.loads(str(item.get("lastEvent") or "{}"))  # type: ignore[no-any-return]

    def record(self, execution: str, change: dict[str, Any], *, now: datetime) -> str | None:
        """Record a change of the execution's job; returns the waiting token, now taken, if any.
        An execution that handed its watch over passes the change on to the next."""
        for _ in range(MAX_HAND_OVERS):
            item = self._record(execution, change, now=now)
            if not item.get("continuedAs"):
                token = item.get("taskToken")
                return str(token) if token else None
            execution = str(item["continuedAs"])
        return None

    def continue_as(self, execution: str, successor: str) -> None:
        """Changes recorded for `execution` from now on go to `successor`."""
        self.table.update_item(
            Key={"pk": execution},
            UpdateExpression="SET continuedAs = :next REMOVE taskToken",
            ExpressionAttributeValues={":next": successor},
        )

    def _record(self, execution: str, change: dict[str, Any], *, now: datetime) -> dict[str, Any]:
        old = self.table.update_item(
            Key={"pk": execution},
            UpdateExpression="SET lastEventAt = :at, lastEvent = :event, expiresAt = :expires REMOVE taskToken",
            ExpressionAttributeValues={
                ":at": _millis(now),
                ":event": json.dumps(change),
                ":expires": int((now + ITEM_GRACE).timestamp()),
            },
            ReturnValues="ALL_OLD",
        ).get("Attributes", {})
        return dict(old)

    def _take(self, execution: str, token: str) -> bool:
        try:
            self.table.update_item(
                Key={"pk": execution},
                UpdateExpression="REMOVE taskToken",
                ConditionExpression="taskToken = :token",
                ExpressionAttributeValues={":token": token},
            )
        except Exception as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True


def release(token: str, change: dict[str, Any], *, now: datetime, execution: str) -> bool:
    """Send the waiting execution on to its next check, with the change that woke it. False when
    the token was already spent (the wait had timed out or the execution ended)."""
    output = {"wokenBy": change, "wokenAt": to_rfc3339(now)}
    try:
        client("stepfunctions").send_task_success(taskToken=token, output=json.dumps(output))
    except Exception as exc:
        if error_code(exc) not in SPENT_TOKEN_CODES:
            raise
        logger.info("The wait had already ended", extra={"execution": execution})
        return False
    return True


def watches_from_environment() -> TrainingWatches:
    return TrainingWatches(resource("dynamodb").Table(os.environ[TABLE_VARIABLE]))
