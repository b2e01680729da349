"""Every end is named and stops its training job: unexpected errors after submission, a failing
RecordOutcome, a failing StopSpotJob, and another run of the same job still live. The real
state machine, handlers and stand-in, with faults injected as AWS produces them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from conftest import (
    EXAMPLE_KEY,
    EXAMPLE_MANIFEST,
    NOW,
    entered_states,
    example_spec,
    received_alerts,
    run_upload,
    subscribe_to_alerts,
    team_policy_for,
    upload,
)
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import load_template, resources_of_type
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour

HOUR = 3600


def live_jobs(stack: LocalStack) -> list[str]:
    """Service jobs still queued or running, once SageMaker had time to stop what was terminated."""
    stack.clock.advance(600)
    return [j.job_name for j in stack.standin.jobs if j.status not in ("SUCCEEDED", "FAILED")]


def task_failures(history: list[dict[str, Any]]) -> list[str]:
    return [e["taskFailedEventDetails"]["error"] for e in history if e["type"] == "TaskFailed"]


def test_check_training_status_failing_after_submission_stops_the_job_then_fails_as_unexpected_error(
    long_training: LocalStack,
) -> None:
    stack = long_training
    inbox = subscribe_to_alerts(stack)
    # The first check at 1 minute, then: the runtime dies on every attempt (the retry too).
    stack.kill_after_call("batch.DescribeServiceJob", times=3)
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert (execution["status"], execution["error"]) == ("FAILED", "UnexpectedError")
    states = entered_states(history)
    assert states[-4:] == ["StopTrainingJobAfterError", "RecordOutcome", "WhatWasTheOutcome?", "UnexpectedError"]
    failures = task_failures(history)
    # One try and two retries of CheckTrainingStatus; then RecordOutcome waits (BillingNotSettled)
    # for the job the clean-up stopped to end, so that its bill is final.
    assert [f for f in failures if f != "BillingNotSettled"] == ["Runtime.ExitError"] * 3
    assert 1 <= failures.count("BillingNotSettled") <= 4
    assert execution["cause"].startswith("Runtime.ExitError: ")
    (job,) = stack.standin.jobs
    # The cause keeps its start and end (the middle of a long one is clipped): the job Batch named.
    assert execution["cause"].endswith(f"{job.training_job_name} (Batch job {job.job_id}, was SCHEDULED).")
    assert live_jobs(stack) == []
    (stopped,) = stack.standin.jobs
    assert stopped.status_reason is not None and "unexpected error (Runtime.ExitError)" in stopped.status_reason
    (alert,) = received_alerts(stack, inbox)
    assert alert["Subject"] == "[Spotline] UnexpectedError: search-ranking/ranker-v2"
    assert "Spotline stopped this run's training job" in alert["Message"]


def test_a_throttled_check_past_the_retries_stops_the_job_too(long_training: LocalStack) -> None:
    stack = long_training
    stack.throttle("CheckTrainingStatusFunction", times=7)  # the first try and all 6 transient retries
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert (execution["status"], execution["error"]) == ("FAILED", "UnexpectedError")
    failures = [f for f in task_failures(history) if f != "BillingNotSettled"]  # waiting for the stopped job's bill
    assert failures == ["Lambda.TooManyRequestsException"] * 7
    assert "StopTrainingJobAfterError" in entered_states(history)
    assert live_jobs(stack) == []


def test_a_clean_up_that_cannot_stop_the_job_says_so_and_the_run_still_ends_named(
    long_training: LocalStack,
) -> None:
    stack = long_training
    stack.throttle("CheckTrainingStatusFunction", times=7)
    stack.standin.throttle("TerminateServiceJob", times=1_000)  # Batch keeps refusing
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert (execution["status"], execution["error"]) == ("FAILED", "UnexpectedError")
    assert "Spotline could not stop this run's training job" in execution["cause"]
    assert "reconciler" in execution["cause"]
    assert entered_states(history).count("StopTrainingJobAfterError") == 1
    # The job still trains when the outcome is recorded: SageMaker has not billed it, so the cost is
    # unknown (with the job named), never the $0.00 its empty bill would add up to.
    assert "RecordOutcomeWithBillsPending" in entered_states(history)
    report = json.loads(
        stack.client("s3").get_object(Bucket=stack.bucket, Key=f"reports/{EXAMPLE_KEY}.outcome.json")["Body"].read()
    )
    figures = report["figures"]
    assert (figures["cost_usd"], figures["billing_settled"]) == (None, False)
    (job,) = stack.standin.jobs
    assert figures["cost_unknown"].startswith(f"training job(s) {job.training_job_name} had not ended yet")


def test_a_submission_killed_after_batch_took_it_leaves_no_job_behind(stack: LocalStack) -> None:
    """SubmitServiceJob succeeded, the runtime died every time after: the state has no job id,
    the clean-up finds the job under the execution's job-name prefix."""
    stack.kill_after_call("batch.SubmitServiceJob", times=1 + 3)
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert (execution["status"], execution["error"]) == ("FAILED", "UnexpectedError")
    assert "SubmitTrainingJob" in entered_states(history)
    assert len(stack.standin.jobs) >= 1
    assert "Spotline stopped this run's training job" in execution["cause"]
    assert live_jobs(stack) == []


