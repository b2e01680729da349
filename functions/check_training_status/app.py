"""CheckTrainingStatus: Batch + SageMaker + progress.json -> one normalized status, the
deadline policy's verdict, what happens next, and when to look again."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.capacity.checking import check
from spotline.aws.common import clock
from spotline.aws.common.observability import bind_execution, log_metrics, logger
from spotline.core.state import RunStatus


@log_metrics  # PriorityRaises when a queued job's priority is raised (spotline.aws.capacity.queue_state)
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    # The check's answer read into its record: a key it no longer gives fails here, not at the
    # ResultSelector or, silently, in the step that reads it next.
    status = RunStatus.from_state(
        check(
            event["input"],
            execution_arn=event["execution"],
            now=clock.now(),
            region=os.environ.get("AWS_REGION", "us-east-1"),
        )
    )
    logger.info(
        "Training status",
        extra={
            "state": status.state,
            "secondaryStatus": status.secondary_status,
            "action": status.action,
            "explanation": status.explanation,
            "nextPollSeconds": status.next_poll_seconds,
        },
    )
    return status.to_state()
