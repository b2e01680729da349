"""Intake: one execution per manifest version, whatever the number of deliveries.

Two events lead here: S3 "Object Created" for manifests/<team>/... in the ingest bucket, and
"Training Requested" from the preprocessing pipeline naming a manifest there. A ScoringJob
manifest starts a scoring run instead, or is registered for its datasets (spotline.aws.manifest.scoring_intake).
The execution
name is derived from bucket/key/version, so redeliveries of either event (EventBridge delivers
at least once), or both events for the same version, find it and start nothing. A malformed
event, one for another bucket, or a request for a version that is not the current one (unless
it sets allowNonCurrentVersion) is rejected once, to the events dead-letter queue with the reason.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common.observability import add_team_dimension, log_metrics, logger, metrics
from spotline.aws.manifest.intake import IntakeSettings, manifest_source, requested_manifest, start_for_manifest
from spotline.aws.manifest.rejections import reject
from spotline.aws.manifest.scoring_intake import kind_of, register, start_run
from spotline.core.common.naming import execution_name
from spotline.core.manifest.events import TRAINING_REQUESTED, Rejection, check_object_created, check_training_requested


@log_metrics
@logger.inject_lambda_context
def handler(event: Any, context: LambdaContext) -> dict[str, Any]:
    settings = IntakeSettings.from_environment()
    if isinstance(event, dict) and event.get("detail-type") == TRAINING_REQUESTED:
        request = check_training_requested(event, ingest_bucket=settings.ingest_bucket)
        if isinstance(request, Rejection):
            return reject(request, event)
        found = requested_manifest(request)
        if isinstance(found, Rejection):
            return reject(found, event)
        (location, etag), received_at = found, request.received_at
    else:
        upload = check_object_created(event, ingest_bucket=settings.ingest_bucket)
        if isinstance(upload, Rejection):
            return reject(upload, event)
        if upload.location is None:
            logger.info("Ignored: not a manifest under manifests/<team>/", extra={"key": upload.key})
            return {"status": "ignored", "key": upload.key}
        location, etag, received_at = upload.location, upload.etag, upload.received_at
    kind = kind_of(location)
    if kind.kind == "ScoringJob" and kind.datasets:
        result = register(location, kind, etag=etag, received_at=received_at)
    elif kind.kind == "ScoringJob":
        source = manifest_source(location, etag=etag, received_at=received_at)
        result = start_run(source, ready_at=received_at, dataset=None, name=execution_name(location))
    else:
        result = start_for_manifest(settings, location, etag=etag, received_at=received_at)
    add_team_dimension(location.team)
    name = "DuplicateDeliveries" if result["status"] == "duplicate" else "ExecutionsStarted"
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=1)
    return result
