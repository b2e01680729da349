"""The state machine files are built from Python (spotline_dev.asl): the committed
statemachines/*.asl.json are exactly what a fresh build writes, and the builder refuses a graph
Step Functions would refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spotline_dev.asl.build import MACHINES, asl_path, main, stale, write
from spotline_dev.asl.builder import (
    Catcher,
    Choice,
    Fail,
    Pass,
    Retrier,
    State,
    Succeed,
    Task,
    Wait,
    Workflow,
    lambda_task,
    when,
)


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_the_committed_file_is_a_fresh_build(name: str) -> None:
    committed = asl_path(name).read_text()
    built = MACHINES[name]()

    assert json.loads(committed) == built.to_asl()
    assert committed == built.to_text(), "statemachines/ differs from its Python: run make asl"


def test_every_state_machine_of_the_template_is_built() -> None:
    from spotline_dev.harness.local.template import load_template

    uris = {
        resource["Properties"]["DefinitionUri"]
        for resource in load_template()["Resources"].values()
        if resource["Type"] == "AWS::Serverless::StateMachine"
    }
    assert uris == {f"statemachines/{name}.asl.json" for name in MACHINES}


def test_the_text_is_two_space_json_with_a_final_newline() -> None:
    machine = Workflow("c", "Done", (Succeed("Done", comment="ok"),))
    assert machine.to_text() == (
        '{\n  "Comment": "c",\n  "StartAt": "Done",\n  "States": {\n    "Done": {\n'
        '      "Type": "Succeed",\n      "Comment": "ok"\n    }\n  }\n}\n'
    )


def test_write_writes_what_stale_finds_outdated(tmp_path: Path) -> None:
    (tmp_path / "statemachines").mkdir()
    assert stale(tmp_path) == list(MACHINES)

    assert write(tmp_path) == [asl_path(name, tmp_path) for name in MACHINES]
    assert stale(tmp_path) == []
    assert write(tmp_path) == []

    path = asl_path("scoring_run", tmp_path)
    path.write_text(path.read_text().replace('"MaxAttempts": 6', '"MaxAttempts": 7', 1))
    assert stale(tmp_path) == ["scoring_run"]


def test_check_passes_on_the_committed_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check"]) == 0
    assert capsys.readouterr().out == ""


def _task(name: str, next: str, catch_to: str) -> Task:
    return lambda_task(
        name,
        function="Step",
        comment="a step",
        result_path="$.step",
        next=next,
        retry=(Retrier(("States.TaskFailed",), attempts=2, interval=5, backoff=2, full_jitter=True),),
        catch=(Catcher(("States.ALL",), "$.failure", catch_to),),
    )


def test_a_lambda_task_writes_its_fields_in_the_files_order() -> None:
    task = _task("Step", "Done", "Failed")
    assert task.to_asl() == {
        "Type": "Task",
        "Comment": "a step",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {
            "FunctionName": "${StepFunctionArn}",
            "Payload": {"execution.$": "$$.Execution.Id", "input.$": "$"},
        },
        "ResultPath": "$.step",
        "Retry": [
            {
                "ErrorEquals": ["States.TaskFailed"],
                "IntervalSeconds": 5,
                "BackoffRate": 2,
                "MaxAttempts": 2,
                "JitterStrategy": "FULL",
            }
        ],
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.failure", "Next": "Failed"}],
        "Next": "Done",
    }


def test_a_task_that_waits_for_a_token_passes_it() -> None:
    task = lambda_task(
        "Wait",
        function="Gate",
        comment="waits",
        result_path="$.gate",
        next="Done",
        retry=(),
        catch=(),
        wait_for_token=True,
        timeout_seconds_path="$.timeout",
    ).to_asl()
    assert task["Resource"] == "arn:aws:states:::lambda:invoke.waitForTaskToken"
    assert task["Parameters"]["Payload"]["taskToken.$"] == "$$.Task.Token"
    assert task["TimeoutSecondsPath"] == "$.timeout"
    assert "Retry" not in task and "Catch" not in task


@pytest.mark.parametrize(
    ("states", "message"),
    [
        ((_task("Step", "Nowhere", "Failed"), Fail("Failed", error="E")), "Step goes to Nowhere: no such state"),
        ((_task("Step", "Step", "Failed"), Fail("Failed", error="E"), Succeed("Step")), "two states are named Step"),
        (
            (_task("Step", "Done", "Failed"), Fail("Failed", error="E"), Succeed("Done"), Succeed("Orphan")),
            "no state leads to Orphan",
        ),
        (
            (
                Choice("Step", choices=(when("$.ok", BooleanEquals=True, next="Done"),), default="Gone"),
                Succeed("Done"),
            ),
            "Step goes to Gone: no such state",
        ),
        ((Pass("Other", next="Done"), Succeed("Done")), "StartAt Step: no such state"),
        ((Wait("Step", next="Done"), Succeed("Done")), "exactly one of seconds_path and timestamp_path"),
    ],
)
def test_the_builder_refuses_a_graph_step_functions_would_refuse(states: tuple[State, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Workflow("c", "Step", states).to_asl()
