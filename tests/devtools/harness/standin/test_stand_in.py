"""The stand-in below boto3: throttled answers botocore retries, and calls it leaves to moto."""

from __future__ import annotations

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from devtools.harness.standin.fixture_rig import REGION, RigFactory, training_payload


def test_throttled_calls_are_retried_by_botocore(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload())
    rig.standin.throttle("DescribeServiceJob", times=2)
    retrying = boto3.client("batch", region_name=REGION, config=Config(retries={"mode": "standard", "max_attempts": 5}))

    described = retrying.describe_service_job(jobId=job_id)
    assert described["ResponseMetadata"]["RetryAttempts"] == 2
    assert described["status"] == "SUBMITTED"

    rig.standin.throttle("DescribeTrainingJob", times=5)
    rig.clock.at(40)
    impatient = boto3.client(
        "sagemaker", region_name=REGION, config=Config(retries={"mode": "standard", "max_attempts": 3})
    )
    with pytest.raises(ClientError, match="ThrottlingException") as raised:
        impatient.describe_training_job(TrainingJobName=rig.training_name())
    assert raised.value.response["ResponseMetadata"]["RetryAttempts"] == 3  # max_attempts counts retries


def test_other_sagemaker_and_batch_calls_reach_moto(make_rig: RigFactory) -> None:
    rig = make_rig()
    with pytest.raises(ClientError, match="Could not find training job"):
        rig.training("never-created")
    assert rig.batch.describe_compute_environments()["computeEnvironments"] == []
