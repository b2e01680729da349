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
    AFTER_ERROR_TASKS,
    CONTINUATION_TASKS,
    DATASET_WAIT_TASKS,
    FAULTS,
    NO_CAPACITY_TASKS,
    case_ids,
    function_of,
    inject,
    invocation_times,
    live_jobs,
    outcome_report,
    reconcile,
    task_failures,
)

from conftest import EXAMPLE_MANIFEST, NOW, entered_states, example_spec, sample_event, team_policy_for, upload
from spotline.core.capacity import lifecycle
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.sandbox.runs import follow_run
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour

DATASET = "clicks-2026-11-28"
ARRIVES = NOW + timedelta(minutes=30)  # the pipeline's Dataset Ready event, half an hour after the upload
WAITS_MANIFEST = EXAMPLE_MANIFEST.read_bytes().replace(
    b"  priority: 100", f"  priority: 100\n  dependsOn: [{{dataset: {DATASET}}}]\n  dependencyTimeout: 6h".encode()
)
CHECKS = 4  # status checks per execution: a 3-hour training hands its watch over a few times


def _dataset_ready(stack: LocalStack) -> None:
    """The pipeline announces the dataset on the stack's dataset bus and EventBridge delivers it."""
    stack.put_dataset_event("Dataset Ready", sample_event("dataset_ready.json")["detail"] | {"dataset": DATASET})
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
        assert len(_waiters(stack)) == 1  # the last try's registration, its token spent
        stack.clock.advance((ARRIVES - stack.clock.now()).total_seconds() + 60)  # the event comes, delivered
        assert _waiters(stack) == []  # DatasetGate met the spent token and forgot the waiter, raising nothing


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


# --- The clean-ups on the way to a named failure: StopJobWithoutCapacity, StopTrainingJobAfterError -


SHORT_MANIFEST = (  # a 1-hour training due 2 h 45 min after the upload (test_fault_matrix.py's, no dataset)
    EXAMPLE_MANIFEST.read_bytes()
    .replace(b"maxRuntime: 30h", b"maxRuntime: 2h")
    .replace(b"maxWait: 36h", b"maxWait: 3h")
    .replace(b"expectedDuration: 8h", b"expectedDuration: 1h")
    .replace(b'deadline: "2026-12-02T06:00:00Z"', b'deadline: "2026-11-29T10:45:00Z"')
)


@contextmanager
def _no_capacity_stack() -> Iterator[LocalStack]:
    """No spot and no on-demand capacity for a month: the spot job is stopped for on-demand, which
    waits until the deadline; then StopJobWithoutCapacity stops it and the run ends CapacityUnavailable."""
    spec = example_spec()
    month = [(NOW, NOW + timedelta(days=30))]
    with start_local_stack(
        NOW,
        team_policy=team_policy_for(spec),
        weather=SpotWeather(capacity_gaps=month, on_demand_gaps=month),
        behaviour=lambda _request: TrainingBehaviour(duration=3600),
    ) as local:
        prepare_account(local.client, spec)
        yield local


@contextmanager
def _failing_watch_stack() -> Iterator[LocalStack]:
    """CheckTrainingStatus fails at every try (a bug): StopTrainingJobAfterError stops the job and the
    run ends UnexpectedError."""
    with _stack(1) as local:
        inject(local, "CheckTrainingStatusFunction", "error", NOW, count=100_000)
        yield local


# state -> (its scenario's stack, manifest, the run's named end, the task failures before the clean-up).
# After it, RecordOutcome may find a stopped job still stopping: BillingNotSettled, tried again in 30 s.
CLEAN_UPS = {
    "StopJobWithoutCapacity": (_no_capacity_stack, SHORT_MANIFEST, "CapacityUnavailable", []),
    "StopTrainingJobAfterError": (_failing_watch_stack, SHORT_MANIFEST, "UnexpectedError", ["InjectedFault"] * 3),
}


