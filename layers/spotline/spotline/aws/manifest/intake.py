"""Starting the lifecycle for a manifest version, exactly once per version."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from spotline.aws.common.clients import client, error_code
from spotline.aws.common.observability import logger
from spotline.aws.manifest.s3_answers import is_missing, manifest_uri, unreadable
from spotline.core.common.naming import ManifestLocation, execution_name
from spotline.core.manifest.events import TRAINING_REQUESTED, Rejection, TrainingRequest


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


def requested_manifest(request: TrainingRequest) -> tuple[ManifestLocation, str | None] | Rejection:
    """The manifest version a checked "Training Requested" event names, with its ETag, or why it
    cannot be trained: it does not exist, or it is not the current version of the manifest and
    the event does not set `allowNonCurrentVersion` (a stale request must not train old code)."""
    location, wanted = request.location, request.location.version_id
    uri = f"s3://{location.bucket}/{location.key}"
    current = _head(location, None)
    if current is not None and wanted in (None, current.get("VersionId")):
        head = current
    elif wanted is None:
        return Rejection.of(
            TRAINING_REQUESTED, "detail.key", f"{uri} does not exist (never uploaded, or deleted since)"
        )
    else:
        requested = _head(location, wanted)
        if requested is None:
            return Rejection.of(TRAINING_REQUESTED, "detail.versionId", f"version {wanted} of {uri} does not exist")
        head = requested
        if not request.allow_non_current_version:
            now = f"the current one is {current.get('VersionId')}" if current else "the manifest has been deleted"
            return Rejection.of(
                TRAINING_REQUESTED,
                "detail.versionId",
                f"{wanted} is not the current version of {uri} ({now}); "
                "set detail.allowNonCurrentVersion to true to train it anyway",
            )
    pinned = ManifestLocation(location.bucket, location.key, head.get("VersionId") or wanted, location.team)
    return pinned, str(head.get("ETag", "")).strip('"') or None


def _head(location: ManifestLocation, version: str | None) -> dict[str, Any] | None:
    """HeadObject of the manifest (a version, or the current one), None if there is none.

    404 (also when the current version is a delete marker; 405 for a version id naming one) and
    400 (S3's answer to a malformed version id) mean none. A 403 is a real denial, raised as
    ManifestUnreadable: Intake may list the ingest bucket, so S3 answers 404 for a missing key
    (`spotline.aws.manifest.s3_answers`); Lambda retries it, then the function's dead-letter queue
    keeps the event with that message."""
    request: dict[str, Any] = {"Bucket": location.bucket, "Key": location.key}
    if version:
        request["VersionId"] = version
    try:
        return client("s3").head_object(**request)  # type: ignore[no-any-return]
    except Exception as exc:
        if is_missing(exc) or error_code(exc) == "400":
            return None
        raise unreadable(exc, manifest_uri(location.bucket, location.key, version), "Intake") from exc


def manifest_source(location: ManifestLocation, *, etag: str | None, received_at: str) -> dict[str, Any]:
    """The manifest version an execution runs, as its input names it (every state machine's)."""
    return {
        "bucket": location.bucket,
        "key": location.key,
        "versionId": location.version_id,
        "etag": etag,
        "team": location.team,
        "receivedAt": received_at,
    }


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
        **manifest_source(location, etag=etag, received_at=received_at),
        # A fresh run; an execution that continues a long run names the one before it here
        # (the state machine's first question, IsItAContinuation?, reads it: always present).
        "continuedFrom": None,
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
