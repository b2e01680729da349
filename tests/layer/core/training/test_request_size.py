"""AWS Batch's size quotas on SubmitServiceJob (pure): the exact request at submission, the
largest request of a manifest at validation."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from spotline.aws.training.request_check import validate
from spotline.core.spec.model import InputChannel, JobSpec
from spotline.core.training.request_size import (
    MAX_PAYLOAD_BYTES,
    MAX_REQUEST_BYTES,
    SETTINGS_ALLOWANCE,
    manifest_size_errors,
    request_size_problems,
)
from spotline.core.training.training_request import Attempt, create_training_job_request

SPEC = JobSpec(
    team="vision",
    name="resnet",
    image="123456789012.dkr.ecr.us-east-1.amazonaws.com/resnet:1.0",
    role_arn="arn:aws:iam::123456789012:role/spotline/vision-training",
    instance_type="ml.p3.2xlarge",
    inputs=(InputChannel("train", "s3://vision-data/train/"),),
    output_s3_uri="s3://vision-models/resnet/",
    checkpoint_s3_uri="s3://vision-checkpoints/resnet/",
)
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:spotline-training-lifecycle:vision-resnet-1a2b3c4d"


def _request(payload_bytes: int, **extra: Any) -> dict[str, Any]:
    payload = "x" * payload_bytes
    return {
        "jobName": "j",
        "jobQueue": "q",
        "serviceJobType": "SAGEMAKER_TRAINING",
        "serviceRequestPayload": payload,
        **extra,
    }


def test_a_payload_of_exactly_10_kib_is_taken_and_one_byte_more_is_not() -> None:
    assert request_size_problems(_request(MAX_PAYLOAD_BYTES)) == []
    (problem,) = request_size_problems(_request(MAX_PAYLOAD_BYTES + 1))
    assert problem == "serviceRequestPayload is 10,241 bytes; AWS Batch takes at most 10,240 (10 KiB)"


def test_the_payload_is_measured_in_utf8_bytes() -> None:
    request = _request(0)
    request["serviceRequestPayload"] = "é" * (MAX_PAYLOAD_BYTES // 2 + 1)  # two bytes each
    assert request_size_problems(request)[0].startswith("serviceRequestPayload is 10,242 bytes")


def test_the_whole_request_counts_as_sent_escaped_json_and_tags_included() -> None:
    quotes = '"' * 10_000  # each travels as \" inside the request's JSON
    tags = {f"{i:03d}" + "k" * 125: "v" * 256 for i in range(50)}
    request = _request(0, serviceRequestPayload=quotes, tags=tags)
    (problem,) = request_size_problems(request)
    assert problem.startswith("the request is 3") and problem.endswith("AWS Batch takes at most 30,720 (30 KiB)")
    assert len(json.dumps(request, separators=(",", ":")).encode()) > MAX_REQUEST_BYTES


def test_the_settings_allowance_is_the_most_sagemakers_model_takes_in_ec2s_id_format() -> None:
    request = create_training_job_request(SPEC, Attempt(EXECUTION, 1, "spot"), SETTINGS_ALLOWANCE)
    validate("sagemaker", "CreateTrainingJob", request)  # botocore's model: lengths and counts
    assert len(request["VpcConfig"]["Subnets"]) == 16 and len(request["VpcConfig"]["SecurityGroupIds"]) == 5


def test_a_small_spec_has_nothing_to_report() -> None:
    assert manifest_size_errors(SPEC) == []


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"hyperparameters": {f"h{i}": "x" * 2500 for i in range(5)}}, "spec.hyperparameters"),
        ({"environment": {f"VAR_{i}": "y" * 512 for i in range(25)}}, "spec.environment"),
        ({"inputs": tuple(InputChannel(f"c{i}", "s3://bkt/" + "p" * 1000) for i in range(10))}, "spec.inputs"),
        ({"labels": {f"k{i}" + "k" * 100: "v" * 256 for i in range(40)}}, "metadata.labels"),
    ],
)
def test_a_spec_too_large_for_batch_names_the_field_taking_the_most(changes: dict[str, Any], field: str) -> None:
    (error,) = manifest_size_errors(replace(SPEC, **changes))

    assert error.path == field
    assert "makes the training request too large: serviceRequestPayload is" in error.message
    assert f"({field} is " in error.message


def test_validation_allows_for_the_largest_attempt_and_settings() -> None:
    """A spec whose own request fits, but not with an 80-character execution name and the largest
    network settings, is refused at validation: every attempt it may make must fit."""
    base = len(json.dumps(create_training_job_request(SPEC, Attempt(EXECUTION, 1, "spot")), separators=(",", ":")))
    text = "x" * (MAX_PAYLOAD_BYTES - base - 40)
    spec = replace(SPEC, hyperparameters={"h": text})
    own = create_training_job_request(spec, Attempt(EXECUTION, 1, "spot"))
    assert len(json.dumps(own, separators=(",", ":")).encode()) <= MAX_PAYLOAD_BYTES

    (error,) = manifest_size_errors(spec)
    assert error.path == "spec.hyperparameters"
