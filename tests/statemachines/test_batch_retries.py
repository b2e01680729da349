"""Batch's own retries through the real state machine: the stand-in requeues a service job as
AWS Batch documents (capacity failures until capacity returns, InternalServerError by the
retry strategy), here with a 10-minute wait in RUNNABLE, and Spotline reads the job as still
running until Batch says it ended."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import EXAMPLE_MANIFEST, NOW, entered_states, example_spec, run_upload, team_policy_for
from spotline.core.spec.model import to_rfc3339
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.standin import ServiceJobView, SpotWeather, TrainingBehaviour

REQUEUE_WAIT = 600.0
CAPACITY_ERROR = "CapacityError: Unable to provision requested ML compute capacity. Please retry later."
INTERNAL_ERROR = "InternalServerError: We encountered an internal error. Please try again."


def _stack(behaviour: TrainingBehaviour) -> Iterator[LocalStack]:
    spec = example_spec()
    with start_local_stack(
        NOW,
        team_policy=team_policy_for(spec),
        weather=SpotWeather(requeue_wait=REQUEUE_WAIT),
        behaviour=lambda _request: behaviour,
    ) as local:
        prepare_account(local.client, spec)
        yield local


@pytest.fixture
def requeuing_stack() -> Iterator[LocalStack]:
    yield from _stack(TrainingBehaviour(duration=2 * 3600))


@pytest.fixture
def failing_requeuing_stack() -> Iterator[LocalStack]:
    yield from _stack(TrainingBehaviour(duration=2 * 3600, fail_after=3600))


def _checks(stack: LocalStack) -> list[dict[str, Any]]:
    """What every CheckTrainingStatus invocation returned, in order."""
    name = stack.functions["CheckTrainingStatusFunction"]
    return [i.result for i in stack.invocations if i.function == name and i.result is not None]


def _requeued_checks(stack: LocalStack) -> list[dict[str, Any]]:
    """Checks made while Batch held the job RUNNABLE after a failed attempt."""
    return [c for c in _checks(stack) if c["batchStatus"] == "RUNNABLE" and c["trainingJobName"]]


def _failed_at(job: ServiceJobView) -> str:
    first = job.attempts[0]
    assert first.ended_at is not None
    return to_rfc3339(first.ended_at)


def test_a_capacity_failure_batch_requeues_is_waited_out_in_one_service_job(requeuing_stack: LocalStack) -> None:
    stack = requeuing_stack
    stack.standin.fail_next_attempt(CAPACITY_ERROR)
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    assert entered_states(history).count("SubmitTrainingJob") == 1
    (job,) = stack.standin.jobs
    assert job.status == "SUCCEEDED"
    assert [a.failure_reason for a in job.attempts] == [CAPACITY_ERROR, None]
    requeued = _requeued_checks(stack)
    # The attempt's SageMaker failure woke the execution at once: Batch held the job RUNNABLE
    assert requeued and requeued[0]["checkedAt"] == _failed_at(job)
    for check in requeued:
        assert (check["state"], check["finished"], check["action"]) == ("queued", False, "keep-waiting")
        assert check["capacityShort"] is True
        assert "CapacityError" in check["reason"]
    output = json.loads(execution["output"])
    assert output["outcome"]["name"] == "TrainingSucceeded"
    figures = output["outcome"]["figures"]
    assert (figures["attempts"], figures["on_demand_fallback"]) == (1, False)
    assert figures["training_seconds"] == round(job.training_seconds)
    assert figures["billable_seconds"] == round(job.attempts[-1].billable_seconds)


def test_an_internal_error_batch_retries_ends_in_success_not_training_failed(requeuing_stack: LocalStack) -> None:
    stack = requeuing_stack
    stack.standin.fail_next_attempt(INTERNAL_ERROR)
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    states = entered_states(history)
    assert states.count("SubmitTrainingJob") == 1
    assert "TrainingFailed" not in states
    (job,) = stack.standin.jobs
    assert (job.status, len(job.attempts)) == ("SUCCEEDED", 2)
    requeued = _requeued_checks(stack)
    assert requeued
    for check in requeued:
        assert (check["state"], check["finished"], check["action"]) == ("queued", False, "keep-waiting")
        assert check["capacityShort"] is False
        assert "InternalServerError" in check["reason"] and "never retried" not in check["explanation"]
    assert json.loads(execution["output"])["outcome"]["figures"]["attempts"] == 1


def test_internal_errors_past_the_retry_strategy_fail_once_when_batch_fails_the_job(
    requeuing_stack: LocalStack,
) -> None:
    stack = requeuing_stack
    for _ in range(3):  # RETRY_STRATEGY: 3 attempts
        stack.standin.fail_next_attempt(INTERNAL_ERROR)
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert execution["status"] == "FAILED"
    assert execution["error"] == "TrainingFailed"
    assert "(internal)" in execution["cause"] and "InternalServerError" in execution["cause"]
    assert "3 Batch attempts" in execution["cause"]
    assert entered_states(history).count("SubmitTrainingJob") == 1
    (job,) = stack.standin.jobs
    assert (job.status, len(job.attempts)) == ("FAILED", 3)
    finished = [c for c in _checks(stack) if c["finished"]]
    assert len(finished) == 1 and finished[0]["batchStatus"] == "FAILED"
    assert len(_requeued_checks(stack)) >= 2  # both waits in RUNNABLE were read as queued


def test_an_algorithm_error_still_fails_once_as_training_failed(failing_requeuing_stack: LocalStack) -> None:
    stack = failing_requeuing_stack
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert execution["status"] == "FAILED"
    assert execution["error"] == "TrainingFailed"
    assert "(algorithm)" in execution["cause"] and "AlgorithmError" in execution["cause"]
    assert entered_states(history).count("SubmitTrainingJob") == 1
    (job,) = stack.standin.jobs
    assert (job.status, len(job.attempts)) == ("FAILED", 1)
    assert [c["finished"] for c in _checks(stack)].count(True) == 1
