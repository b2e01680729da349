"""The stand-in's answers are checked against botocore's output shapes, required members included."""

from __future__ import annotations

import pytest

from devtools.standin.fixture_rig import RigFactory, training_payload
from spotline_dev.standin.http_answers import StandInAnswerInvalid, shape, shape_problems


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
