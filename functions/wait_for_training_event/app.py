"""WaitForTrainingEvent: register the execution's task token as waiting for its training job's
next change, then release it at once if a change came since CheckTrainingStatus read the
status. TrainingEventGate releases it otherwise; the state's timeout (the next timed check)
ends the wait when nothing happens."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.observability import bind_execution, logger
from spotline.aws.training.training_watch import release, watches_from_environment
from spotline.core.training.service_jobs import execution_name_of


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    execution, token, now = execution_name_of(event["execution"]), event["taskToken"], clock.now()
    change = watches_from_environment().register(
        execution,
        token,
        checked_at=datetime.fromisoformat(event["checkedAt"]),
        now=now,
        timeout_seconds=int(event["timeoutSeconds"]),
    )
    released = change is not None and release(token, change, now=now, execution=execution)
    logger.info(
        "A change came meanwhile" if released else "Waiting for the training job's next change",
        extra={"timeoutSeconds": event["timeoutSeconds"], "change": change},
    )
    return {"registered": True, "releasedAtOnce": released}
