"""Rejecting a bad event once: to the events dead-letter queue with the reason, logged and
counted, and the handler returns normally, so nothing retries it and nothing is recorded or
started. (Raising would make Lambda and EventBridge retry what no retry can fix.)"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from spotline.aws.common.clients import client
from spotline.aws.common.observability import logger, metrics
from spotline.core.manifest.events import Rejection, dead_letter_body

DEAD_LETTER_QUEUE_URL = "EVENTS_DEAD_LETTER_QUEUE_URL"
ATTRIBUTE_CHARACTERS = 1024


def reject(rejection: Rejection, event: Any) -> dict[str, Any]:
    """Dead-letter, log and count `rejection`; returns the handler's answer
    `{"status": "rejected", "reason", "errors"}`."""
    client("sqs").send_message(
        QueueUrl=os.environ[DEAD_LETTER_QUEUE_URL],
        MessageBody=dead_letter_body(rejection, event),
        MessageAttributes={
            "reason": {"DataType": "String", "StringValue": rejection.reason[:ATTRIBUTE_CHARACTERS]},
            "eventType": {"DataType": "String", "StringValue": rejection.event_type},
        },
    )
    logger.warning(rejection.reason, extra={"eventType": rejection.event_type, "errors": rejection.error_dicts()})
    metrics.add_dimension(name="eventType", value=rejection.event_type)
    metrics.add_metric(name="EventsRejected", unit=MetricUnit.Count, value=1)
    return {"status": "rejected", "reason": rejection.reason, "errors": rejection.error_dicts()}
