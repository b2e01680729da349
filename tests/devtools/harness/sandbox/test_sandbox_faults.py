"""The sandbox under faults and stops: executions stopped as on-call would, unexpected errors
injected into functions, the Step Functions status change events the local stack puts when an
execution ends, and what the scenario leaves running."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLE_MANIFEST, ROOT, upload
from spotline_dev.cli.entry import main as cli_main
from spotline_dev.harness.local import stack as local_stack
from spotline_dev.harness.local.executions import STATUS_CHANGE
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.template import load_template, resources_of_type
from spotline_dev.harness.local.virtual_time import VirtualClock
from spotline_dev.harness.sandbox.replay import ScenarioError, load_scenario, run_scenario

SCENARIOS = ROOT / "examples" / "scenarios"
HOUR = 3600.0
RUNNING_STATUSES = {"SUBMITTED", "PENDING", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING"}


def _template_cleans_up_on_status_change() -> bool:
    """Whether a function of the template is triggered by Step Functions execution status
    changes (the orphan clean-up): the local stack then delivers the events to it."""
    for resource in resources_of_type(load_template(), "AWS::Serverless::Function").values():
        for event in (resource["Properties"].get("Events") or {}).values():
            pattern = (event.get("Properties") or {}).get("Pattern") or {}
            if event["Type"] == "EventBridgeRule" and "aws.states" in (pattern.get("source") or []):
                return True
    return False


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- the virtual clock acting at a moment ------------------------------------------------------


def test_the_clock_runs_actions_at_their_moment_in_order() -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    clock, seen = VirtualClock(start), []
    clock.at(start + timedelta(hours=2), lambda: seen.append(("b", clock.now())))
    clock.at(start + timedelta(hours=1), lambda: seen.append(("a", clock.now())))
    clock.at(start + timedelta(hours=2), lambda: seen.append(("c", clock.now())))
    clock.advance(1.5 * HOUR)
    assert seen == [("a", start + timedelta(hours=1))]
    assert clock.now() == start + timedelta(hours=1.5)
    clock.advance(HOUR)
    assert seen[1:] == [("b", start + timedelta(hours=2)), ("c", start + timedelta(hours=2))]
    assert clock.now() == start + timedelta(hours=2.5)


def test_an_interrupted_advance_stops_at_the_action() -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    clock, stopped = VirtualClock(start), []
    clock.at(start + timedelta(hours=3), lambda: stopped.append(True))
    clock.advance(10 * HOUR, interrupted=lambda: bool(stopped))
    assert clock.now() == start + timedelta(hours=3)  # the rest of the wait never happened
    clock.set(start)  # backwards: nothing runs
    assert clock.now() == start and stopped == [True]


# --- stopExecutionAt ----------------------------------------------------------------------------


def test_on_call_stop_ends_the_execution_aborted_at_three_hours(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = SCENARIOS / "stopped-by-on-call.yaml"
    assert cli_main(["sandbox", "--json", "--scenario", str(scenario)]) == 3  # the execution did not succeed
    summary = json.loads(capsys.readouterr().out)
    (run,) = summary["executions"]
    start = load_scenario(scenario).start

    assert (run["status"], run["error"]) == ("ABORTED", None)
    assert _at(run["executionEndedAt"]) == start + timedelta(hours=3)  # in the middle of a Wait state
    # An 8-hour job stopped 3 hours in has not completed: no deadline verdict.
    assert (run["finishedAt"], run["deadlineMet"]) == (None, None)
    if _template_cleans_up_on_status_change():
        # The clean-up reacted to the execution's end: the job was stopped, nothing left behind.
        assert summary["leftRunning"] == []
        assert run["trainingEndedAt"] is not None
        assert _at(run["trainingEndedAt"]) - _at(run["executionEndedAt"]) <= timedelta(seconds=60)
    else:
        # Today: nothing reacts to the end of an execution, the job trains on unwatched.
        (left,) = summary["leftRunning"]
        assert left["execution"] == run["name"]
        assert left["status"] in RUNNING_STATUSES
        assert (left["trainingStatus"], run["trainingEndedAt"]) == ("InProgress", None)
        assert left["jobName"] and left["jobId"] and left["trainingJobName"]


def test_the_local_stack_puts_a_status_change_event_when_an_execution_ends(stack: LocalStack) -> None:
    """Shaped as Step Functions sends it (EventBridge user guide, Step Functions events), matched
    by a rule on the default bus like any other event."""
    sqs, events = stack.client("sqs"), stack.client("events")
    inbox = sqs.create_queue(QueueName="status-changes")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    pattern = {"source": ["aws.states"], "detail-type": [STATUS_CHANGE], "detail": {"status": ["ABORTED"]}}
    events.put_rule(Name="status-changes", EventPattern=json.dumps(pattern))
    events.put_targets(Rule="status-changes", Targets=[{"Id": "inbox", "Arn": inbox_arn}])

    stack.stop_executions_after(HOUR)
    started_at = stack.clock.now()
    upload(stack, "manifests/search-ranking/ranker-v2.yaml", EXAMPLE_MANIFEST.read_bytes())
    (started,) = stack.deliver_events()
    arn = started["executionArn"]
    described = stack.wait_for_execution(arn)

    assert described["status"] == "ABORTED"
    assert stack.clock.now() == started_at + timedelta(hours=1)
    history = stack.history(arn)
    assert history[-1]["type"] == "ExecutionAborted"
    (message,) = sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10)["Messages"]
    event = json.loads(message["Body"])
    assert (event["source"], event["detail-type"], event["resources"]) == ("aws.states", STATUS_CHANGE, [arn])
    detail = event["detail"]
    assert {
        "executionArn",
        "stateMachineArn",
        "name",
        "status",
        "startDate",
        "stopDate",
        "input",
        "inputDetails",
        "output",
        "outputDetails",
        "error",
        "cause",
    } <= set(detail)
    assert (detail["executionArn"], detail["stateMachineArn"]) == (arn, stack.state_machine_arn())
    assert (detail["name"], detail["status"]) == (described["name"], "ABORTED")
    # Epoch milliseconds, on the virtual clock.
    assert detail["startDate"] == int(started_at.timestamp() * 1000)
    assert detail["stopDate"] - detail["startDate"] == 3_600_000
    assert json.loads(detail["input"]) == json.loads(described["input"])
    assert detail["inputDetails"] == {"included": True}
    assert (detail["output"], detail["outputDetails"]) == (None, None)
    record = stack.execution(arn)
    assert (record.status, record.ended_at) == ("ABORTED", started_at + timedelta(hours=1))
    assert record.event is not None and json.loads(record.event["Detail"]) == detail


def test_a_succeeded_execution_puts_its_output_in_the_event(stack: LocalStack) -> None:
    upload(stack, "manifests/search-ranking/ranker-v2.yaml", EXAMPLE_MANIFEST.read_bytes())
    (started,) = stack.deliver_events()
    described = stack.wait_for_execution(started["executionArn"])
    record = stack.execution(started["executionArn"])

    assert described["status"] == record.status == "SUCCEEDED"
    assert record.event is not None
    detail = json.loads(record.event["Detail"])
    assert json.loads(detail["output"]) == json.loads(described["output"])
    assert detail["outputDetails"] == {"included": True}
    assert detail["stopDate"] == int(stack.clock.now().timestamp() * 1000)


# --- faults -------------------------------------------------------------------------------------


def _invoke(stack: LocalStack, logical_id: str) -> dict[str, Any]:
    answer = stack.client("lambda").invoke(FunctionName=stack.functions[logical_id], Payload=b"{}")
    return {"functionError": answer.get("FunctionError"), **json.loads(answer["Payload"].read())}


def test_a_fault_raises_count_times_from_its_start(stack: LocalStack) -> None:
    start = stack.clock.now() + timedelta(hours=2)
    fault = stack.inject_fault("CheckTrainingStatusFunction", count=2, start=start)

    assert _invoke(stack, "CheckTrainingStatusFunction").get("errorType") != "InjectedFault"  # before its start
    stack.clock.advance(2 * HOUR)
    first, second, third = (_invoke(stack, "CheckTrainingStatusFunction") for _ in range(3))
    for answer, number in ((first, 1), (second, 2)):
        assert answer["functionError"] and answer["errorType"] == "InjectedFault"
        expected = f"CheckTrainingStatusFunction failed unexpectedly (injected fault {number} of 2"
        assert expected in answer["errorMessage"]
    assert third.get("errorType") != "InjectedFault"  # count used up: the handler runs again
    assert fault.raised_at == [start, start]
    with pytest.raises(KeyError, match="CheckTrainingStatus is not a function"):
        stack.inject_fault("CheckTrainingStatus", count=1)


def test_status_check_faults_fail_the_task_with_the_injected_error() -> None:
    scenario = load_scenario(SCENARIOS / "status-check-faults.yaml")
    assert [(f.function, f.start, f.count) for f in scenario.faults] == [("CheckTrainingStatusFunction", 2 * HOUR, 10)]
    summary = run_scenario(scenario)
    (run,) = summary["executions"]

    (fault,) = run["faults"]
    raised = [_at(t) for t in fault["raisedAt"]]
    assert 1 <= len(raised) <= 10
    assert all(t >= scenario.start + timedelta(hours=2) for t in raised)
    failed = [
        e["taskFailedEventDetails"]
        for e in run["history"]
        if e["type"] == "TaskFailed" and e["taskFailedEventDetails"]["error"] == "InjectedFault"
    ]
    assert len(failed) == len(raised)  # each injected error is a TaskFailed the workflow saw
    assert all("CheckTrainingStatusFunction failed unexpectedly" in f["cause"] for f in failed)
    # Submission happened before the faults: the job exists whatever the workflow then did.
    assert run["attempts"] >= 1
    ended = _at(run["executionEndedAt"])
    assert ended >= raised[-1]
    left = summary["leftRunning"]
    if _template_cleans_up_on_status_change():
        # Whatever path the workflow took, its end stopped the job: nothing trains unwatched, and
        # the training ended within a minute of the execution.
        assert left == []
        assert run["trainingEndedAt"] is not None
        assert abs(_at(run["trainingEndedAt"]) - ended) <= timedelta(seconds=60)
    elif run["status"] == "SUCCEEDED":
        assert left == []
    else:
        # Without the clean-up: an unexpected error ended the execution while the job trained
        # on; exactly that job is left running.
        (job,) = left
        assert (job["execution"], job["trainingStatus"]) == (run["name"], "InProgress")


def test_a_replay_with_retries_is_the_same_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The retries' FULL jitter draws its waits at random (moto's Retrier): seeded per stack, two
    replays of the scenario (as two `spotline sandbox` processes would run it, each its process's
    first stack) show the same times, lost work and cost (they differed before)."""
    scenario = load_scenario(SCENARIOS / "status-check-faults.yaml")
    summaries = []
    for _ in range(2):
        monkeypatch.setattr(local_stack, "_STACKS_STARTED", itertools.count())
        summaries.append(run_scenario(scenario))
    first, second = summaries
    for summary in (first, second):
        summary.pop("wallSeconds", None)  # and each history's wall-clock timestamps and task tokens:
        for run in summary["executions"]:
            run.pop("history")
    assert first == second


