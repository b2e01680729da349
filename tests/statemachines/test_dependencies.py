"""Dataset dependencies and Training Requested events through the real state machine."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from typing import Any

import boto3

from conftest import EXAMPLE_KEY, EXAMPLE_MANIFEST, entered_states, sample_event, upload
from spotline.aws.common.clients import reset_clients
from spotline_dev.harness.local.handles import LocalStack

DATASET = "clicks-2026-11-28"
WITH_DEPENDENCY = (
    EXAMPLE_MANIFEST.read_text()
    .replace("  priority: 100", f"  priority: 100\n  dependsOn: [{{dataset: {DATASET}}}]\n  dependencyTimeout: 6h")
    .encode()
)


def _dataset_ready(stack: LocalStack, dataset: str = DATASET, **fields: Any) -> None:
    detail = sample_event("dataset_ready.json")["detail"] | {"dataset": dataset} | fields
    stack.put_dataset_event("Dataset Ready", detail)


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _waiters(stack: LocalStack) -> list[dict[str, Any]]:
    items = stack.client("dynamodb").scan(TableName=stack.physical["DatasetsTable"])["Items"]
    return [i for i in items if i["sk"]["S"].startswith("WAITER#")]


def _start(stack: LocalStack, body: bytes = WITH_DEPENDENCY) -> str:
    upload(stack, EXAMPLE_KEY, body)
    (started,) = stack.deliver_events()
    return str(started["executionArn"])


def test_a_dependent_manifest_waits_and_is_released_by_the_event(stack: LocalStack) -> None:
    with stack.clock.holding_token_waits():  # the test plays the pipeline while the execution waits
        arn = _start(stack)
        _until(lambda: len(_waiters(stack)) == 1, "the execution to wait for its dataset")
        assert stack.client("stepfunctions").describe_execution(executionArn=arn)["status"] == "RUNNING"

        _dataset_ready(stack)
        (released,) = stack.deliver_events()
        assert released == {"dataset": DATASET, "released": [arn]}

    execution = stack.wait_for_execution(arn)
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    states = entered_states(stack.history(arn))
    assert states[:7] == [
        "IsItAContinuation?",
        "LoadManifest",
        "IsManifestValid?",
        "DoesItDependOnDatasets?",
        "CheckDatasets",
        "AreDatasetsReady?",
        "WaitForDatasets",
    ]
    assert json.loads(execution["output"])["dependencies"]["datasets"][DATASET]["location"].startswith("s3://")
    assert _waiters(stack) == []


def test_an_event_that_came_first_means_no_wait(stack: LocalStack) -> None:
    _dataset_ready(stack)
    stack.deliver_events()
    arn = _start(stack)
    execution = stack.wait_for_execution(arn)

    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    states = entered_states(stack.history(arn))
    assert "WaitForDatasets" not in states
    assert states[4:7] == ["CheckDatasets", "AreDatasetsReady?", "ValidateResources"]


def test_a_dataset_that_never_comes_ends_in_dependency_timeout(stack: LocalStack) -> None:
    arn = _start(stack)  # nothing comes: the wait runs on to its timeout
    execution = stack.wait_for_execution(arn)

    assert execution["status"] == "FAILED"
    assert execution["error"] == "DependencyTimeout"
    assert execution["cause"] == f"still waiting for {DATASET} after 6h (spec.dependencyTimeout)"
    assert entered_states(stack.history(arn))[-3:] == ["RecordOutcome", "WhatWasTheOutcome?", "DependencyTimeout"]


def test_duplicate_dataset_events_change_nothing(stack: LocalStack) -> None:
    with stack.clock.holding_token_waits():
        arn = _start(stack)
        _until(lambda: len(_waiters(stack)) == 1, "the execution to wait for its dataset")
        _dataset_ready(stack)
        _dataset_ready(stack)
        first, second = stack.deliver_events()
        assert (first["released"], second["released"]) == ([arn], [])
    assert stack.wait_for_execution(arn)["status"] == "SUCCEEDED"
    _dataset_ready(stack)
    # (the execution's own end reached StopExecutionJobs too: nothing of it was left to stop)
    gate = [r for r in stack.deliver_events() if "dataset" in r]
    assert gate == [{"dataset": DATASET, "released": []}]
    assert len(stack.standin.jobs) == 1


def test_an_event_between_the_check_and_the_registration_still_releases(stack: LocalStack) -> None:
    """The event arrives after CheckDatasets saw nothing and before WaitForDatasets registers."""
    event = sample_event("dataset_ready.json")
    fired = {"done": False}

    def dataset_arrives_now(params: dict[str, Any], **_: Any) -> None:
        if not fired["done"] and params.get("Item", {}).get("sk", "").startswith("WAITER#"):
            fired["done"] = True
            stack.invoke("DatasetGateFunction", event)

    session = boto3._get_default_session()
    session.events.register("provide-client-params.dynamodb.PutItem", dataset_arrives_now)
    reset_clients()  # clients made from now on carry the hook
    arn = _start(stack)
    execution = stack.wait_for_execution(arn)
    assert fired["done"]
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    assert "WaitForDatasets" in entered_states(stack.history(arn))


def test_training_requested_runs_like_an_upload_with_the_same_name_and_dedupe(stack: LocalStack) -> None:
    version = upload(stack, EXAMPLE_KEY, EXAMPLE_MANIFEST.read_bytes())
    request = sample_event("training_requested.json")
    request["detail"] = {"bucket": stack.bucket, "key": EXAMPLE_KEY}
    stack.put_dataset_event(request["detail-type"], request["detail"])
    results = stack.deliver_events()  # the upload's own event and the request, for the same version
    assert sorted(r["status"] for r in results) == ["duplicate", "started"]
    assert len({r["name"] for r in results}) == 1
    started = next(r for r in results if r["status"] == "started")
    execution = stack.wait_for_execution(started["executionArn"])
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    assert json.loads(execution["input"])["versionId"] == version


def _dead_letter_reasons(stack: LocalStack) -> list[str]:
    sqs, url, reasons = stack.client("sqs"), stack.physical["EventsDeadLetterQueue"], []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            reasons.append(json.loads(message["Body"])["reason"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return reasons


def test_training_requests_outside_the_ingest_bucket_or_for_missing_manifests_are_rejected(stack: LocalStack) -> None:
    request = sample_event("training_requested.json")
    for detail, path in (
        ({"bucket": "someone-elses-bucket", "key": EXAMPLE_KEY}, "detail.bucket"),
        ({"bucket": stack.bucket, "key": "manifests/search-ranking/absent.yaml"}, "detail.key"),
        ({"bucket": stack.bucket, "key": "notes/readme.txt"}, "detail.key"),
    ):
        result = stack.invoke("IntakeFunction", copy.deepcopy(request) | {"detail": detail})
        assert result["status"] == "rejected"
        assert [e["path"] for e in result["errors"]] == [path]
    assert len(_dead_letter_reasons(stack)) == 3
    assert stack.client("stepfunctions").list_executions(stateMachineArn=stack.state_machine_arn())["executions"] == []


def test_malformed_dataset_events_are_rejected_with_a_reason(stack: LocalStack) -> None:
    event = sample_event("dataset_ready.json")
    for detail in ({}, {"dataset": ""}, {"dataset": "no spaces allowed"}, {"dataset": 42}):
        result = stack.invoke("DatasetGateFunction", event | {"detail": detail})
        assert result["status"] == "rejected"
        assert "detail.dataset: " in result["reason"]
    assert [reason.split(": ")[1] for reason in _dead_letter_reasons(stack)] == ["detail.dataset"] * 4


def test_oversized_dataset_events_release_nothing_and_the_valid_one_still_does(stack: LocalStack) -> None:
    """Two Dataset Ready events with a 140 KB location once became readiness records too large for
    the execution state (256 KiB): every dependent execution failed for the readiness TTL."""
    with stack.clock.holding_token_waits():
        arn = _start(stack)
        _until(lambda: len(_waiters(stack)) == 1, "the execution to wait for its dataset")
        huge = "s3://search-ranking-data/" + "x" * 140 * 1024
        _dataset_ready(stack, location=huge)
        _dataset_ready(stack, location=huge)
        assert [r["status"] for r in stack.deliver_events()] == ["rejected", "rejected"]
        assert len(_dead_letter_reasons(stack)) == 2
        assert len(_waiters(stack)) == 1
        assert not [
            i
            for i in stack.client("dynamodb").scan(TableName=stack.physical["DatasetsTable"])["Items"]
            if i["sk"]["S"] == "READY"
        ]

        _dataset_ready(stack)
        assert stack.deliver_events() == [{"dataset": DATASET, "released": [arn]}]
    stack.wait_for_execution(arn)
    released = [
        json.loads(e["taskSucceededEventDetails"]["output"])
        for e in stack.history(arn)
        if "taskSucceededEventDetails" in e and '"releasedBy"' in e["taskSucceededEventDetails"]["output"]
    ]
    assert [r["datasets"][DATASET]["location"] for r in released] == [
        sample_event("dataset_ready.json")["detail"]["location"]
    ]