@pytest.fixture(scope="module")
def ending_runs() -> dict[str, dict[str, Any]]:
    """Each clean-up scenario without a fault in its clean-up: the named end, the jobs, the report."""
    runs = {}
    for state, (stack_of, manifest, end, failures) in CLEAN_UPS.items():
        with stack_of() as stack:
            ran = _run(stack, manifest)
            assert (ran["execution"]["status"], ran["execution"]["error"]) == ("FAILED", end)
            assert ran["failures"][: len(failures)] == failures, ran["failures"]
            assert set(ran["failures"][len(failures) :]) <= {"BillingNotSettled"}
            assert entered_states(ran["history"]).count(state) == 1
            ran["jobs"] = [j.status for j in stack.standin.jobs]
            ran["report"] = outcome_report(stack)
            runs[state] = ran
    return runs


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize(
    ("state", "nth"), NO_CAPACITY_TASKS + AFTER_ERROR_TASKS, ids=case_ids(NO_CAPACITY_TASKS + AFTER_ERROR_TASKS)
)
def test_one_transient_fault_in_a_clean_up_still_ends_named_with_nothing_running(
    ending_runs: dict[str, dict[str, Any]], state: str, nth: int, fault: str
) -> None:
    stack_of, manifest, end, failures = CLEAN_UPS[state]
    fault_free = ending_runs[state]
    function = function_of("training_lifecycle", state)
    assert nth == 0  # its function's first invocation: the retries before it wait with jitter, at random
    with stack_of() as stack:
        inject(stack, function, fault, NOW)
        ran = _run(stack, manifest)

        execution = ran["execution"]
        assert (execution["status"], execution["error"]) == ("FAILED", end), execution.get("cause")
        assert ran["failures"][: len(failures) + 1] == [*failures, FAULTS[fault]], ran["failures"]
        assert set(ran["failures"][len(failures) + 1 :]) <= {"BillingNotSettled"}
        # The cause names the failure as without the fault. (What it then says of the clean-up may
        # differ: a clean-up that timed out after stopping the job finds nothing left to stop on its
        # retry, and says so: see the report of issue 45, part 4.)
        assert _failure_named(execution["cause"]) == _failure_named(fault_free["execution"]["cause"])
        assert [j.status for j in stack.standin.jobs] == fault_free["jobs"]  # every job stopped, none again
        assert live_jobs(stack) == []
        report = outcome_report(stack)
        assert report["outcome"] == fault_free["report"]["outcome"] == end
        reconcile(stack, execution["name"], report["figures"])


def _failure_named(cause: str) -> str:
    """The cause without the sentence on the clean-up (spotline.core.billing.outcome.cleanup_report)."""
    for sentence in ("Spotline stopped this run's training job", "No training job of this run"):
        cause = cause.split(sentence, maxsplit=1)[0]
    return cause


@pytest.mark.parametrize("state", CLEAN_UPS)
def test_a_clean_up_that_keeps_failing_ends_named_and_the_sweep_stops_what_it_left(state: str) -> None:
    """StopExecutionJobs fails at every try (the end-of-execution rule's too): the run still ends
    named, its cause says the job could not be stopped, and the 15-minute sweep stops it. A job
    still training when the run was recorded has no bill yet: its cost is unknown, not $0.00."""
    stack_of, manifest, _end, _failures = CLEAN_UPS[state]
    with stack_of() as stack:
        inject(stack, "StopExecutionJobsFunction", "error", NOW, count=100_000)
        ran = _run(stack, manifest)

        execution = ran["execution"]
        assert (execution["status"], execution["error"]) == ("FAILED", "UnexpectedError"), execution.get("cause")
        assert "Spotline could not stop this run's training job (InjectedFault)" in execution["cause"]
        states = entered_states(ran["history"])
        assert "StopTrainingJobAfterError" in states and states[-2:] == ["WhatWasTheOutcome?", "UnexpectedError"]
        assert [j.status for j in stack.standin.jobs if j.status not in ("SUCCEEDED", "FAILED")]  # left running
        figures = outcome_report(stack)["figures"]
        stack.clock.advance(15 * 60)  # the next sweep
        sweep = {"source": "aws.events", "detail-type": "Scheduled Event"}
        swept = stack.invoke("ReconcileTrainingJobsFunction", sweep)
        assert swept["executions"] == {execution["name"]: "FAILED"}
        assert live_jobs(stack) == []
        if figures["billing_settled"]:
            reconcile(stack, execution["name"], figures)
        else:  # recorded while the job it could not stop still ran: its cost unknown, never $0.00
            assert figures["cost_usd"] is None and "had not ended" in figures["cost_unknown"], figures
