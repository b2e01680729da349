"""ReconcileTrainingJobs, the sweep under the end-of-execution clean-up: it stops Spotline jobs
whose execution no longer runs, counts and reports them, and leaves every other job alone."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from conftest import (
    EXAMPLE_KEY,
    EXAMPLE_MANIFEST,
    emitted_metrics,
    example_spec,
    received_alerts,
    subscribe_to_alerts,
    upload,
)
from spotline.core.training_request import Attempt, service_job_request
from spotline_dev.local_aws import LocalStack

HOUR = 3600
RECONCILER = "ReconcileTrainingJobsFunction"


def live(stack: LocalStack) -> list[str]:
    return [j.job_name for j in stack.standin.jobs if j.status not in ("SUCCEEDED", "FAILED")]


def test_a_job_whose_execution_ended_while_the_clean_up_was_failing_is_stopped_counted_and_reported(
    long_training: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = long_training
    alerts = subscribe_to_alerts(stack, "reconciler-inbox")
    stack.stop_executions_after(2 * HOUR)  # on-call stops the execution in the console
    upload(stack, EXAMPLE_KEY, EXAMPLE_MANIFEST.read_bytes())
    (started,) = stack.deliver_events()
    assert stack.wait_for_execution(started["executionArn"])["status"] == "ABORTED"

    stack.inject_fault("StopExecutionJobsFunction", count=1)  # the clean-up fails (Lambda's retries too)
    failures: list[str] = []
    assert stack.deliver_events(on_error=lambda rule, _error: failures.append(rule)) == []
    assert failures == ["StopExecutionJobsFunctionExecutionEnded"]
    (orphan,) = live(stack)  # unwatched and billing

    stack.clock.advance(15 * 60)  # the next sweep
    result = stack.invoke(RECONCILER, {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}})

    (stopped,) = result["stopped"]
    assert (stopped["jobName"], stopped["execution"]) == (orphan, started["name"])
    assert result["executions"] == {started["name"]: "ABORTED"}
    assert result["notified"] == 1
    stack.clock.advance(600)
    assert live(stack) == []
    counted = [d for d in emitted_metrics(capsys.readouterr().out) if "OrphanedJobsStopped" in d]
    assert [(d["team"], d["OrphanedJobsStopped"]) for d in counted] == [("search-ranking", [1.0])]
    (alert,) = received_alerts(stack, alerts)
    assert alert["Subject"] == "[Spotline] OrphanedJobStopped: search-ranking/ranker-v2"
    assert f"Execution {started['name']} was stopped (in the console or by StopExecution)" in alert["Message"]
    assert alert["MessageAttributes"]["team"]["Value"] == "search-ranking"

    again = stack.invoke(RECONCILER, {})
    assert (again["stopped"], again["notified"]) == ([], 0)


def test_jobs_of_running_executions_and_jobs_that_are_not_spotlines_are_left_alone(long_training: LocalStack) -> None:
    stack = long_training
    queue = stack.physical["TrainingJobQueue"]
    foreign = service_job_request(
        example_spec(), Attempt("arn:aws:states:us-east-1:1:execution:m:someone", 1, "spot"), queue
    )
    foreign["tags"] = {"owner": "someone"}  # submitted by hand, without Spotline's tags
    stack.client("batch").submit_service_job(**foreign)
    sweeps: list[dict[str, Any]] = []

    def sweep_while_training(**_: Any) -> None:
        if not sweeps and any(j.status == "RUNNING" and j.job_name != foreign["jobName"] for j in stack.standin.jobs):
            sweeps.append({})  # once, and not again from the reconciler's own calls
            sweeps[0] = stack.invoke(RECONCILER, {})

    boto3.DEFAULT_SESSION.events.register("after-call.batch.DescribeServiceJob", sweep_while_training)  # type: ignore[union-attr]
    upload(stack, EXAMPLE_KEY, EXAMPLE_MANIFEST.read_bytes())
    (started,) = stack.deliver_events()
    execution = stack.wait_for_execution(started["executionArn"], timeout=300)

    (sweep,) = sweeps
    assert sweep["stopped"] == []
    assert sweep["executions"] == {started["name"]: "RUNNING"}
    assert sweep["checked"] == 1  # the foreign job was not Spotline's to check
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    assert {j.job_name: j.status for j in stack.standin.jobs}[foreign["jobName"]] == "SUCCEEDED"  # never terminated


def test_a_job_of_an_execution_step_functions_does_not_know_is_an_orphan(stack: LocalStack) -> None:
    queue = stack.physical["TrainingJobQueue"]
    arn = f"{stack.state_machine_arn().replace(':stateMachine:', ':execution:')}:search-ranking-gone-00000000"
    request = service_job_request(example_spec(), Attempt(arn, 1, "spot"), queue)
    stack.client("batch").submit_service_job(**request)

    result = stack.invoke(RECONCILER, {})

    assert result["executions"] == {"search-ranking-gone-00000000": "NOT_FOUND"}
    assert [s["jobName"] for s in result["stopped"]] == [request["jobName"]]
