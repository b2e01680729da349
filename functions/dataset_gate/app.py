"""DatasetGate: a "Dataset Ready" event from the preprocessing pipeline records readiness and
releases every execution waiting on that dataset (whose other datasets are ready too), and starts
the night's run of every scoring job registered for it (spotline.aws.manifest.scoring_intake).
Duplicate events are harmless: readiness is overwritten, releases are idempotent. A malformed
event is rejected once (events dead-letter queue, with the reason) and records nothing."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.clients import client
from spotline.aws.common.observability import log_metrics, logger, metrics
from spotline.aws.datasets.datasets import release_if_ready, store_from_environment
from spotline.aws.manifest.rejections import reject
from spotline.aws.manifest.scoring_intake import start_ready_runs
from spotline.core.manifest.events import Rejection, check_dataset_ready
from spotline.core.spec.model import to_rfc3339


@log_metrics
@logger.inject_lambda_context
def handler(event: Any, context: LambdaContext) -> dict[str, Any]:
    ready = check_dataset_ready(event)
    if isinstance(ready, Rejection):
        return reject(ready, event)  # once, with the reason: retrying cannot fix a malformed event
    dataset = ready.dataset
    store, now, sfn = store_from_environment(), clock.now(), client("stepfunctions")
    store.record_ready(dataset, location=ready.location, produced_at=ready.produced_at, now=now)
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
    scoring = start_ready_runs(dataset, store.readiness, to_rfc3339(now))
    logger.info("Dataset ready", extra={"dataset": dataset, "released": released, "scoring": scoring})
    metrics.add_metric(name="DatasetsReady", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="ExecutionsReleased", unit=MetricUnit.Count, value=len(released))
    return {
        "dataset": dataset,
        "released": released,
        **({"scoringRuns": [r["name"] for r in scoring]} if scoring else {}),
    }
