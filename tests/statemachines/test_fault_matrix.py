"""Transient faults are absorbed (issue 45): every Lambda task of both state machines retries
Lambda's service errors and TransientAwsError (botocore's retries spent on a throttle, 5xx or
SlowDown) with back-off and full jitter, then any one other failure of the task (a crash, a
runtime killed, a function timeout, a task timeout); only what stays failed past that budget ends
the run, in a named state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]
MACHINES = ("training_lifecycle", "scoring_run")
# Step Functions' "Handle Lambda service exceptions": "Lambda.ClientExecutionTimeoutException",
# "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException"; "When Lambda
# hits the maximum number of invocations, the error is Lambda.TooManyRequestsException".
LAMBDA_SERVICE_ERRORS = {
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}
PERMANENT = {"ManifestUnreadable", "TrainingRequestInvalid"}  # named errors a retry cannot mend
BUDGET_SECONDS = 15 * 60  # the most a task's retries may wait in all (before jitter shortens it)


def _lambda_tasks() -> list[Any]:
    tasks = []
    for machine in MACHINES:
        states = json.loads((ROOT / "statemachines" / f"{machine}.asl.json").read_text())["States"]
        for name, state in states.items():
            if str(state.get("Resource", "")).startswith("arn:aws:states:::lambda:invoke"):
                tasks.append(pytest.param(machine, name, state, id=f"{machine}.{name}"))
    return tasks


def _wait(retrier: dict[str, Any]) -> float:
    """The longest the retrier waits in all: IntervalSeconds * BackoffRate^i, capped by MaxDelaySeconds."""
    interval, rate = retrier.get("IntervalSeconds", 1), retrier.get("BackoffRate", 2.0)
    cap = retrier.get("MaxDelaySeconds", float("inf"))
    return sum(min(interval * rate**i, cap) for i in range(retrier.get("MaxAttempts", 3)))


@pytest.mark.parametrize(("machine", "name", "state"), _lambda_tasks())
def test_every_lambda_task_retries_transient_faults_within_a_stated_budget(
    machine: str, name: str, state: dict[str, Any]
) -> None:
    retry = state.get("Retry", [])
    callback = state["Resource"].endswith(".waitForTaskToken")
    service = [r for r in retry if LAMBDA_SERVICE_ERRORS | {"TransientAwsError"} <= set(r["ErrorEquals"])]
    assert len(service) == 1, f"{machine}.{name}: Lambda service errors and TransientAwsError in one retrier"
    assert (service[0]["MaxAttempts"], service[0]["JitterStrategy"]) == (6, "FULL")
    general = [r for r in retry if "States.TaskFailed" in r["ErrorEquals"]]
    assert len(general) == 1, f"{machine}.{name}: one failure of any kind is retried"
    assert general[0]["MaxAttempts"] >= 2 and general[0]["JitterStrategy"] == "FULL"
    # A callback task's States.Timeout is its wait running out (a dependency, a wake-up), never retried.
    assert ("States.Timeout" in general[0]["ErrorEquals"]) is not callback
    for retrier in retry:
        if retrier.get("MaxAttempts") == 0:
            assert set(retrier["ErrorEquals"]) <= PERMANENT
            assert retry.index(retrier) < retry.index(general[0])  # else States.TaskFailed retries them
        assert _wait(retrier) <= BUDGET_SECONDS or retrier["ErrorEquals"] == ["CheckpointCopyIncomplete"]
