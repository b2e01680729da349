"""Intake: one execution per manifest version, whatever the number of deliveries.

Two events lead here: S3 "Object Created" for manifests/<team>/... in the ingest bucket, and
"Training Requested" from the preprocessing pipeline naming a manifest there. The execution
name is derived from bucket/key/version, so redeliveries of either event (EventBridge delivers
at least once), or both events for the same version, find it and start nothing.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, S3EventBridgeNotificationEvent
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.intake import IntakeSettings, requested_manifest, start_for_manifest
from spotline.aws.observability import add_team_dimension, logger, metrics
from spotline.core.naming import manifest_location

TRAINING_REQUESTED = "Training Requested"


@metrics.log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = IntakeSettings.from_environment()
    if event.get("detail-type") == TRAINING_REQUESTED:
        request = EventBridgeEvent(event)
        found = requested_manifest(settings, request.detail)
        if isinstance(found, str):
            logger.warning("Training request ignored", extra={"reason": found, "detail": request.detail})
            metrics.add_metric(name="TrainingRequestsIgnored", unit=MetricUnit.Count, value=1)
            return {"status": "ignored", "reason": found}
        location, etag = found
    else:
        upload = S3EventBridgeNotificationEvent(event)
        obj = upload.detail.object
        location = manifest_location(upload.detail.bucket.name, obj.key, obj.get("version-id"))
        etag = obj.get("etag")
        if location is None:
            logger.info("Ignored: not a manifest under manifests/<team>/", extra={"key": obj.key})
            return {"status": "ignored", "key": obj.key}
    result = start_for_manifest(settings, location, etag=etag, received_at=event["time"])
    add_team_dimension(location.team)
    name = "DuplicateDeliveries" if result["status"] == "duplicate" else "ExecutionsStarted"
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
    return result