def test_a_failing_record_outcome_ends_in_outcome_not_recorded_with_an_alert(stack: LocalStack) -> None:
    inbox = subscribe_to_alerts(stack)
    stack.throttle("RecordOutcomeFunction", times=7)  # a training that succeeded, a report that cannot be written
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert (execution["status"], execution["error"]) == ("FAILED", "OutcomeNotRecorded")
    assert entered_states(history)[-4:] == [
        "RecordOutcome",
        "DescribeUnrecordedOutcome",
        "AlertOutcomeNotRecorded",
        "OutcomeNotRecorded",
    ]
    assert execution["cause"].startswith(
        "the outcome could not be recorded: RecordOutcome failed with Lambda.TooManyRequestsException: "
    )
    assert f"s3://{stack.bucket}/{EXAMPLE_KEY}" in execution["cause"]
    (alert,) = received_alerts(stack, inbox)
    assert alert["Subject"] == "[Spotline] OutcomeNotRecorded: search-ranking"
    assert {k: v["Value"] for k, v in alert["MessageAttributes"].items()} == {
        "team": "search-ranking",
        "outcome": "OutcomeNotRecorded",
    }
    message = json.loads(alert["Message"])
    assert message["execution"] == execution["executionArn"]
    assert message["why"] == execution["cause"]
    assert [j.status for j in stack.standin.jobs] == ["SUCCEEDED"]


def test_when_even_the_alert_fails_the_run_still_ends_in_outcome_not_recorded(stack: LocalStack) -> None:
    stack.throttle("RecordOutcomeFunction", times=7)
    refuse = _refuse_publishes(times=100)
    boto3.DEFAULT_SESSION.events.register("before-call.sns.Publish", refuse)  # type: ignore[union-attr]
    try:
        execution, _history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())
    finally:
        boto3.DEFAULT_SESSION.events.unregister("before-call.sns.Publish", refuse)  # type: ignore[union-attr]
    assert (execution["status"], execution["error"]) == ("FAILED", "OutcomeNotRecorded")


def _refuse_publishes(times: int) -> Any:
    left = {"n": times}

    def refuse(**_: Any) -> None:
        if left["n"] > 0:
            left["n"] -= 1
            error = {"Code": "Throttling", "Message": "Rate exceeded"}
            raise ClientError(
                {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400, "RequestId": "r"}}, "Publish"
            )

    return refuse


# --- StopSpotJob: a failed alert never skips on-demand; a failed stop never leaves spot running --


@pytest.fixture
def spot_gap_stack() -> Iterator[LocalStack]:
    """No spot capacity from the first hour on: spot attempts run out and spot-first moves on."""
    spec = example_spec()
    weather = SpotWeather(capacity_gaps=[(NOW + timedelta(hours=1), NOW + timedelta(days=30))])
    with start_local_stack(
        NOW,
        team_policy=team_policy_for(spec),
        weather=weather,
        behaviour=lambda _request: TrainingBehaviour(duration=8 * HOUR),
    ) as local:
        prepare_account(local.client, spec)
        yield local


