"""Intake: an S3 "Object Created" event for manifests/<team>/... starts one execution per
manifest version. The execution name is derived from bucket/key/version, so redeliveries of
the same event (S3 and EventBridge deliver at least once) find it and start nothing."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import S3EventBridgeNotificationEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.intake import IntakeSettings, start_for_manifest
from spotline.naming import manifest_location
from spotline.observability import add_team_dimension, logger, metrics


@metrics.log_metrics
@logger.inject_lambda_context
@event_source(data_class=S3EventBridgeNotificationEvent)
def handler(event: S3EventBridgeNotificationEvent, context: LambdaContext) -> dict[str, Any]:
    obj = event.detail.object
    location = manifest_location(event.detail.bucket.name, obj.key, obj.get("version-id"))
    if location is None:
        logger.info("Ignored: not a manifest under manifests/<team>/", extra={"key": obj.key})
        return {"status": "ignored", "key": obj.key}
    result = start_for_manifest(
        IntakeSettings.from_environment(), location, etag=obj.get("etag"), received_at=event.time
    )
    add_team_dimension(location.team)
    metrics.add_metric(
        name="DuplicateDeliveries" if result["status"] == "duplicate" else "ExecutionsStarted",
        unit=MetricUnit.Count,
        value=1,
    )
    return result
