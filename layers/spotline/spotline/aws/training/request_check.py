"""The SubmitServiceJob request checked offline against botocore's own API models.

Batch does not validate the payload; SageMaker rejects it only when the job starts, possibly
hours later in the queue. Validating here turns that into an immediate, named error.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import botocore.session
from botocore.validate import ParamValidator

from spotline.core.spec.model import JobSpec
from spotline.core.training.request_size import request_size_problems
from spotline.core.training.training_request import (
    BATCH_JOB_NAME,
    DEFAULT_SETTINGS,
    TRAINING_JOB_NAME,
    Attempt,
    TrainingSettings,
    service_job_request,
)


class TrainingRequestInvalid(Exception):
    """The CreateTrainingJob request built from the spec breaks SageMaker's API model."""


def submit_service_job_request(
    spec: JobSpec,
    attempt: Attempt,
    job_queue: str,
    settings: TrainingSettings = DEFAULT_SETTINGS,
    quota_share: str | None = None,
) -> dict[str, Any]:
    """The SubmitServiceJob request, validated offline (both the Batch and SageMaker halves)."""
    request = service_job_request(spec, attempt, job_queue, settings, quota_share)
    validate("sagemaker", "CreateTrainingJob", json.loads(request["serviceRequestPayload"]))
    validate("batch", "SubmitServiceJob", request)
    if problems := request_size_problems(request):
        raise TrainingRequestInvalid("SubmitServiceJob request is too large: " + "; ".join(problems))
    return request


@cache
def _input_shape(service: str, operation: str) -> Any:
    model = botocore.session.get_session().get_service_model(service)
    return model.operation_model(operation).input_shape


def validate(service: str, operation: str, params: dict[str, Any]) -> None:
    """botocore's own request validation, plus the name rules its model does not enforce."""
    report = ParamValidator().validate(params, _input_shape(service, operation))
    problems = [report.generate_report()] if report.has_errors() else []
    if service == "sagemaker" and not TRAINING_JOB_NAME.match(params.get("TrainingJobName", "")):
        problems.append(f"TrainingJobName {params.get('TrainingJobName')!r} breaks SageMaker's naming rule")
    if service == "batch" and not BATCH_JOB_NAME.match(params.get("jobName", "")):
        problems.append(f"jobName {params.get('jobName')!r} breaks Batch's naming rule")
    if problems:
        raise TrainingRequestInvalid(f"{operation} request is invalid: " + "; ".join(problems))
