"""ReconcileTrainingJobs, the sweep under the end-of-execution clean-up: it stops Spotline jobs
whose execution no longer runs and jobs Spotline did not submit (put on its queue by anyone
else), counts and reports them, and leaves the jobs of running executions alone."""

from __future__ import annotations

import json
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
from spotline.core.training.service_jobs import LIVE_STATUSES
from spotline.core.training.training_request import Attempt, service_job_request
from spotline_dev.harness.local.handles import LocalStack

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


def test_jobs_of_running_executions_are_left_alone_and_jobs_spotline_did_not_submit_are_stopped(
    long_training: LocalStack,
) -> None:
    stack = long_training
    queue = stack.physical["TrainingJobQueue"]
    foreign = service_job_request(
        example_spec(), Attempt("arn:aws:states:us-east-1:1:execution:m:someone", 1, "spot"), queue
    )
    foreign["tags"] = {"owner": "someone"}  # submitted by hand, without Spotline's tags
    stack.client("batch").submit_service_job(**foreign)
    sweeps: list[dict[str, Any]] = []

    def sweep_while_training(**_: Any) -> None:
        running = [j for j in stack.standin.jobs if j.status == "RUNNING" and j.job_name != foreign["jobName"]]
        if not sweeps and running:
            sweeps.append({})  # once, and not again from the reconciler's own calls
            batch = stack.client("batch")
            (spotlines,) = running
            copied = batch.describe_service_job(jobId=spotlines.job_id)["tags"]
            # Someone copies the running job's tags onto a job of their own: the tags claim the
            # execution, but its state does not list this job.
            request = {**foreign, "jobName": "copied-tags", "tags": copied, "clientToken": "copied-tags"}
            batch.submit_service_job(**request)
            sweeps[0] = stack.invoke(RECONCILER, {})

    boto3.DEFAULT_SESSION.events.register("after-call.batch.DescribeServiceJob", sweep_while_training)  # type: ignore[union-attr]
    upload(stack, EXAMPLE_KEY, EXAMPLE_MANIFEST.read_bytes())
    (started,) = stack.deliver_events()
    execution = stack.wait_for_execution(started["executionArn"], timeout=300)

    (sweep,) = sweeps
    assert sweep["stopped"] == []  # no orphan
    assert sweep["executions"] == {started["name"]: "RUNNING"}
    assert sweep["checked"] == 3
    assert {(f["jobName"], f["why"]) for f in sweep["foreign"]} == {
        (foreign["jobName"], "it carries no spotline:team and spotline:execution tags"),
        ("copied-tags", f"its tags name execution {started['name']}, which did not submit it"),
    }
    assert execution["status"] == "SUCCEEDED", execution.get("cause")  # Spotline's own job was untouched
    ended = {j.job_name: (j.status, j.status_reason) for j in stack.standin.jobs}
    for name in (foreign["jobName"], "copied-tags"):
        status, reason = ended[name]
        assert status == "FAILED"
        assert reason is not None and "Spotline: not submitted by Spotline" in reason, reason
    assert [status for name, (status, _) in ended.items() if name not in (foreign["jobName"], "copied-tags")] == [
        "SUCCEEDED"
    ]


def test_a_service_job_put_on_the_queue_outside_spotline_is_terminated_counted_and_reported(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    """Anyone with batch:SubmitServiceJob on the queue can submit straight to Batch, past
    ValidateResources, naming any role (Batch passes the payload through unvalidated and its
    service-linked role passes the role): the reconciler catches it at its next sweep."""
    alerts = subscribe_to_alerts(stack, "foreign-inbox")
    queue = stack.physical["TrainingJobQueue"]
    other_teams_role = f"arn:aws:iam::{stack.account}:role/spotline/team-b/training"
    request = service_job_request(example_spec(), Attempt("arn:aws:states:us-east-1:1:execution:m:x", 1, "spot"), queue)
    payload = json.loads(request["serviceRequestPayload"]) | {"RoleArn": other_teams_role}
    batch = boto3.client("batch", region_name=stack.region)  # plain boto3: no Spotline code on the way
    submitted = batch.submit_service_job(
        jobName="borrowed-role",
        jobQueue=queue,
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload=json.dumps(payload),
        quotaShareName=request["quotaShareName"],
    )
    stack.clock.advance(60)
    assert batch.describe_service_job(jobId=submitted["jobId"])["status"] in LIVE_STATUSES  # queued, or training

    result = stack.invoke(RECONCILER, {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}})

    (caught,) = result["foreign"]
    assert (caught["jobId"], caught["roleArn"], caught["why"]) == (
        submitted["jobId"],
        other_teams_role,
        "it carries no spotline:team and spotline:execution tags",
    )
    assert (result["stopped"], result["executions"], result["notified"]) == ([], {}, 1)
    assert batch.describe_service_job(jobId=submitted["jobId"])["isTerminated"] is True
    stack.clock.advance(600)
    described = batch.describe_service_job(jobId=submitted["jobId"])
    assert described["status"] == "FAILED"
    reason = "Spotline: not submitted by Spotline (it carries no spotline:team and spotline:execution tags)"
    assert reason in described["statusReason"]
    counted = [d for d in emitted_metrics(capsys.readouterr().out) if "ForeignJobsStopped" in d]
    assert [(d["team"], d["ForeignJobsStopped"]) for d in counted] == [("unknown", [1.0])]
    (alert,) = received_alerts(stack, alerts)
    assert alert["Subject"] == "[Spotline] ForeignJobStopped: unknown/borrowed-role"
    assert f"It named role {other_teams_role}" in alert["Message"]
    assert alert["MessageAttributes"]["outcome"]["Value"] == "ForeignJobStopped"

    again = stack.invoke(RECONCILER, {})
    assert (again["foreign"], again["notified"]) == ([], 0)  # terminated once


def test_a_job_of_an_execution_step_functions_does_not_know_is_an_orphan(stack: LocalStack) -> None:
    queue = stack.physical["TrainingJobQueue"]
    arn = f"{stack.state_machine_arn().replace(':stateMachine:', ':execution:')}:search-ranking-gone-00000000"
    request = service_job_request(example_spec(), Attempt(arn, 1, "spot"), queue)
    stack.client("batch").submit_service_job(**request)

    result = stack.invoke(RECONCILER, {})

    assert result["executions"] == {"search-ranking-gone-00000000": "NOT_FOUND"}
    assert [s["jobName"] for s in result["stopped"]] == [request["jobName"]]