# --- scenario validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("faults: {function: CheckTrainingStatus}\n", r"faults: must be a list"),
        ("faults: [CheckTrainingStatus]\n", r"faults\[0\]: must be a mapping"),
        ("faults: [{function: CheckTrainingStatus, form: 2h}]\n", r"faults\[0\].form: unknown field .did you"),
        ("faults: [{from: 2h, count: 1}]\n", r"faults\[0\]\.function: is required"),
        ("faults: [{function: CheckTrainingStatu}]\n", r"faults\[0\]\.function: 'CheckTrainingStatu' is not a"),
        (
            "faults: [{function: CheckTrainingStatusFunction}]\n",
            r"faults\[0\]\.function: .*without the 'Function' suffix: CheckTrainingStatus",
        ),
        ("faults: [{function: RecordOutcome, count: -1}]\n", r"faults\[0\]\.count: must be at least 1, got -1"),
        ("faults: [{function: RecordOutcome, count: 0}]\n", r"faults\[0\]\.count: must be at least 1, got 0"),
        ("faults: [{function: RecordOutcome, count: 2.5}]\n", r"faults\[0\]\.count: must be an integer, got 2\.5"),
        ("faults: [{function: RecordOutcome, count: true}]\n", r"faults\[0\]\.count: must be an integer, got true"),
        ("faults: [{function: RecordOutcome, from: -3600}]\n", r"faults\[0\]\.from: must be at least 0, got -3600"),
        ("faults: [{function: RecordOutcome, from: soon}]\n", r"faults\[0\]\.from: "),
        ("stopExecutionAt: 0\n", r"stopExecutionAt: 0 must be a positive duration"),
        ("stopExecutionAt: three hours\n", r"stopExecutionAt: "),
        ("stopExecutionAfter: 3h\n", r"stopExecutionAfter: unknown field \(did you mean 'stopExecutionAt'\?\)"),
    ],
)
def test_bad_fault_and_stop_fields_are_named(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(ScenarioError, match=message):
        load_scenario(bad)


def test_a_bad_scenario_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("faults: [{function: CheckTrainingStatus, count: -1}]\n")
    assert cli_main(["sandbox", "--scenario", str(bad)]) == 1  # a refused file
    assert "faults[0].count" in capsys.readouterr().err


def test_faults_accept_every_function_of_the_template(tmp_path: Path) -> None:
    functions = resources_of_type(load_template(), "AWS::Serverless::Function")
    names = [logical.removesuffix("Function") for logical in functions]
    scenario = tmp_path / "all.yaml"
    scenario.write_text("faults:\n" + "".join(f"  - {{function: {name}, from: 1h}}\n" for name in names))
    faults = load_scenario(scenario).faults
    assert [(f.function, f.start, f.count) for f in faults] == [(f"{n}Function", HOUR, 1) for n in names]
