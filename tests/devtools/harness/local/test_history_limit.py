"""The local stack holds an execution to Step Functions' 25,000-event history quota, as AWS does
(moto has none): event 25,000 ends the execution, as ExecutionSucceeded if that is what it is,
otherwise as ExecutionFailed with States.Runtime (spotline_dev.harness.local.executions.HISTORY_EVENT_LIMIT)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack

# Each turn records 4 events (PassStateEntered/Exited, ChoiceStateEntered/Exited); with
# ExecutionStarted and the end (SucceedStateEntered/Exited, ExecutionSucceeded): 4 x turns + 4.
LOOP = {
    "StartAt": "Count",
    "States": {
        "Count": {
            "Type": "Pass",
            "Parameters": {"turns.$": "$.turns", "done.$": "States.MathAdd($.done, 1)"},
            "Next": "IsDone?",
        },
        "IsDone?": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.done", "NumericLessThanPath": "$.turns", "Next": "Count"}],
            "Default": "Done",
        },
        "Done": {"Type": "Succeed"},
    },
}


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with start_local_stack(datetime(2026, 12, 1, tzinfo=UTC)) as local:
        yield local


def _run(stack: LocalStack, turns: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    sfn = stack.client("stepfunctions")
    machine = sfn.create_state_machine(
        name=f"loop-{turns}", definition=json.dumps(LOOP), roleArn="arn:aws:iam::123456789012:role/loop"
    )["stateMachineArn"]
    arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"turns": turns, "done": 0}))["executionArn"]
    return stack.wait_for_execution(arn, timeout=300), stack.history(arn)


def test_an_execution_whose_25000th_event_is_its_success_succeeds(stack: LocalStack) -> None:
    execution, history = _run(stack, 6249)  # 4 x 6,249 + 4 = 25,000 events
    assert execution["status"] == "SUCCEEDED"
    assert (len(history), history[-1]["type"], history[-1]["id"]) == (25_000, "ExecutionSucceeded", 25_000)


def test_an_execution_that_would_go_on_fails_at_its_25000th_event(stack: LocalStack) -> None:
    execution, history = _run(stack, 6250)  # would be 25,004
    assert (execution["status"], execution.get("error")) == ("FAILED", "States.Runtime")
    assert execution["cause"] == "The execution reached the maximum number of history events (25000)."
    assert len(history) == 25_000
    last, before = history[-1], history[-2]
    assert (last["type"], last["id"], last["previousEventId"]) == ("ExecutionFailed", 25_000, 24_999)
    assert last["executionFailedEventDetails"] == {"error": execution["error"], "cause": execution["cause"]}
    assert before["id"] == 24_999 and before["type"] != "ExecutionFailed"
    assert stack.execution(execution["executionArn"]).status == "FAILED"
