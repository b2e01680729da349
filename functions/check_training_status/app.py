"""CheckTrainingStatus: Batch + SageMaker -> one normalized status and the next poll interval."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline import clock, links
from spotline.aws import client, error_code
from spotline.model import JobSpec, to_rfc3339
from spotline.observability import bind_execution, logger
from spotline.polling import next_poll_seconds
from spotline.status import normalize, training_job_name_of


def _describe_training_job(name: str | None) -> dict[str, Any] | None:
    if not name:
        return None
    try:
        return client("sagemaker").describe_training_job(TrainingJobName=name)  # type: ignore[no-any-return]
    except Exception as exc:
        if error_code(exc) in ("ValidationException", "ResourceNotFound"):
            return None  # Batch knows the ARN a moment before SageMaker shows the job
        raise


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    state = event["input"]
    spec = JobSpec.from_dict(state["manifest"]["spec"])
    training = state["training"]
    now = clock.now()
    batch_job = client("batch").describe_service_job(jobId=training["jobId"])
    training_job = _describe_training_job(training_job_name_of(batch_job))
    status = normalize(batch_job, training_job, now)
    submitted = datetime.fromisoformat(training["submittedAt"])
    queue_wait = (status.started_at - submitted).total_seconds() if status.started_at else None
    deadline = spec.deadline_at
    interval = next_poll_seconds(
        status,
        seconds_since_submit=(now - submitted).total_seconds(),
        expected_duration=spec.expected_duration_seconds,
        deadline_slack=(deadline - now).total_seconds() if deadline else None,
    )
    logger.info(
        "Training status",
        extra={
            "state": status.state,
            "secondary": status.secondary_status,
            "reason": status.reason,
            "nextPollSeconds": interval,
        },
    )
    region = os.environ.get("AWS_REGION", "us-east-1")
    return {
        "state": status.state,
        "finished": status.finished,
        "reasonClass": status.reason_class,
        "reason": status.reason,
        "batchStatus": status.batch_status,
        "secondaryStatus": status.secondary_status,
        "trainingJobName": status.training_job_name,
        "trainingSeconds": status.training_seconds,
        "billableSeconds": status.billable_seconds,
        "interruptions": status.interruptions,
        "capacityShort": status.capacity_short,
        "queueWaitSeconds": int(queue_wait) if queue_wait is not None else None,
        "checkedAt": to_rfc3339(now),
        "nextPollSeconds": interval,
        "links": links.for_job(
            region,
            execution_arn=event["execution"],
            training_job_name=status.training_job_name,
            batch_job_id=training["jobId"],
        ),
    }
