"""TrainingEventGate: a Batch "Service Job State Change" or SageMaker "Training Job State
Change" of a Spotline job wakes the execution watching it, so completion, failure, a spot stop
or an interruption is acted on within seconds rather than at the next timed check.

The rules match only the changes worth acting on (see template.yaml). The event is a signal,
not a source of truth: the woken execution reads Batch and SageMaker itself. Events of other
jobs, or of jobs no execution watches any more, change nothing. Duplicates wake at most one
extra check."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.clients import client, error_code
from spotline.aws.common.observability import log_metrics, logger, metrics
from spotline.aws.training.training_watch import release, watches_from_environment
from spotline.core.training.service_jobs import EXECUTION_TAG
from spotline.core.training.training_events import TrainingChange, training_change_of


@log_metrics
@logger.inject_lambda_context
def handler(event: Any, context: LambdaContext) -> dict[str, Any]:
    change = training_change_of(event)
    if change is None:
        logger.warning("Not a training job state change Spotline reads", extra={"detailType": _kind(event)})
        return {"woken": None, "ignored": "not a training job state change"}
    execution = change.execution or _execution_of_service_job(change)
    if execution is None:
        return {"woken": None, "ignored": f"{change.summary}: not a Spotline job"}
    now = clock.now()
    token = watches_from_environment().record(execution, change.to_dict(), now=now)
    woken = token is not None and release(token, change.to_dict(), now=now, execution=execution)
    logger.info("Training job changed", extra={"execution": execution, "change": change.summary, "woken": woken})
    metrics.add_metric(name="TrainingEventsReceived", unit=MetricUnit.Count, value=1)
    return {"woken": execution if woken else None, "change": change.summary}


def _execution_of_service_job(change: TrainingChange) -> str | None:
    """A Batch event carries no tags: the service job's own say whose execution it is, read in the
    region the job lives in (a peer's forwarded event names its own region)."""
    if change.source != "batch":
        return None
    try:
        described = client("batch", change.region).describe_service_job(jobId=change.job)
    except Exception as exc:
        if error_code(exc) == "ClientException":
            return None  # not a job of this account and region any more
        raise
    execution = (described.get("tags") or {}).get(EXECUTION_TAG)
    return str(execution) if execution else None


def _kind(event: Any) -> str:
    return str(event.get("detail-type"))[:128] if isinstance(event, dict) else type(event).__name__
