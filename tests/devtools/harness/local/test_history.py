"""The local stack reads an execution's history in-process; it must be what GetExecutionHistory
answers through boto3, event for event (types, timestamps, details), on a whole real run."""

from __future__ import annotations

from typing import Any

from conftest import EXAMPLE_KEY, EXAMPLE_MANIFEST, upload
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.sandbox.runs import follow_run


def _history_via_api(stack: LocalStack, execution_arn: str) -> list[dict[str, Any]]:
    sfn, events, token = stack.client("stepfunctions"), [], None
    while True:
        page = sfn.get_execution_history(executionArn=execution_arn, **({"nextToken": token} if token else {}))
        events.extend(page["events"])
        token = page.get("nextToken")
        if not token:
            return events


def test_the_in_process_history_is_what_get_execution_history_answers(stack: LocalStack) -> None:
    upload(stack, EXAMPLE_KEY, EXAMPLE_MANIFEST.read_bytes())
    (started,) = stack.deliver_events()
    execution, history = follow_run(stack, started["executionArn"], [])

    assert execution["status"] == "SUCCEEDED"
    via_api = _history_via_api(stack, started["executionArn"])
    assert len(via_api) > 50
    assert history == via_api
    assert {type(event["type"]) for event in history} == {str}
    assert all(event["timestamp"].tzinfo is not None for event in history)
