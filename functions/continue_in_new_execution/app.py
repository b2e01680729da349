"""ContinueInNewExecution: this execution has made its share of status checks; a fresh one
takes the watch over (started with the run's state, the job retagged to it) before Step
Functions' history limit could end the run with its job unwatched."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common.observability import bind_execution, logger
from spotline.aws.training.continuation import continue_in_new_execution


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    return continue_in_new_execution(event["input"], execution_arn=event["execution"]).to_state()
