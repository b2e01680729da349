"""StopSpotJob: terminate the spot job before the run moves (to on-demand, a training plan, or spot
on another instance type or region) and tell on-call (`spotline.aws.capacity.moves`); returns `$.fallback`."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.capacity.moves import stop_for_move
from spotline.aws.common import clock
from spotline.aws.common.observability import bind_execution, log_metrics, logger
from spotline.core.state import ManifestCheck, RunStatus, Training


@log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    state = event["input"]
    job = ManifestCheck.of_state(state).job
    if job is None:
        raise ValueError("the execution state has no $.manifest.job: StopSpotJob runs only after LoadManifest")
    fallback = stop_for_move(
        job,
        Training.of_state(state),
        RunStatus.of_state(state),
        topic_arn=os.environ["ALERT_TOPIC_ARN"],
        now=clock.now(),
    )
    return fallback.to_state()
