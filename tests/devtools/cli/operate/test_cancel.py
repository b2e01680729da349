"""`spotline cancel`: the execution and its training job stopped in one command, confirmed."""

from __future__ import annotations

import json
import time

import pytest

from conftest import EXAMPLE_MANIFEST, received_alerts, subscribe_to_alerts
from devtools.cli.operate.printed import printed_json, printed_lines
from spotline_dev.cli.entry import main
from spotline_dev.cli.operate import cancel as cancel_module
from spotline_dev.exit_codes import EXIT_OK
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import STACK

ON_STACK = ["--stack", STACK]


def _training(stack: LocalStack, capsys: pytest.CaptureFixture[str]) -> str:
    """Submit the example and wait (in real time; the world is held) until its job trains."""
    assert main(["submit", str(EXAMPLE_MANIFEST), *ON_STACK, "--output", "json"]) == EXIT_OK
    name = str(printed_json(capsys.readouterr().out)["executionName"])  # type: ignore[index]
    stack.deliver_events()
    deadline = time.monotonic() + 60
    while not any(job.status == "RUNNING" for job in stack.standin.jobs):
        assert time.monotonic() < deadline, "the training job never started"
        if stack.standin.jobs:  # submitted: the world moves on while the execution waits
            stack.clock.advance(60)
        time.sleep(0.01)
    return name


def test_cancel_stops_the_execution_and_its_training_job_and_says_so(
    deployed_long: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = deployed_long
    inbox = subscribe_to_alerts(stack)
    with stack.clock.holding_token_waits():
        name = _training(stack, capsys)
        assert main(["cancel", name, *ON_STACK, "--yes"]) == EXIT_OK
    lines = printed_lines(capsys.readouterr().out)
    assert lines[0] == f"Stopped execution {name} (it was RUNNING; it ends ABORTED)"
    assert lines[1].startswith(f"Terminated training job {name}-a1-spot (")  # the Batch job, named after the run
    assert "was RUNNING, SageMaker job AWSBatchranker-v2-a1-spot" in lines[1]  # the name Batch gave it

    arn = stack.state_machine_arn().replace(":stateMachine:", ":execution:") + f":{name}"
    assert stack.wait_for_execution(arn)["status"] == "ABORTED"
    aborted = stack.history(arn)[-1]["executionAbortedEventDetails"]
    cause = "Cancelled by arn:aws:sts::123456789012:user/moto with `spotline cancel`."
    assert (aborted["error"], aborted["cause"]) == ("CancelledBySpotlineCli", cause)
    detail = json.loads(stack.execution(arn).event["Detail"])  # type: ignore[index]
    assert (detail["status"], detail["error"], detail["cause"]) == ("ABORTED", "CancelledBySpotlineCli", cause)
    stack.clock.advance(120)  # SageMaker takes a moment to stop
    (job,) = stack.standin.jobs
    assert job.status == "FAILED" and job.training_status in ("Stopping", "Stopped")

    (end,) = stack.deliver_events(sources=("aws.states",))  # the end-of-execution clean-up finds nothing left
    assert (end["status"], end["stopped"]) == ("ABORTED", [])
    assert received_alerts(stack, inbox) == []  # and so tells nobody a job was left running

    assert main(["cancel", name, *ON_STACK, "--output", "json"]) == EXIT_OK  # again: nothing to stop
    again = printed_json(capsys.readouterr().out)
    assert (again["was"], again["stoppedExecution"], again["stoppedJobs"]) == ("ABORTED", False, [])  # type: ignore[index]


def test_when_the_stacks_clean_up_gets_there_first_cancel_says_so_and_nobody_is_alerted(
    deployed_long: LocalStack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = deployed_long
    inbox = subscribe_to_alerts(stack)
    ends: list[object] = []

    def end_rule_first(*args: object, **kwargs: object) -> object:
        stack.wait_for_execution(stack.state_machine_arn().replace(":stateMachine:", ":execution:") + f":{args[0]}")
        ends.extend(stack.deliver_events(sources=("aws.states",)))  # the execution's end reaches its rule first
        return real_stop(*args, **kwargs)  # type: ignore[arg-type]

    real_stop = cancel_module.stop_everywhere
    monkeypatch.setattr(cancel_module, "stop_everywhere", end_rule_first)
    with stack.clock.holding_token_waits():
        name = _training(stack, capsys)
        assert main(["cancel", name, *ON_STACK, "--yes"]) == EXIT_OK
    lines = printed_lines(capsys.readouterr().out)
    job_id = stack.standin.jobs[0].job_id
    assert lines[1] == f"Training job {name}-a1-spot ({job_id}) is being stopped already (by the stack's clean-up)"
    (end,) = ends
    assert (len(end["stopped"]), end["notified"]) == (1, 0)  # type: ignore[index]
    assert received_alerts(stack, inbox) == []
