"""RecordOutcome: metrics, an outcome report beside the manifest, and a message to on-call
when the run failed. Returns the outcome the state machine routes on."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.billing.reporting import record_outcome
from spotline.aws.common import clock
from spotline.aws.common.observability import bind_execution, log_metrics, logger


@log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    result = record_outcome(
        event["input"],
        execution_arn=event["execution"],
        now=clock.now(),
        topic_arn=os.environ["ALERT_TOPIC_ARN"],
        region=os.environ.get("AWS_REGION", "us-east-1"),
    )
    logger.info("Outcome recorded", extra={"outcome": result.name, "report": result.report})
    return result.to_state()
