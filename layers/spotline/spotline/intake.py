"""Starting the lifecycle for a manifest version, exactly once per version."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from spotline.aws import client, error_code
from spotline.naming import ManifestLocation, execution_name
from spotline.observability import logger


@dataclass(frozen=True, slots=True)
class IntakeSettings:
    state_machine_arn: str

    @classmethod
    def from_environment(cls) -> IntakeSettings:
        return cls(state_machine_arn=os.environ["STATE_MACHINE_ARN"])

    def execution_arn(self, name: str) -> str:
        # arn:aws:states:<region>:<account>:stateMachine:<sm> -> ...:execution:<sm>:<name>
        prefix, _, machine = self.state_machine_arn.rpartition(":stateMachine:")
        return f"{prefix}:execution:{machine}:{name}"


def start_for_manifest(
    settings: IntakeSettings, location: ManifestLocation, *, etag: str | None, received_at: str
) -> dict[str, Any]:
    """Start the execution for this manifest version unless it already exists.

    Returns {"status": "started" | "duplicate", "executionArn", "name"}. The input carries the
    event's own timestamp, not the time of this call, so a redelivery sends identical input.
    """
    sfn = client("stepfunctions")
    name = execution_name(location)
    arn = settings.execution_arn(name)
    try:
        existing = sfn.describe_execution(executionArn=arn)
    except Exception as exc:
        if error_code(exc) != "ExecutionDoesNotExist":
            raise
    else:
        logger.info("Duplicate delivery: execution exists", extra={"execution": arn, "status": existing["status"]})
        return {"status": "duplicate", "executionArn": arn, "name": name}
    payload = {
        "bucket": location.bucket,
        "key": location.key,
        "versionId": location.version_id,
        "etag": etag,
        "team": location.team,
        "receivedAt": received_at,
    }
    try:
        sfn.start_execution(stateMachineArn=settings.state_machine_arn, name=name, input=json.dumps(payload))
    except Exception as exc:
        if error_code(exc) != "ExecutionAlreadyExists":
            raise
        logger.info("Duplicate delivery: execution started concurrently", extra={"execution": arn})
        return {"status": "duplicate", "executionArn": arn, "name": name}
    logger.info("Execution started", extra={"execution": arn, "key": location.key})
    return {"status": "started", "executionArn": arn, "name": name}
