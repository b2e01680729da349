"""The names Batch gives what it makes for a service job: the job's ID and each attempt's SageMaker
training job name."""

from __future__ import annotations

import hashlib
import uuid

from spotline_dev.harness.standin.base.http_answers import ApiError

BATCH_NAME_PREFIX = "AWSBatch"
MAX_TRAINING_JOB_NAME = 63  # SageMaker CreateTrainingJob TrainingJobName: length 1 to 63


def service_job_id(account: str, index: int) -> str:
    """The stand-in's id of the account's `index`-th service job (0 first): a UUID, as Batch's, but
    the same in every replay."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"standin/{account}/service-job/{index}"))


def batch_training_job_name(payload_name: str, job_id: str, number: int) -> str:
    """The name Batch gives each attempt's SageMaker training job. The Batch user guide's examples
    show `training-job/AWSBatch<TrainingJobName><attempt id>` (ListServiceJobs: "AWSBatch
    <my-simple-training-job><your-attempt-id>"; an event:
    "AWSBatchmy-training-job88b610a69aa8380ca5b0a7aba3f81cb8"),
    and Batch's service-linked role may create only `training-job/AWSBatch*`. Whether Batch
    truncates a name beyond SageMaker's 63 characters is not documented: the stand-in does not,
    so such an attempt fails as CreateTrainingJob refuses the name (Spotline's names fit)."""
    attempt_id = hashlib.sha256(f"{job_id}/{number}".encode()).hexdigest()[:32]
    name = f"{BATCH_NAME_PREFIX}{payload_name}{attempt_id}"
    # AWS: sagemaker CreateTrainingJob.TrainingJobName: "The name of the training job."
    # Stand-in: SageMaker's model limits TrainingJobName to 63 characters (the API reference's "Length
    # Constraints"); Batch documents no shortening of the names it makes, so the attempt fails as SageMaker would.
    if len(name) > MAX_TRAINING_JOB_NAME:
        raise ApiError(
            "ValidationException",
            f"1 validation error detected: Value '{name}' at 'trainingJobName' failed to satisfy constraint: "
            f"Member must have length less than or equal to {MAX_TRAINING_JOB_NAME}",
        )
    return name
