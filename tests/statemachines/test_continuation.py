"""A run longer than one execution's share of status checks continues in a fresh execution:
the same service job, retagged to the execution now watching it, and every end still named."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from conftest import EXAMPLE_KEY, EXAMPLE_MANIFEST, NOW, entered_states, upload
from spotline.core.capacity import lifecycle
from spotline_dev.explain import explain
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.sandbox.runs import follow_run

CHECKS = 4


@pytest.fixture(autouse=True)
def few_checks_per_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 8-hour job makes about 35 checks; four per execution make it hand over several times."""
    monkeypatch.setattr(lifecycle, "CHECKS_PER_EXECUTION", CHECKS)


def _run(stack: LocalStack) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    upload(stack, EXAMPLE_KEY, EXAMPLE_MANIFEST.read_bytes())
    (started,) = stack.deliver_events()
    return follow_run(stack, started["executionArn"], [])


def _executions(stack: LocalStack) -> list[dict[str, Any]]:
    sfn = stack.client("stepfunctions")
    listed = sfn.list_executions(stateMachineArn=stack.state_machine_arn())["executions"]
    return sorted(listed, key=lambda e: e["startDate"])


def test_a_long_run_continues_in_fresh_executions_with_one_job_and_one_report(long_training: LocalStack) -> None:
    stack = long_training
    last, history = _run(stack)

    assert last["status"] == "SUCCEEDED", last.get("cause")
    executions = _executions(stack)
    assert len(executions) >= 3
    first = executions[0]["name"]
    assert [e["name"] for e in executions[1:]] == [f"{first}-c{n}" for n in range(1, len(executions))]
    assert all(e["status"] == "SUCCEEDED" for e in executions)
    assert entered_states(history).count("ContinuedInNewExecution") == len(executions) - 1
    assert entered_states(history)[-1] == "TrainingSucceeded"
    (job,) = stack.standin.jobs  # watched throughout, never resubmitted
    assert job.status == "SUCCEEDED" and job.training_seconds >= 8 * 3600
    tags = stack.client("batch").describe_service_job(jobId=job.job_id)["tags"]
    assert tags["spotline:execution"] == executions[-1]["name"]
    output = json.loads(last["output"])
    assert output["continuedFrom"]["first"] == first
    assert output["outcome"]["name"] == "TrainingSucceeded"


def test_a_continued_execution_starts_by_resuming_the_watch(long_training: LocalStack) -> None:
    stack = long_training
    _run(stack)
    second = _executions(stack)[1]
    states = entered_states(stack.history(second["executionArn"]))
    assert states[:3] == ["IsItAContinuation?", "ResumeWatching", "CheckTrainingStatus"]
    assert "LoadManifest" not in states and "SubmitTrainingJob" not in states
    checks = [i.result for i in stack.invocations if i.function.endswith("CheckTrainingStatusFunction") and i.result]
    assert max(c["checks"] for c in checks) == CHECKS


def test_stopping_the_execution_that_took_over_stops_the_job(long_training: LocalStack) -> None:
    stack = long_training
    sfn = stack.client("stepfunctions")

    def on_call_stops_what_runs() -> None:
        for execution in _executions(stack):
            if execution["status"] == "RUNNING":
                sfn.stop_execution(executionArn=execution["executionArn"], cause="on-call")

    stack.clock.at(NOW + timedelta(hours=3), on_call_stops_what_runs)
    last, _ = _run(stack)
    stack.deliver_events()  # the aborted execution's status change reaches StopExecutionJobs
    stack.clock.advance(600)

    assert last["status"] == "ABORTED"
    assert last["name"].rpartition("-c")[1] == "-c"  # a continued execution, not the first
    assert [j.status for j in stack.standin.jobs] == ["FAILED"]  # terminated: nothing watches it any more


def test_explain_sends_on_call_to_the_execution_that_took_over(long_training: LocalStack) -> None:
    stack = long_training
    _run(stack)
    first, second = _executions(stack)[:2]
    sfn = stack.client("stepfunctions")
    story = explain(stack.history(first["executionArn"]), sfn.describe_execution(executionArn=first["executionArn"]))
    assert story.headline.startswith(f"SUCCEEDED: the run continues in execution {second['name']}")
    assert story.next_step == f"Follow the run there: spotline explain {second['name']}"
