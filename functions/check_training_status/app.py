"""CheckTrainingStatus: Batch + SageMaker + progress.json -> one normalized status, the
deadline policy's verdict, what happens next, and when to look again."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws import clock
from spotline.aws.checking import check
from spotline.aws.observability import bind_execution, log_metrics, logger


@log_metrics  # PriorityRaises when a queued job's priority is raised (spotline.aws.queue_state)
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    result = check(
        event["input"],
        execution_arn=event["execution"],
        now=clock.now(),
        region=os.environ.get("AWS_REGION", "us-east-1"),
    )
    logger.info(
        "Training status",
        extra={k: result[k] for k in ("state", "secondaryStatus", "action", "explanation", "nextPollSeconds")},
    )
    return result
