"""WaitForDatasets: register the execution's task token as waiting for its datasets, then
check once more (a Dataset Ready event may have arrived since CheckDatasets) and release it at
once if so. DatasetGate releases it otherwise; the state's timeout ends it in DependencyTimeout."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.clients import client
from spotline.aws.common.observability import bind_execution, logger
from spotline.aws.datasets.datasets import release_if_ready, store_from_environment
from spotline.aws.manifest.spec_store import spec_of


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    spec = spec_of(event["input"])
    datasets, execution, token = list(spec.depends_on), event["execution"], event["taskToken"]
    store, now = store_from_environment(), clock.now()
    store.register_waiter(
        execution, token, datasets, now=now, timeout=timedelta(seconds=spec.dependency_timeout_seconds)
    )
    released = release_if_ready(
        store,
        client("stepfunctions"),
        execution=execution,
        token=token,
        datasets=datasets,
        now=now,
        released_by="registration",
    )
    logger.info(
        "Waiting for datasets" if not released else "Datasets became ready meanwhile", extra={"datasets": datasets}
    )
    return {"registered": True, "releasedAtOnce": released}