def _short_runtime() -> bytes:
    return (
        EXAMPLE_MANIFEST.read_bytes()
        .replace(b"maxRuntime: 30h", b"maxRuntime: 10h")
        .replace(b"maxWait: 36h", b"maxWait: 12h")
    )


def test_a_throttled_alert_in_stop_spot_job_does_not_skip_the_on_demand_attempt(spot_gap_stack: LocalStack) -> None:
    stack = spot_gap_stack
    refuse = _refuse_publishes(times=1)  # the MovedToOnDemand message, past botocore's retries
    boto3.DEFAULT_SESSION.events.register("before-call.sns.Publish", refuse)  # type: ignore[union-attr]
    execution, history = run_upload(stack, _short_runtime())

    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    output = json.loads(execution["output"])
    assert output["fallback"]["notified"] is False and output["fallback"]["terminated"] in (True, False)
    assert output["training"]["capacity"] == "on-demand"
    assert entered_states(history).count("StopSpotJob") == 1


def test_a_stop_spot_job_that_keeps_failing_stops_every_job_of_the_run(spot_gap_stack: LocalStack) -> None:
    stack = spot_gap_stack
    stack.throttle("StopTrainingJobFunction", times=7)
    execution, history = run_upload(stack, _short_runtime())

    assert (execution["status"], execution["error"]) == ("FAILED", "UnexpectedError")
    states = entered_states(history)
    assert states[states.index("StopSpotJob") + 1] == "StopTrainingJobAfterError"
    assert "SubmitTrainingJob" not in states[states.index("StopSpotJob") :]  # no on-demand attempt beside the spot job
    assert live_jobs(stack) == []


# --- Re-uploading never starts a second job beside a live one --------------------------------


def test_an_upload_while_another_run_of_the_job_is_live_is_refused_with_the_execution_to_cancel(
    long_training: LocalStack,
) -> None:
    stack = long_training
    # The first run's execution dies without stopping its job (as before this clean-up existed):
    # stop it while its job trains, and do not deliver its end.
    stack.stop_executions_after(2 * HOUR)
    upload(stack, EXAMPLE_KEY, EXAMPLE_MANIFEST.read_bytes())
    (first,) = stack.deliver_events()
    assert stack.wait_for_execution(first["executionArn"])["status"] == "ABORTED"
    assert len(live_jobs(stack)) == 1
    stack.client("sqs").purge_queue(QueueUrl=_tap(stack, "StopExecutionJobsFunctionExecutionEnded"))

    assert stack.executions is not None
    stack.executions.stop_after = None
    upload(stack, EXAMPLE_KEY, EXAMPLE_MANIFEST.read_bytes())  # "re-upload the manifest"
    (second,) = stack.deliver_events()
    execution = stack.wait_for_execution(second["executionArn"])

    assert (execution["status"], execution["error"]) == ("FAILED", "ResourceValidationFailed")
    assert execution["cause"].startswith(
        "1 error(s): metadata.name: a job of team search-ranking named ranker-v2 is still queued or running "
        f"(execution {first['name']}, Batch job "
    )
    assert "cancel it" in execution["cause"]
    assert "SubmitTrainingJob" not in entered_states(stack.history(second["executionArn"]))
    assert len(stack.standin.jobs) == 1


def _tap(stack: LocalStack, rule: str) -> str:
    (url,) = (url for url, (_function, name) in stack.rule_taps.items() if name == rule)
    return url


# --- on-call can look every end up ----------------------------------------------------------


def test_every_fail_state_and_alarm_has_its_runbook_section() -> None:
    root = EXAMPLE_MANIFEST.parents[2]
    runbook = (root / "docs" / "runbook.md").read_text()
    for machine in ("training_lifecycle", "scoring_run"):
        states = json.loads((root / "statemachines" / f"{machine}.asl.json").read_text())["States"]
        for name, state in states.items():
            if state["Type"] == "Fail":
                assert f"\n## {name}\n" in runbook, (machine, name)
    for alarm in resources_of_type(load_template(), "AWS::CloudWatch::Alarm"):
        assert f"(`{alarm}`)" in runbook, alarm
