"""LoadManifest: read the exact manifest version, validate it, and either store the normalized
spec for the later steps (the state carries a reference and a summary) or leave a rejection
report beside the manifest (never touching it). A version deleted before it is read is
`missing` (the execution ends in ManifestNotFound); S3 refusing the read raises
ManifestUnreadable (UnexpectedError, for the platform team)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.observability import add_team_dimension, bind_execution, log_metrics, logger, metrics
from spotline.aws.manifest.manifest_store import load_and_validate
from spotline.core.state import RunInput


@log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    run = RunInput.from_state(event["input"])
    result = load_and_validate(run, execution=event["execution"], now=clock.now())
    add_team_dimension(run.team or "")
    if result.missing:
        metrics.add_metric(name="ManifestsMissing", unit=MetricUnit.Count, value=1)
        logger.warning("Manifest version no longer exists", extra={"key": run.manifest_key, "reason": result.summary})
        return result.to_state()
    metrics.add_metric(
        name="ManifestsAccepted" if result.valid else "ManifestsRejected", unit=MetricUnit.Count, value=1
    )
    if not result.valid:
        errors = [e.to_state() for e in result.errors]
        logger.warning(
            "Manifest rejected", extra={"errors": errors, "errorCount": result.error_count, "report": result.report}
        )
    return result.to_state()
