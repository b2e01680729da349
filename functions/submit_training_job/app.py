"""SubmitTrainingJob: queue the run's next attempt, a SageMaker training job, on AWS Batch
(`spotline.aws.training.attempts`: placed, its checkpoint copied where it runs, submitted once, logged);
returns it as `$.training`."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.observability import bind_execution, log_metrics, logger
from spotline.aws.manifest.spec_store import spec_of
from spotline.aws.training.attempts import submit_next_attempt
from spotline.core.state import RunStatus, Training


@log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    state = event["input"]
    training = submit_next_attempt(
        state,
        spec_of(state),
        execution_arn=event["execution"],
        training=Training.in_state(state),
        status=RunStatus.in_state(state),
        now=clock.now(),
        seconds_left=context.get_remaining_time_in_millis() / 1000,
    )
    return training.to_state()
