"""Transient faults are absorbed (issue 45): every Lambda task of both state machines retries
Lambda's service errors and TransientAwsError (botocore's retries spent on a throttle, 5xx or
SlowDown) with back-off and full jitter, then any one other failure of the task (a crash, a
runtime killed, a function timeout, a task timeout); only what stays failed past that budget ends
the run, in a named state."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest
from statemachines.fault_cases import (
    FALLBACK_TASKS,
    FAULTS,
    MACHINES,
    MATRIX,
    case_ids,
    function_of,
    inject,
    invocation_times,
    lambda_tasks,
    live_jobs,
    outcome_report,
    reconcile,
    task_failures,
)

from conftest import EXAMPLE_MANIFEST, NOW, entered_states, example_spec, run_upload, sample_event, team_policy_for
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour

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
    return [
        pytest.param(machine, name, state, id=f"{machine}.{name}")
        for machine in MACHINES
        for name, state in lambda_tasks(machine).items()
    ]


def _wait(retrier: dict[str, Any]) -> float:
    """The longest the retrier waits in all: IntervalSeconds * BackoffRate^i, capped by MaxDelaySeconds."""
    interval, rate = retrier.get("IntervalSeconds", 1), retrier.get("BackoffRate", 2.0)
    cap = retrier.get("MaxDelaySeconds", float("inf"))
    return float(sum(min(interval * rate**i, cap) for i in range(retrier.get("MaxAttempts", 3))))


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


def test_the_matrix_puts_faults_into_every_lambda_task_of_every_state_machine() -> None:
    """The Lambda tasks of the state machine files, and those the matrix's scenarios put faults into
    (fault_cases.MATRIX: test_fault_matrix*.py), are the same: a task added to a state machine
    fails this until a scenario passes through it and a case puts each kind of fault into it."""
    for machine in MACHINES:
        tasks, covered = set(lambda_tasks(machine)), {state for state, _nth in MATRIX[machine]}
        assert covered == tasks, (machine, "without fault cases", sorted(tasks - covered), sorted(covered - tasks))


# --- The matrix: every task of a run with an on-demand fallback x one fault of each kind --------

# No spot capacity at all, a 1-hour training and a deadline 2 h 45 min away: the spot job waits in
# RUNNABLE until the deadline is at risk, StopSpotJob stops it and the on-demand job trains. It
# depends on a dataset the pipeline announced before the upload (CheckDatasets finds it ready).
DATASET = "clicks-2026-11-28"
FALLBACK_MANIFEST = (
    EXAMPLE_MANIFEST.read_bytes()
    .replace(b"  priority: 100", f"  priority: 100\n  dependsOn: [{{dataset: {DATASET}}}]".encode())
    .replace(b"maxRuntime: 30h", b"maxRuntime: 2h")
    .replace(b"maxWait: 36h", b"maxWait: 3h")
    .replace(b"expectedDuration: 8h", b"expectedDuration: 1h")
    .replace(b'deadline: "2026-12-02T06:00:00Z"', b'deadline: "2026-11-29T10:45:00Z"')
)


@contextmanager
def _fallback_stack() -> Iterator[LocalStack]:
    spec = example_spec()
    with start_local_stack(
        NOW,
        team_policy=team_policy_for(spec),
        weather=SpotWeather(capacity_gaps=[(NOW, NOW + timedelta(days=30))]),
        behaviour=lambda _request: TrainingBehaviour(duration=3600),
    ) as local:
        prepare_account(local.client, spec)
        ready = sample_event("dataset_ready.json")["detail"] | {"dataset": DATASET}
        local.put_dataset_event("Dataset Ready", ready)
        local.deliver_events()
        yield local


@pytest.fixture(scope="module")
def fault_free() -> dict[str, list[datetime]]:
    """The run without faults: when each function was invoked (virtual time, deterministic)."""
    with _fallback_stack() as stack:
        execution, history = run_upload(stack, FALLBACK_MANIFEST)
        assert execution["status"] == "SUCCEEDED", execution.get("cause")
        states = entered_states(history)
        assert [states.count(s) for s in ("CheckDatasets", "WaitForDatasets", "StopSpotJob")] == [1, 0, 1]
        return invocation_times(stack)


def _run(stack: LocalStack) -> dict[str, Any]:
    execution, history = run_upload(stack, FALLBACK_MANIFEST)
    return {"execution": execution, "history": history, "failures": task_failures(history)}


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize(("state", "nth"), FALLBACK_TASKS, ids=case_ids(FALLBACK_TASKS))
def test_one_transient_fault_in_any_task_is_absorbed(
    fault_free: dict[str, list[datetime]], state: str, nth: int, fault: str
) -> None:
    function = function_of("training_lifecycle", state)
    start = fault_free[function][nth]  # the moment of that invocation in the run without faults
    with _fallback_stack() as stack:
        inject(stack, function, fault, start)
        ran = _run(stack)
        execution = ran["execution"]

        assert execution["status"] == "SUCCEEDED", (state, fault, execution.get("cause"))
        # The fault hit, once, and was retried (RecordOutcome names bills it could not read BillsNotRead).
        assert ran["failures"] in ([FAULTS[fault]], ["BillsNotRead"] if fault == "burst" else [])
        output = json.loads(execution["output"])
        figures = output["outcome"]["figures"]
        assert (output["outcome"]["name"], figures["on_demand_fallback"]) == ("TrainingSucceeded", True)
        # One spot job (stopped), one on-demand job, whatever was retried: every task is safe to repeat.
        assert [j.status for j in stack.standin.jobs] == ["FAILED", "SUCCEEDED"]
        assert live_jobs(stack) == []
        reconcile(stack, execution["name"], figures)


# --- What stays failed past the budget ends named, nothing left running, the cost never $0.00 --


def test_a_sustained_describe_service_job_throttle_stops_the_job_without_it_and_the_cost_is_unknown() -> None:
    with _fallback_stack() as stack:
        stack.standin.throttle("DescribeServiceJob", times=100_000)  # Batch never answers it again
        ran = _run(stack)
        execution = ran["execution"]

        assert (execution["status"], execution["error"]) == ("FAILED", "UnexpectedError")
        states = entered_states(ran["history"])
        assert states[states.index("StopTrainingJobAfterError") - 1] == "CheckTrainingStatus"
        assert states[-3:] == ["RecordOutcome", "WhatWasTheOutcome?", "UnexpectedError"]
        assert "ThrottlingException" in execution["cause"] and "DescribeServiceJob" in execution["cause"]
        # StopExecutionJobs terminated the job from the state's job id, DescribeServiceJob unread.
        assert live_jobs(stack) == []
        (job,) = stack.standin.jobs
        assert job.status_reason is not None and "unexpected error (TransientAwsError)" in job.status_reason
        figures = outcome_report(stack)["figures"]
        assert figures["cost_usd"] is None and "DescribeServiceJob" in figures["cost_unknown"]


def test_a_sustained_throttle_of_the_on_demand_submission_ends_named_with_the_spot_job_already_stopped(
    fault_free: dict[str, list[datetime]],
) -> None:
    fallback = fault_free["SubmitTrainingJobFunction"][1]
    with _fallback_stack() as stack:
        stack.throttle_calls("SubmitTrainingJobFunction", 100_000, start=fallback)
        ran = _run(stack)
        execution = ran["execution"]

        assert (execution["status"], execution["error"]) == ("FAILED", "UnexpectedError")
        assert ran["failures"] == ["TransientAwsError"] * 7  # the first try and 6 retries at the task
        states = entered_states(ran["history"])
        assert states[states.index("StopSpotJob") :][:3] == [
            "StopSpotJob",
            "SubmitTrainingJob",
            "StopTrainingJobAfterError",
        ]
        assert live_jobs(stack) == [] and [j.status for j in stack.standin.jobs] == ["FAILED"]
        reconcile(stack, execution["name"], outcome_report(stack)["figures"])  # the spot job never ran: $0 is its bill


@pytest.mark.parametrize("operation", ["sagemaker.DescribeTrainingJob", "s3.GetObject"])
def test_bills_that_stay_unreadable_record_a_succeeded_run_with_its_cost_unknown_not_zero(operation: str) -> None:
    """A throttled DescribeTrainingJob, or S3 answering SlowDown for the checkpoint's progress, past
    every retry: the run succeeded, its cost is unknown (null, with the reason), never $0.00."""
    with _fallback_stack() as stack:
        stack.throttle_calls("RecordOutcomeFunction", 100_000, operations=(operation,))
        ran = _run(stack)
        execution = ran["execution"]

        assert execution["status"] == "SUCCEEDED", execution.get("cause")
        assert ran["failures"] == ["BillsNotRead"] * 4  # the first try and 3 retries, then recorded without
        assert entered_states(ran["history"])[-5:] == [
            "RecordOutcome",
            "RecordOutcomeWithoutBills",
            "RecordOutcome",
            "WhatWasTheOutcome?",
            "TrainingSucceeded",
        ]
        figures = json.loads(execution["output"])["outcome"]["figures"]
        assert figures["cost_usd"] is None and figures["savings_percent"] is None
        assert operation.split(".")[1] in figures["cost_unknown"]
        assert stack.standin.ledger()[execution["name"]].cost_usd("us-east-1")  # it was billed: not $0.00
        assert live_jobs(stack) == []
