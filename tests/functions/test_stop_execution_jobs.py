"""StopExecutionJobs at an execution's end: the rule takes every end of this state machine's
executions, and the function terminates what the execution left queued or running, once."""

from __future__ import annotations

from typing import Any

import pytest
from moto.events.models import EventPattern

from conftest import (
    EXAMPLE_KEY,
    EXAMPLE_MANIFEST,
    emitted_metrics,
    example_spec,
    sample_event,
    upload,
)
from spotline.core.training.service_jobs import CANCELLED_ERROR
from spotline.core.training.training_request import Attempt, service_job_request
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import ACCOUNT

RULE = "StopExecutionJobsFunctionExecutionEnded"
HOUR = 3600


def live(stack: LocalStack) -> list[str]:
    return [j.job_name for j in stack.standin.jobs if j.status not in ("SUCCEEDED", "FAILED")]


def execution_arn(stack: LocalStack, name: str) -> str:
    return f"{stack.state_machine_arn().replace(':stateMachine:', ':execution:')}:{name}"


def status_change(stack: LocalStack, execution_arn: str, status: str = "ABORTED") -> dict[str, Any]:
    """The sample event (events/execution_status_change.json) for one of this stack's executions."""
    event = sample_event("execution_status_change.json")
    name = execution_arn.rsplit(":", 1)[-1]
    event["resources"] = [execution_arn]
    event["detail"] |= {
        "executionArn": execution_arn,
        "stateMachineArn": stack.state_machine_arn(),
        "name": name,
        "status": status,
    }
    return event


def stopped_while_training(stack: LocalStack) -> dict[str, Any]:
    """An execution stopped (ABORTED) two hours in, as on-call would in the console, its end
    not delivered yet: its training job is still running."""
    stack.stop_executions_after(2 * HOUR)
    upload(stack, EXAMPLE_KEY, EXAMPLE_MANIFEST.read_bytes())
    (started,) = stack.deliver_events()
    assert stack.wait_for_execution(started["executionArn"])["status"] == "ABORTED"
    assert len(live(stack)) == 1
    return started  # type: ignore[no-any-return]


def drain(stack: LocalStack, rule: str) -> None:
    (url,) = (url for url, (_function, name) in stack.rule_taps.items() if name == rule)
    stack.client("sqs").purge_queue(QueueUrl=url)


def test_the_rule_takes_every_end_of_this_state_machines_executions_and_nothing_else(stack: LocalStack) -> None:
    events = stack.client("events")
    pattern = EventPattern.load(events.describe_rule(Name=RULE)["EventPattern"])
    arn = execution_arn(stack, "x")
    for status in ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"):
        assert pattern.matches_event(status_change(stack, arn, status)), status
    assert not pattern.matches_event(status_change(stack, arn, "RUNNING"))
    other = status_change(stack, arn)
    other["detail"]["stateMachineArn"] = f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:someone-elses"
    assert not pattern.matches_event(other)


def test_a_stopped_execution_has_its_training_job_terminated_when_its_end_arrives(
    long_training: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = long_training
    started = stopped_while_training(stack)

    (result,) = stack.deliver_events()  # the ABORTED status change, through the rule

    assert (result["execution"], result["status"]) == (started["name"], "ABORTED")
    (stopped,) = result["stopped"]
    assert stopped["jobName"] == f"{started['name']}-a1-spot"
    assert result["notified"] == 1
    stack.clock.advance(600)  # SageMaker stops the job (its training saves a checkpoint on SIGTERM)
    assert live(stack) == []
    (job,) = stack.standin.jobs
    assert job.status_reason is not None and "its execution ended ABORTED" in job.status_reason
    counted = [d for d in emitted_metrics(capsys.readouterr().out) if "JobsStoppedAtExecutionEnd" in d]
    assert [(d["team"], d["JobsStoppedAtExecutionEnd"]) for d in counted] == [("search-ranking", [1.0])]


def test_the_sample_event_invoked_directly_stops_the_job_and_a_second_delivery_changes_nothing(
    long_training: LocalStack,
) -> None:
    stack = long_training
    started = stopped_while_training(stack)
    drain(stack, RULE)
    event = status_change(stack, started["executionArn"])

    first = stack.invoke("StopExecutionJobsFunction", event)
    second = stack.invoke("StopExecutionJobsFunction", event)  # EventBridge delivers at least once

    assert len(first["stopped"]) == 1
    assert (second["stopped"], second["notified"]) == ([], 0)


def test_a_job_whose_name_merely_starts_the_same_way_is_left_alone(stack: LocalStack) -> None:
    queue = stack.physical["TrainingJobQueue"]
    execution = "search-ranking-ranker-v2-0123abcd"
    neighbour = f"{execution}-another-run"  # its jobs are named "<execution>-another-run-a1-spot"
    request = service_job_request(example_spec(), Attempt(execution_arn(stack, neighbour), 1, "spot"), queue)
    assert request["jobName"].startswith(f"{execution}-a")  # the JOB_NAME prefix search finds it
    stack.client("batch").submit_service_job(**request)

    result = stack.invoke("StopExecutionJobsFunction", status_change(stack, execution_arn(stack, execution)))

    assert (result["stopped"], result["checked"]) == ([], 0)  # its spotline:execution tag says whose it is
    assert live(stack) == [request["jobName"]]


def test_an_execution_cancelled_with_spotline_cancel_has_its_job_stopped_without_an_alert(
    long_training: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    """The end's rule may reach the job before `spotline cancel` does: the team asked, nobody is alerted."""
    stack = long_training
    started = stopped_while_training(stack)
    drain(stack, RULE)
    event = status_change(stack, started["executionArn"])
    event["detail"] |= {"error": CANCELLED_ERROR, "cause": "Cancelled by arn:aws:iam::1:user/a with `spotline cancel`."}

    result = stack.invoke("StopExecutionJobsFunction", event)

    (stopped,) = result["stopped"]
    assert (stopped["jobName"], result["notified"]) == (f"{started['name']}-a1-spot", 0)
    stack.clock.advance(600)
    assert live(stack) == []
    (job,) = stack.standin.jobs
    assert job.status_reason is not None and "cancelled with spotline cancel" in job.status_reason
    counted = [d for d in emitted_metrics(capsys.readouterr().out) if "JobsStoppedAtCancel" in d]
    assert [(d["team"], d["JobsStoppedAtCancel"]) for d in counted] == [("search-ranking", [1.0])]
