"""CheckDatasets: are the manifest's dependsOn datasets already ready? Then there is no wait."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common.observability import bind_execution, logger
from spotline.aws.datasets.datasets import store_from_environment
from spotline.aws.manifest.spec_store import spec_of
from spotline.core.state import DatasetCheck


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    needed = list(spec_of(event["input"]).depends_on)
    ready = store_from_environment().readiness(needed)
    missing = [d for d in needed if d not in ready]
    logger.info("Datasets checked", extra={"ready": sorted(ready), "missing": missing})
    return DatasetCheck(ready=not missing, datasets=ready, missing=missing).to_state()
