"""The stand-in's answers are checked against botocore's output shapes, required members included."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from devtools.harness.standin.fixture_rig import RigFactory, training_payload
from spotline_dev.harness.standin.base.http_answers import StandInAnswerInvalid, request_problems, shape, shape_problems


def test_a_missing_required_member_an_unknown_key_and_a_wrong_type_are_each_named() -> None:
    described = shape("batch", "DescribeServiceJob", "output")
    lenient = {
        "jobId": "j",
        "jobName": "n",
        "jobQueue": "q",
        "serviceJobType": "SAGEMAKER_TRAINING",
        "status": "RUNNABLE",
        "surprise": 1,
        "createdAt": "yesterday",
    }

    problems = shape_problems(lenient, described, "DescribeServiceJob")

    assert "DescribeServiceJob.startedAt: required by DescribeServiceJobResponse" in problems
    assert "DescribeServiceJob.surprise: not a member of DescribeServiceJobResponse" in problems
    assert "DescribeServiceJob.createdAt: str where long is expected" in problems
    assert shape_problems({**lenient, "status": "WAITING"}, described)  # not in the enum


def test_an_operation_without_output_answers_an_empty_body() -> None:
    assert shape_problems({}, shape("sagemaker", "StopTrainingJob", "output")) == []
    assert shape_problems({"stopped": True}, shape("sagemaker", "StopTrainingJob", "output"))


def test_an_answer_botocore_would_refuse_fails_loudly(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload())
    assert rig.batch_job(job_id)["startedAt"] == 0  # required: sent before the job starts too
    rig.standin._operations["DescribeServiceJob"] = lambda body: {"jobId": body["jobId"]}

    with pytest.raises(StandInAnswerInvalid, match="required by DescribeServiceJobResponse"):
        rig.batch_job(job_id)


def test_requests_are_checked_as_the_service_checks_its_model() -> None:
    """What botocore does not check on the client (maximum lengths and sizes, patterns, enums,
    ranges) the stand-in refuses as the service would."""
    create = shape("sagemaker", "CreateTrainingJob", "input")
    payload = training_payload("x" * 64)
    payload["Tags"] = [{"Key": f"k{n}", "Value": "v"} for n in range(51)]
    problems = request_problems(payload, create)
    assert "TrainingJobName: at most 63 characters, got 64" in problems
    assert "Tags: at most 50 items, got 51" in problems
    assert request_problems(training_payload(), create) == []
    submit = shape("batch", "SubmitServiceJob", "input")
    assert request_problems({"serviceJobType": "ECS", "clientToken": "t" * 65}, submit) == [
        ".jobName: is required",
        ".jobQueue: is required",
        ".serviceRequestPayload: is required",
        "serviceJobType: 'ECS' is not one of SAGEMAKER_TRAINING",
        "clientToken: at most 64 characters, got 65",
    ]
    # A pattern is not anchored (Smithy's rule), so it refuses only a value with no match in it.
    assert request_problems({**training_payload(), "RoleArn": "role/spotline/x" * 2}, create) == [
        "RoleArn: 'role/spotline/xrole/spotline/x' does not match "
        "arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+"
    ]


def test_a_request_the_model_refuses_gets_the_services_validation_error(make_rig: RigFactory) -> None:
    rig = make_rig()
    with pytest.raises(ClientError) as raised:
        rig.batch.submit_service_job(
            jobName="too-many-tags",
            jobQueue="spotline-training",
            serviceJobType="SAGEMAKER_TRAINING",
            serviceRequestPayload=json.dumps(training_payload()),
            tags={f"k{n}": "v" for n in range(51)},
        )
    error = raised.value.response["Error"]
    assert (error["Code"], error["Message"]) == ("ClientException", "tags: at most 50 entries, got 51")
    assert rig.standin.jobs == []
