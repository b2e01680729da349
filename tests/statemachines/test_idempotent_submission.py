"""Idempotent submission as AWS Batch documents it: a second SubmitServiceJob with the same
clientToken is rejected (the stand-in does so), and SubmitTrainingJob then finds the job it
created by name and tags instead of failing or starting a second one."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from conftest import entered_states, example_spec, run_upload
from spotline.aws.training.request_check import submit_service_job_request
from spotline.aws.training.submission import find_submitted, submit_once
from spotline.core.training.training_request import Attempt
from spotline_dev.harness.local.handles import LocalStack

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:spotline-local-training-lifecycle:search-ranking-x-1"


def _submit_calls(stack: LocalStack) -> list[str]:
    """Every SubmitServiceJob answer from now on: "ok" or the error code."""
    answers: list[str] = []

    def record(http_response: Any, parsed: dict[str, Any], **_: Any) -> None:
        answers.append(parsed.get("Error", {}).get("Code", "") if http_response.status_code >= 300 else "ok")

    session = boto3.DEFAULT_SESSION
    assert session is not None
    session.events.register_first("after-call.batch.SubmitServiceJob", record)
    return answers


def _request(stack: LocalStack, attempt: Attempt) -> dict[str, Any]:
    return submit_service_job_request(example_spec(), attempt, stack.physical["TrainingJobQueue"])


def test_a_retried_submission_is_rejected_by_batch_and_finds_its_job(
    stack: LocalStack, example_manifest: bytes
) -> None:
    answers = _submit_calls(stack)
    stack.kill_after_call("batch.SubmitServiceJob", times=1)
    execution, history = run_upload(stack, example_manifest)

    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    assert answers == ["ok", "ClientException"]  # the retry's request was rejected, as documented
    (job,) = stack.standin.jobs
    submits = [i for i in stack.invocations if i.function == stack.functions["SubmitTrainingJobFunction"]]
    assert [i.error for i in submits] == ["Runtime.ExitError", None]
    assert (submits[1].result["jobId"], submits[1].result["jobName"]) == (job.job_id, job.job_name)
    assert submits[1].result["jobArn"] == job.job_arn
    assert entered_states(history).count("SubmitTrainingJob") == 1  # Retry re-runs the task inside the state


def test_submitting_an_attempt_twice_gives_the_first_job(stack: LocalStack) -> None:
    request = _request(stack, Attempt(EXECUTION, 1, "spot"))
    first = submit_once(request)
    again = submit_once(request)

    assert (first.found, again.found) == (False, True)
    assert (again.job_id, again.job_arn, again.job_name) == (first.job_id, first.job_arn, first.job_name)
    assert len(stack.standin.jobs) == 1
    # Another attempt is another job.
    assert submit_once(_request(stack, Attempt(EXECUTION, 2, "spot"))).job_id != first.job_id
    assert find_submitted(_request(stack, Attempt(EXECUTION, 3, "spot"))) is None


def test_a_rejection_stands_when_no_job_of_the_attempt_carries_its_tags(stack: LocalStack) -> None:
    request = _request(stack, Attempt(EXECUTION, 1, "spot"))
    impostor = {**request, "tags": {**request["tags"], "spotline:execution": "someone-else"}}
    stack.client("batch").submit_service_job(**impostor)  # same name and token, another execution's tags

    with pytest.raises(ClientError) as rejected:
        submit_once(request)
    assert rejected.value.response["Error"]["Code"] == "ClientException"
    assert len(stack.standin.jobs) == 1


def test_only_a_client_exception_makes_it_look(stack: LocalStack) -> None:
    stack.standin.throttle("SubmitServiceJob", times=10)  # past botocore's own retries
    with pytest.raises(ClientError) as throttled:
        submit_once(_request(stack, Attempt(EXECUTION, 1, "spot")))
    assert throttled.value.response["Error"]["Code"] == "ThrottlingException"
    assert stack.standin.jobs == []
