"""The real statemachines/training_lifecycle.asl.json, executed by moto's interpreter with the
real handlers and the Batch/SageMaker stand-in, substitutions taken from template.yaml."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from conftest import (
    EXAMPLE_MANIFEST,
    NOW,
    ROOT,
    emitted_metrics,
    entered_states,
    example_spec,
    run_upload,
    team_policy_for,
)
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import load_template
from spotline_dev.harness.sandbox.account import prepare_account, team_allowance
from spotline_dev.harness.standin import TrainingBehaviour

ASL = ROOT / "statemachines" / "training_lifecycle.asl.json"
TRANSIENT_LAMBDA_ERRORS = {  # Step Functions' best practices, "Handle Lambda service exceptions"
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}
HAPPY_PATH = [
    "IsItAContinuation?",
    "LoadManifest",
    "IsManifestValid?",
    "DoesItDependOnDatasets?",
    "ValidateResources",
    "CheckNoLiveJob",
    "AreResourcesValid?",
    "SubmitTrainingJob",
    "WaitForJobToStart",
    "CheckTrainingStatus",
    "WhatShouldHappenNext?",
]


def _alerts(stack: LocalStack) -> list[dict[str, Any]]:
    sqs = stack.client("sqs")
    messages = sqs.receive_message(QueueUrl=stack.physical["AlertInbox"], MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(m["Body"]) for m in messages]


def subscribe_alert_inbox(stack: LocalStack) -> LocalStack:
    """Subscribes a queue to the alert topic so tests read what on-call would receive."""
    sqs, sns = stack.client("sqs"), stack.client("sns")
    url = sqs.create_queue(QueueName="alert-inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=stack.physical["AlertTopic"], Protocol="sqs", Endpoint=arn)
    stack.physical["AlertInbox"] = url
    return stack


@pytest.fixture
def alert_inbox(stack: LocalStack) -> LocalStack:
    return subscribe_alert_inbox(stack)


def test_the_deployed_definition_is_the_file_with_the_template_substitutions(stack: LocalStack) -> None:
    described = stack.client("stepfunctions").describe_state_machine(stateMachineArn=stack.state_machine_arn())
    substitutions = load_template()["Resources"]["TrainingLifecycle"]["Properties"]["DefinitionSubstitutions"]
    text = ASL.read_text()
    for key in substitutions:
        assert "${" + key + "}" in text
        value = (
            stack.physical["AlertTopic"]
            if key == "AlertTopicArn"
            else f"arn:aws:lambda:us-east-1:123456789012:function:spotline-local-{key.removesuffix('Arn')}"
        )
        text = text.replace("${" + key + "}", value)
    assert json.loads(described["definition"]) == json.loads(text)


def test_upload_to_completed_training_with_metrics_and_report(
    alert_inbox: LocalStack,
    example_manifest: bytes,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    stack = alert_inbox
    execution, history = run_upload(stack, example_manifest)

    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    states = entered_states(history)
    assert states[: len(HAPPY_PATH)] == HAPPY_PATH
    assert states[-3:] == ["RecordOutcome", "WhatWasTheOutcome?", "TrainingSucceeded"]
    output = json.loads(execution["output"])
    assert output["training"]["capacity"] == "spot"
    assert output["status"]["state"] == "completed"
    manifest = output["manifest"]
    assert "spec" not in manifest  # the spec travels by reference: specs/<execution>.json, version pinned
    assert manifest["specRef"]["key"] == f"specs/{execution['name']}.json"
    assert (manifest["job"]["team"], manifest["job"]["dependsOnDatasets"]) == ("search-ranking", False)
    figures = output["outcome"]["figures"]
    assert figures["attempts"] == 1
    assert figures["training_seconds"] >= 2 * 3600
    assert 0 < figures["billable_seconds"] < figures["training_seconds"]
    assert 0 < figures["cost_usd"] < figures["on_demand_cost_usd"]
    assert len(stack.standin.jobs) == 1

    report = json.loads(
        stack.client("s3")
        .get_object(Bucket=stack.bucket, Key="reports/manifests/search-ranking/ranker-v2.yaml.outcome.json")["Body"]
        .read()
    )
    assert report["outcome"] == "TrainingSucceeded"
    # The training job Batch named (AWSBatch<payload name><attempt id>), as the last check read it.
    assert "trainingJobName" not in output["training"]  # not known at submission
    assert output["status"]["trainingJobName"].startswith("AWSBatchranker-v2-a1-spot")
    assert report["links"]["trainingJob"].endswith(output["status"]["trainingJobName"])
    assert "NoSuchJsonPathError" not in caplog.text  # no Choice reads a path that may be absent
    metrics = {name: doc[name] for doc in emitted_metrics(capsys.readouterr().out) for name in doc if name[0].isupper()}
    for name in (
        "ManifestsAccepted",
        "JobsSubmitted",
        "JobsSucceeded",
        "TrainingSeconds",
        "BillableSeconds",
        "SavingsPercent",
        "EstimatedCostUSD",
        "QueueWaitSeconds",
        "SpotInterruptions",
    ):
        assert name in metrics, name
    assert _alerts(stack) == []


@pytest.fixture
def failing_stack() -> Iterator[LocalStack]:
    spec = example_spec()
    with start_local_stack(
        NOW,
        team_policy=team_policy_for(spec),
        behaviour=lambda _request: TrainingBehaviour(duration=8 * 3600, fail_after=3600),
    ) as local:
        prepare_account(local.client, spec)
        yield local


def test_algorithm_error_fails_once_as_training_failed_and_tells_on_call(failing_stack: LocalStack) -> None:
    stack = subscribe_alert_inbox(failing_stack)
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert execution["status"] == "FAILED"
    assert execution["error"] == "TrainingFailed"
    assert "(algorithm)" in execution["cause"] and "AlgorithmError" in execution["cause"]
    assert entered_states(history).count("SubmitTrainingJob") == 1
    assert len(stack.standin.jobs) == 1
    (alert,) = _alerts(stack)
    assert alert["Subject"] == "[Spotline] TrainingFailed: search-ranking/ranker-v2"
    assert "Why:" in alert["Message"] and "AlgorithmError" in alert["Message"]
    assert "sagemaker/home?region=us-east-1#/jobs/" in alert["Message"]
    assert alert["MessageAttributes"]["team"]["Value"] == "search-ranking"


def test_every_resource_problem_is_reported_at_once() -> None:
    spec = example_spec()
    narrow_policy = json.dumps({"teams": {"search-ranking": {**team_allowance(spec), "instanceFamilies": ["p4d"]}}})
    with start_local_stack(NOW, team_policy=narrow_policy) as stack:
        prepare_account(stack.client, spec, missing={"spec.image", "spec.inputs[1].s3Uri"})
        execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert execution["status"] == "FAILED"
    assert execution["error"] == "ResourceValidationFailed"
    assert execution["cause"].startswith("3 error(s): ")
    for fragment in (
        "spec.image: repository ranker not found in registry 123456789012 (image 123456789012.dkr.ecr.us-east-1",
        "spec.inputs[1].s3Uri: no objects under s3://search-ranking-data/clicks/2026-11-28/validation/",
        "spec.resources.instanceType: family g5 is not allowed for team search-ranking",
    ):
        assert fragment in execution["cause"]
    assert "SubmitTrainingJob" not in entered_states(history)


def test_a_runtime_killed_after_submitting_is_retried_without_a_second_job(
    stack: LocalStack, example_manifest: bytes
) -> None:
    stack.kill_after_call("batch.SubmitServiceJob", times=1)
    execution, history = run_upload(stack, example_manifest)

    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    failures = [e["taskFailedEventDetails"]["error"] for e in history if e["type"] == "TaskFailed"]
    assert failures == ["Runtime.ExitError"]
    assert len(stack.standin.jobs) == 1


def test_invalid_manifest_fails_as_manifest_invalid_listing_every_error(
    stack: LocalStack, example_manifest: bytes
) -> None:
    body = example_manifest.replace(b"ranker:2026.11.28", b"ranker:latest").replace(
        b"intervalMinutes: 15", b"intervalMinutes: 90"
    )
    execution, history = run_upload(stack, body)

    assert execution["status"] == "FAILED"
    assert execution["error"] == "ManifestInvalid"
    assert execution["cause"].startswith("2 error(s): ")
    assert "spec.checkpoint.intervalMinutes: must be at most 60" in execution["cause"]
    assert "spec.image: the tag 'latest' is not allowed" in execution["cause"]
    assert entered_states(history) == ["IsItAContinuation?", "LoadManifest", "IsManifestValid?", "ManifestInvalid"]
    reports = stack.client("s3").list_objects_v2(Bucket=stack.bucket, Prefix="reports/")["Contents"]
    assert [r["Key"] for r in reports] == ["reports/manifests/search-ranking/ranker-v2.yaml.rejected.json"]


def test_throttled_lambda_is_retried_with_backoff(stack: LocalStack, example_manifest: bytes) -> None:
    stack.throttle("LoadManifestFunction", times=2)
    execution, history = run_upload(stack, example_manifest)
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    failures = [e["taskFailedEventDetails"]["error"] for e in history if e["type"] == "TaskFailed"]
    assert failures == ["Lambda.TooManyRequestsException"] * 2
    assert stack.clock.now() > NOW + timedelta(hours=2)  # the training itself ran on the virtual clock


def test_every_lambda_task_retries_transient_errors_with_jitter_and_keeps_the_execution_id() -> None:
    states = json.loads(ASL.read_text())["States"]
    tasks = {
        name: s for name, s in states.items() if str(s.get("Resource", "")).startswith("arn:aws:states:::lambda:invoke")
    }
    assert len(tasks) == 13
    for name, state in tasks.items():
        transient = [r for r in state.get("Retry", []) if set(r["ErrorEquals"]) >= TRANSIENT_LAMBDA_ERRORS]
        assert transient, f"{name} does not retry transient Lambda errors"
        assert transient[0]["JitterStrategy"] == "FULL"
        assert state["Parameters"]["Payload"]["execution.$"] == "$$.Execution.Id"


def test_fail_states_carry_the_error_names_of_the_brief() -> None:
    states = json.loads(ASL.read_text())["States"]
    fails = {name: s["Error"] for name, s in states.items() if s["Type"] == "Fail"}
    assert fails == {
        name: name
        for name in (
            "ManifestInvalid",
            "ManifestNotFound",  # deleted before LoadManifest read it (issue 26)
            "ResourceValidationFailed",
            "TrainingFailed",
            "SpotCapacityExhausted",
            "CapacityUnavailable",  # no capacity of any of the job's types by its deadline (issue 29)
            "DeadlineMissed",
            "DependencyTimeout",
            "UnexpectedError",
            "OutcomeNotRecorded",
        )
    }
    for name, state in states.items():
        if state["Type"] == "Choice":
            assert name.endswith("?"), f"Choice state {name} should read as a question"


def test_a_step_that_keeps_crashing_ends_in_unexpected_error_with_the_original_error(
    stack: LocalStack, example_manifest: bytes
) -> None:
    subscribe_alert_inbox(stack)
    # The first GetObject is Intake's (the manifest's kind); LoadManifest's crashes on its first try
    # and both retries (one crash alone is absorbed: tests/statemachines/test_fault_matrix.py).
    stack.kill_after_call("s3.GetObject", times=3, skip=1)
    execution, history = run_upload(stack, example_manifest)

    assert execution["status"] == "FAILED"
    assert execution["error"] == "UnexpectedError"
    assert execution["cause"].startswith("Runtime.ExitError: ")
    assert entered_states(history)[-3:] == ["RecordOutcome", "WhatWasTheOutcome?", "UnexpectedError"]
    (alert,) = _alerts(stack)
    assert alert["Subject"] == "[Spotline] UnexpectedError: search-ranking/manifests/search-ranking/ranker-v2.yaml"
