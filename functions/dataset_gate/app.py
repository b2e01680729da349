"""DatasetGate: a "Dataset Ready" event from the preprocessing pipeline records readiness and
releases every execution waiting on that dataset (whose other datasets are ready too).
Duplicate events are harmless: readiness is overwritten, releases are idempotent."""

from __future__ import annotations

import re
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws import clock
from spotline.aws.clients import client
from spotline.aws.datasets import release_if_ready, store_from_environment
from spotline.aws.observability import logger, metrics

DATASET_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")  # as spec.dependsOn[].dataset in the manifest schema


@metrics.log_metrics
@logger.inject_lambda_context
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    detail = event.detail
    dataset = detail.get("dataset")
    if not isinstance(dataset, str) or not DATASET_NAME.match(dataset):
        # Retrying cannot fix a malformed event: say so and drop it instead of filling the DLQ.
        logger.error("Dataset Ready event without a valid detail.dataset", extra={"detail": detail})
        metrics.add_metric(name="DatasetEventsIgnored", unit=MetricUnit.Count, value=1)
        return {"ignored": "detail.dataset must match ^[A-Za-z0-9._-]{1,128}$ (the manifest's dependsOn names)"}
    store, now, sfn = store_from_environment(), clock.now(), client("stepfunctions")
    store.record_ready(dataset, location=detail.get("location"), produced_at=detail.get("producedAt"), now=now)
    released = [
        waiter["execution"]
        for waiter in store.waiters(dataset)
        if release_if_ready(
            store,
            sfn,
            execution=waiter["execution"],
            token=waiter["taskToken"],
            datasets=list(waiter["datasets"]),
            now=now,
            released_by=dataset,
        )
    ]
    logger.info("Dataset ready", extra={"dataset": dataset, "released": released})
    metrics.add_metric(name="DatasetsReady", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="ExecutionsReleased", unit=MetricUnit.Count, value=len(released))
    return {"dataset": dataset, "released": released}
