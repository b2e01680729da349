"""The fault matrix (issue 45) for the training lifecycle's tasks the run with an on-demand fallback
(test_fault_matrix.py) does not pass through: WaitForDatasets (a run that waits for its dataset)
and ContinueInNewExecution (a run that continues in a new execution). Each task x one error, one
timeout, one Lambda throttle and a burst of ten throttled AWS answers ends as the run without
faults does, with the same outputs, nothing left running and the figures the ledger's; a fault
that stays ends named."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from statemachines.fault_cases import (
    CONTINUATION_TASKS,
    DATASET_WAIT_TASKS,
    FAULTS,
    case_ids,
    function_of,
    inject,
    invocation_times,
    live_jobs,
    reconcile,
    task_failures,
)

from conftest import EXAMPLE_MANIFEST, NOW, entered_states, example_spec, sample_event, team_policy_for, upload
from spotline.core import lifecycle
from spotline_dev.local.handles import LocalStack
from spotline_dev.local.stack import start_local_stack
from spotline_dev.sandbox.account import prepare_account
from spotline_dev.sandbox.runs import follow_run
from spotline_dev.standin import TrainingBehaviour

DATASET = "clicks-2026-11-28"
ARRIVES = NOW + timedelta(minutes=30)  # the pipeline's Dataset Ready event, half an hour after the upload
WAITS_MANIFEST = EXAMPLE_MANIFEST.read_bytes().replace(
    b"  priority: 100", f"  priority: 100\n  dependsOn: [{{dataset: {DATASET}}}]\n  dependencyTimeout: 6h".encode()
)
CHECKS = 4  # status checks per execution: a 3-hour training hands its watch over a few times


def _dataset_ready(stack: LocalStack) -> None:
    """The pipeline announces the dataset (as test_dependencies.py puts it) and EventBridge delivers it."""
    detail = sample_event("dataset_ready.json")["detail"] | {"dataset": DATASET}
    entry = {"Source": "spotline.preprocessing", "DetailType": "Dataset Ready", "Detail": json.dumps(detail)}
    stack.client("events").put_events(Entries=[entry | {"EventBusName": "default"}])
    stack.deliver_events(sources=("spotline.preprocessing",))


@contextmanager
def _stack(hours: float) -> Iterator[LocalStack]:
    spec = example_spec()
    with start_local_stack(
        NOW, team_policy=team_policy_for(spec), behaviour=lambda _request: TrainingBehaviour(duration=hours * 3600)
    ) as local:
        prepare_account(local.client, spec)
        yield local


@contextmanager
def _waiting_stack() -> Iterator[LocalStack]:
    """The example with a dependency on a dataset that is ready half an hour after the upload."""
    with _stack(1) as local:
        local.clock.at(ARRIVES, lambda: _dataset_ready(local))
        yield local


@contextmanager
def _continuing_stack() -> Iterator[LocalStack]:
    with pytest.MonkeyPatch.context() as patch, _stack(3) as local:
        patch.setattr(lifecycle, "CHECKS_PER_EXECUTION", CHECKS)
        yield local


def _run(stack: LocalStack, body: bytes) -> dict[str, Any]:
    """The run to its last execution's end; the history of all its executions."""
    upload(stack, "manifests/search-ranking/ranker-v2.yaml", body)
    (started,) = stack.deliver_events()
    last, history = follow_run(stack, started["executionArn"], [])
    sfn = stack.client("stepfunctions")
    listed = sfn.list_executions(stateMachineArn=stack.state_machine_arn())["executions"]
    executions = [(e["name"], e["status"]) for e in sorted(listed, key=lambda e: e["startDate"])]
    first = executions[0][0]  # named by the manifest version's hash: each stack's upload differs
    output = json.loads(last.get("output") or "{}")
    return {
        "first": first,
        "chain": [(name.removeprefix(first), status) for name, status in executions],  # "", "-c1", ...
        "execution": last,
        "history": history,
        "failures": task_failures(history),
        "executions": executions,
        "output": output,
        "times": invocation_times(stack),
    }


def _waiters(stack: LocalStack) -> list[dict[str, Any]]:
    items = stack.client("dynamodb").scan(TableName=stack.physical["DatasetsTable"])["Items"]
    return [i for i in items if i["sk"]["S"].startswith("WAITER#")]


def _assert_same_run(stack: LocalStack, ran: dict[str, Any], fault_free: dict[str, Any]) -> None:
    """Succeeded with the fault-free run's outcome and figures, one job, nothing live, the ledger's figures."""
    assert ran["execution"]["status"] == "SUCCEEDED", ran["execution"].get("cause")
    assert ran["chain"] == fault_free["chain"]
    outcome = ran["output"]["outcome"]
    assert outcome == fault_free["output"]["outcome"]
    assert [j.status for j in stack.standin.jobs] == ["SUCCEEDED"]  # the one job, never submitted twice
    assert live_jobs(stack) == []
    reconcile(stack, ran["execution"]["name"], outcome["figures"])  # the ledger's run: the job's execution tag


