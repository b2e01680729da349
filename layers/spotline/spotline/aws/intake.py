"""Starting the lifecycle for a manifest version, exactly once per version."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from spotline.aws.clients import client, error_code
from spotline.aws.observability import logger
from spotline.core.naming import ManifestLocation, execution_name, manifest_location


@dataclass(frozen=True, slots=True)
class IntakeSettings:
    state_machine_arn: str
    ingest_bucket: str

    @classmethod
    def from_environment(cls) -> IntakeSettings:
        return cls(state_machine_arn=os.environ["STATE_MACHINE_ARN"], ingest_bucket=os.environ["INGEST_BUCKET"])

    def execution_arn(self, name: str) -> str:
        # arn:aws:states:<region>:<account>:stateMachine:<sm> -> ...:execution:<sm>:<name>
        prefix, _, machine = self.state_machine_arn.rpartition(":stateMachine:")
        return f"{prefix}:execution:{machine}:{name}"


def requested_manifest(settings: IntakeSettings, detail: dict[str, Any]) -> tuple[ManifestLocation, str | None] | str:
    """The manifest a "Training Requested" event names ({bucket, key, versionId?}), pinned to a
    version (the current one when none is given), or the reason it cannot be used."""
    bucket, key, version = detail.get("bucket"), detail.get("key"), detail.get("versionId")
    if bucket != settings.ingest_bucket:
        return f"bucket {bucket!r} is not the ingest bucket {settings.ingest_bucket}"
    location = manifest_location(bucket, key, version) if isinstance(key, str) else None
    if location is None:
        return f"key {key!r} is not a manifest under manifests/<team>/ (.yaml, .yml or .json)"
    request: dict[str, Any] = {"Bucket": bucket, "Key": key, **({"VersionId": version} if version else {})}
    try:
        head = client("s3").head_object(**request)
    except Exception as exc:
        if error_code(exc) in ("404", "NoSuchKey", "NoSuchVersion", "400"):
            return f"s3://{bucket}/{key} (version {version or 'latest'}) does not exist"
        raise
    pinned = ManifestLocation(location.bucket, location.key, head.get("VersionId") or version, location.team)
    return pinned, str(head.get("ETag", "")).strip('"') or None


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
