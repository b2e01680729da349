"""Dataset readiness and the executions waiting for it (DynamoDB), race-free.

One table, two kinds of items under `pk = DATASET#<name>`:
- `sk = READY`: the dataset is ready (location, producedAt), kept until `expiresAt` (TTL);
- `sk = WAITER#<execution>`: an execution waits for it with a task token.

Both sides write first and read second, with strongly consistent reads: a waiter registers,
then checks readiness; a Dataset Ready event records readiness, then looks for waiters. Whatever
the interleaving, at least one of them sees the other and releases the execution; releasing
twice is harmless (the second SendTaskSuccess finds the token already used and is ignored).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from boto3.dynamodb.conditions import Key

from spotline.aws.common.clients import error_code, resource
from spotline.aws.common.observability import logger
from spotline.core.spec.model import to_rfc3339

READY = "READY"
WAITER_PREFIX = "WAITER#"
SPENT_TOKEN_CODES = {"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"}
WAITER_GRACE = timedelta(days=1)


def _pk(dataset: str) -> str:
    return f"DATASET#{dataset}"


@dataclass(frozen=True)
class DatasetStore:
    table: Any  # boto3 DynamoDB Table resource
    readiness_ttl: timedelta

    def readiness(self, datasets: list[str]) -> dict[str, dict[str, Any]]:
        """Ready datasets among `datasets`, with their location and producedAt (consistent read)."""
        ready = {}
        for dataset in datasets:
            item = self.table.get_item(Key={"pk": _pk(dataset), "sk": READY}, ConsistentRead=True).get("Item")
            if item:
                ready[dataset] = {"location": item.get("location"), "producedAt": item.get("producedAt")}
        return ready

    def record_ready(self, dataset: str, *, location: str | None, produced_at: str | None, now: datetime) -> None:
        self.table.put_item(
            Item={
                "pk": _pk(dataset),
                "sk": READY,
                "location": location,
                "producedAt": produced_at,
                "readyAt": to_rfc3339(now),
                "expiresAt": int((now + self.readiness_ttl).timestamp()),
            }
        )

    def register_waiter(
        self, execution: str, token: str, datasets: list[str], *, now: datetime, timeout: timedelta
    ) -> None:
        for dataset in datasets:
            self.table.put_item(
                Item={
                    "pk": _pk(dataset),
                    "sk": WAITER_PREFIX + execution,
                    "taskToken": token,
                    "datasets": datasets,
                    "execution": execution,
                    "since": to_rfc3339(now),
                    "expiresAt": int((now + timeout + WAITER_GRACE).timestamp()),
                }
            )

    def waiters(self, dataset: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        query: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(_pk(dataset)) & Key("sk").begins_with(WAITER_PREFIX),
            "ConsistentRead": True,
        }
        while True:
            page = self.table.query(**query)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def forget_waiter(self, execution: str, datasets: list[str]) -> None:
        for dataset in datasets:
            self.table.delete_item(Key={"pk": _pk(dataset), "sk": WAITER_PREFIX + execution})


def release_if_ready(
    store: DatasetStore, sfn: Any, *, execution: str, token: str, datasets: list[str], now: datetime, released_by: str
) -> bool:
    """Send the waiting execution on when every dataset it needs is ready. True if released."""
    ready = store.readiness(datasets)
    if len(ready) < len(datasets):
        return False
    output = {"ready": True, "datasets": ready, "missing": [], "releasedAt": to_rfc3339(now), "releasedBy": released_by}
    try:
        sfn.send_task_success(taskToken=token, output=json.dumps(output))
    except Exception as exc:
        if error_code(exc) not in SPENT_TOKEN_CODES:
            raise
        logger.info("Execution was already released or has ended", extra={"execution": execution})
    store.forget_waiter(execution, datasets)
    return True


def store_from_environment() -> DatasetStore:
    """The table named by DATASETS_TABLE, readiness kept DATASET_READINESS_TTL_DAYS days."""
    return DatasetStore(
        table=resource("dynamodb").Table(os.environ["DATASETS_TABLE"]),
        readiness_ttl=timedelta(days=int(os.environ.get("DATASET_READINESS_TTL_DAYS", "30"))),
    )