# --- WaitForDatasets: the wait for the pipeline's Dataset Ready event ---------------------------


@pytest.fixture(scope="module")
def waiting_run() -> dict[str, Any]:
    with _waiting_stack() as stack:
        ran = _run(stack, WAITS_MANIFEST)
        assert ran["execution"]["status"] == "SUCCEEDED", ran["execution"].get("cause")
        assert "WaitForDatasets" in entered_states(ran["history"]) and ran["failures"] == []
        assert ran["output"]["dependencies"]["releasedBy"] == DATASET  # by the event, not at registration
        return ran


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize(("state", "nth"), DATASET_WAIT_TASKS, ids=case_ids(DATASET_WAIT_TASKS))
def test_one_transient_fault_in_the_dataset_wait_is_absorbed(
    waiting_run: dict[str, Any], state: str, nth: int, fault: str
) -> None:
    function = function_of("training_lifecycle", state)
    with _waiting_stack() as stack:
        inject(stack, function, fault, waiting_run["times"][function][nth])
        ran = _run(stack, WAITS_MANIFEST)

        assert ran["failures"] == [FAULTS[fault]], ran["failures"]
        _assert_same_run(stack, ran, waiting_run)
        # Released by the event, as without the fault; no waiter (with a stale token) left behind.
        assert ran["output"]["dependencies"] == waiting_run["output"]["dependencies"]
        assert _waiters(stack) == []


def test_a_dataset_wait_that_keeps_timing_out_ends_named_and_the_late_event_releases_nothing() -> None:
    """Every try registers its token and then times out: the run ends UnexpectedError before anything
    was submitted; the event that comes later meets only a stale token and fails nothing."""
    with _waiting_stack() as stack:
        inject(stack, "WaitForDatasetsFunction", "timeout", NOW, count=100)
        ran = _run(stack, WAITS_MANIFEST)

        execution = ran["execution"]
        assert (execution["status"], execution["error"]) == ("FAILED", "UnexpectedError")
        assert ran["failures"] == ["Sandbox.Timedout"] * 3  # the first try and 2 retries
        assert entered_states(ran["history"])[-3:] == ["RecordOutcome", "WhatWasTheOutcome?", "UnexpectedError"]
        assert stack.standin.jobs == []
        stack.clock.advance((ARRIVES - stack.clock.now()).total_seconds() + 60)  # the event comes, delivered
        assert stack.delivery_errors == []


# --- ContinueInNewExecution: the watch handed over to a fresh execution -------------------------


@pytest.fixture(scope="module")
def continuing_run() -> dict[str, Any]:
    with _continuing_stack() as stack:
        ran = _run(stack, EXAMPLE_MANIFEST.read_bytes())
        assert ran["execution"]["status"] == "SUCCEEDED", ran["execution"].get("cause")
        assert len(ran["chain"]) >= 2 and ran["failures"] == []
        return ran


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize(("state", "nth"), CONTINUATION_TASKS, ids=case_ids(CONTINUATION_TASKS))
def test_one_transient_fault_in_the_hand_over_is_absorbed(
    continuing_run: dict[str, Any], state: str, nth: int, fault: str
) -> None:
    function = function_of("training_lifecycle", state)
    with _continuing_stack() as stack:
        inject(stack, function, fault, continuing_run["times"][function][nth])
        ran = _run(stack, EXAMPLE_MANIFEST.read_bytes())

        assert ran["failures"] == [FAULTS[fault]], ran["failures"]
        _assert_same_run(stack, ran, continuing_run)
        (job,) = stack.standin.jobs  # watched to its end by the last execution, and tagged with it
        tags = stack.client("batch").describe_service_job(jobId=job.job_id)["tags"]
        assert tags["spotline:execution"] == ran["executions"][-1][0]


def test_a_hand_over_that_keeps_failing_leaves_the_run_watched_by_its_execution_to_the_end(
    continuing_run: dict[str, Any],
) -> None:
    start = continuing_run["times"]["ContinueInNewExecutionFunction"][0]
    with _continuing_stack() as stack:
        inject(stack, "ContinueInNewExecutionFunction", "error", start, count=100_000)
        ran = _run(stack, EXAMPLE_MANIFEST.read_bytes())

        assert ran["execution"]["status"] == "SUCCEEDED", ran["execution"].get("cause")
        assert ran["chain"] == [("", "SUCCEEDED")]  # one execution throughout
        assert set(ran["failures"]) == {"InjectedFault"}
        assert entered_states(ran["history"])[-1] == "TrainingSucceeded"
        assert ran["output"]["outcome"] == continuing_run["output"]["outcome"]
        assert live_jobs(stack) == []
        reconcile(stack, ran["first"], ran["output"]["outcome"]["figures"])
