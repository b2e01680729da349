"""Intake handler: one execution per manifest version, whatever the number of deliveries."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from conftest import deny_next, emitted_metrics, sample_event, upload
from spotline_dev.harness.local.handles import LocalStack


def _event_for(stack: LocalStack, key: str, version_id: str) -> dict[str, object]:
    event = sample_event("s3_manifest_created.json")
    event["detail"]["bucket"]["name"] = stack.bucket
    event["detail"]["object"]["key"] = key
    event["detail"]["object"]["version-id"] = version_id
    return event


def _executions(stack: LocalStack) -> list[dict[str, object]]:
    sfn = stack.client("stepfunctions")
    return sfn.list_executions(stateMachineArn=stack.state_machine_arn())["executions"]  # type: ignore[no-any-return]


def test_upload_starts_one_named_execution_with_the_manifest_location(
    stack: LocalStack, example_manifest: bytes
) -> None:
    key = "manifests/search-ranking/ranker-v2.yaml"
    version = upload(stack, key, example_manifest)
    result = stack.invoke("IntakeFunction", _event_for(stack, key, version))

    assert result["status"] == "started"
    assert result["name"].startswith("search-ranking-ranker-v2-")
    execution = stack.client("stepfunctions").describe_execution(executionArn=result["executionArn"])
    started_with = json.loads(execution["input"])
    assert started_with == {
        "bucket": stack.bucket,
        "key": key,
        "versionId": version,
        "etag": "b1946ac92492d2347c6235b4d2611184",
        "team": "search-ranking",
        "receivedAt": "2026-11-29T08:00:00Z",
        "continuedFrom": None,
    }


def test_duplicate_delivery_starts_nothing_new_and_is_counted(
    stack: LocalStack, example_manifest: bytes, capsys: object
) -> None:
    key = "manifests/search-ranking/ranker-v2.yaml"
    version = upload(stack, key, example_manifest)
    event = _event_for(stack, key, version)

    first = stack.invoke("IntakeFunction", event)
    stack.wait_for_execution(first["executionArn"])
    second = stack.invoke("IntakeFunction", copy.deepcopy(event))

    assert second == {**first, "status": "duplicate"}
    assert len(_executions(stack)) == 1
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]  # type: ignore[attr-defined]
    assert [m.get("DuplicateDeliveries") for m in emitted if "DuplicateDeliveries" in m] == [[1.0]]


def test_a_new_version_of_the_same_manifest_gets_its_own_execution(stack: LocalStack, example_manifest: bytes) -> None:
    key = "manifests/search-ranking/ranker-v2.yaml"
    first = stack.invoke("IntakeFunction", _event_for(stack, key, upload(stack, key, example_manifest)))
    second = stack.invoke("IntakeFunction", _event_for(stack, key, upload(stack, key, example_manifest + b"\n")))
    assert first["status"] == second["status"] == "started"
    assert first["name"] != second["name"]
    assert len(_executions(stack)) == 2
    for started in (first, second):
        stack.wait_for_execution(started["executionArn"])  # nothing left running into the teardown


def test_keys_outside_manifests_team_folders_are_ignored(stack: LocalStack) -> None:
    for key in (
        "manifests/ranker.yaml",
        "manifests/search-ranking/notes.txt",
        "reports/manifests/a/b.yaml.rejected.json",
    ):
        result = stack.invoke("IntakeFunction", _event_for(stack, key, "v1"))
        assert result == {"status": "ignored", "key": key}
    assert _executions(stack) == []


def test_rule_pattern_from_the_template_routes_only_manifest_uploads(
    stack: LocalStack, example_manifest: bytes
) -> None:
    upload(stack, "manifests/search-ranking/ranker-v2.yaml", example_manifest)
    upload(stack, "datasets/clicks.csv", b"a,b\n")
    delivered = stack.deliver_events()
    assert [r["status"] for r in delivered] == ["started"]


# --- events checked at the door ---------------------------------------------------------------


def _dead_letters(stack: LocalStack) -> list[dict[str, Any]]:
    sqs, url, letters = stack.client("sqs"), stack.physical["EventsDeadLetterQueue"], []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]).get(
        "Messages", []
    ):
        for message in messages:
            attributes = {k: v["StringValue"] for k, v in message.get("MessageAttributes", {}).items()}
            letters.append({"body": json.loads(message["Body"]), "attributes": attributes})
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return letters


def _request(**detail: Any) -> dict[str, Any]:
    return sample_event("training_requested.json") | {"detail": detail}


def _assert_rejected_once(
    stack: LocalStack, capsys: pytest.CaptureFixture[str], result: dict[str, Any], event_type: str, path: str
) -> str:
    """One clear rejection: the answer, one dead letter with the reason, one metric, no execution."""
    assert result["status"] == "rejected", result
    assert [e["path"] for e in result["errors"]] == [path]
    (letter,) = _dead_letters(stack)
    assert letter["attributes"] == {"reason": result["reason"], "eventType": event_type}
    assert (letter["body"]["reason"], letter["body"]["errors"]) == (result["reason"], result["errors"])
    emitted = emitted_metrics(capsys.readouterr().out)
    assert [(m["EventsRejected"], m["eventType"]) for m in emitted if "EventsRejected" in m] == [([1.0], event_type)]
    assert not [m for m in emitted if "ExecutionsStarted" in m]
    assert _executions(stack) == []
    return str(result["errors"][0]["message"])


def test_an_upload_event_for_another_bucket_is_rejected_once(
    stack: LocalStack, example_manifest: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "manifests/search-ranking/ranker-v2.yaml"
    version = upload(stack, key, example_manifest)
    event = _event_for(stack, key, version)
    event["detail"]["bucket"]["name"] = "someone-elses-bucket"
    message = _assert_rejected_once(
        stack, capsys, stack.invoke("IntakeFunction", event), "Object Created", "detail.bucket.name"
    )
    assert message == f"'someone-elses-bucket' is not the ingest bucket {stack.bucket}"
    valid = stack.invoke("IntakeFunction", _event_for(stack, key, version))
    assert valid["status"] == "started"
    stack.wait_for_execution(valid["executionArn"])  # nothing left running into the next test


HUGE = "x" * 140 * 1024
INGEST = "<the ingest bucket>"  # replaced by the local stack's


@pytest.mark.parametrize(
    ("detail", "path"),
    [
        ({"bucket": "someone-elses-bucket", "key": "manifests/search-ranking/ranker-v2.yaml"}, "detail.bucket"),
        ({"key": "manifests/search-ranking/ranker-v2.yaml"}, "detail.bucket"),
        ({"bucket": INGEST, "key": f"manifests/search-ranking/{HUGE}.yaml"}, "detail.key"),
        ({"bucket": INGEST, "key": 1.5}, "detail.key"),
        ({"bucket": INGEST, "key": "manifests/search-ranking/absent.yaml"}, "detail.key"),
        ({"bucket": INGEST, "key": "manifests/search-ranking/ranker-v2.yaml", "versionId": HUGE}, "detail.versionId"),
    ],
)
def test_a_bad_training_request_is_rejected_once(
    stack: LocalStack,
    example_manifest: bytes,
    capsys: pytest.CaptureFixture[str],
    detail: dict[str, Any],
    path: str,
) -> None:
    upload(stack, "manifests/search-ranking/ranker-v2.yaml", example_manifest)
    detail = {name: stack.bucket if value == INGEST else value for name, value in detail.items()}
    result = stack.invoke("IntakeFunction", _request(**detail))
    _assert_rejected_once(stack, capsys, result, "Training Requested", path)
    assert len(result["reason"]) < 600
    valid = stack.invoke("IntakeFunction", _request(bucket=stack.bucket, key="manifests/search-ranking/ranker-v2.yaml"))
    assert valid["status"] == "started"
    stack.wait_for_execution(valid["executionArn"])


def test_a_request_for_a_version_that_is_no_longer_current_is_refused_unless_allowed(
    stack: LocalStack, example_manifest: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "manifests/search-ranking/ranker-v2.yaml"
    old = upload(stack, key, example_manifest)
    current = upload(stack, key, example_manifest + b"\n")

    refused = stack.invoke("IntakeFunction", _request(bucket=stack.bucket, key=key, versionId=old))
    message = _assert_rejected_once(stack, capsys, refused, "Training Requested", "detail.versionId")
    assert message == (
        f"{old} is not the current version of s3://{stack.bucket}/{key} (the current one is {current}); "
        "set detail.allowNonCurrentVersion to true to train it anyway"
    )

    allowed = stack.invoke(
        "IntakeFunction", _request(bucket=stack.bucket, key=key, versionId=old, allowNonCurrentVersion=True)
    )
    assert allowed["status"] == "started"
    started_with = json.loads(
        stack.client("stepfunctions").describe_execution(executionArn=allowed["executionArn"])["input"]
    )
    assert started_with["versionId"] == old
    assert "allowNonCurrentVersion" not in started_with
    latest = stack.invoke("IntakeFunction", _request(bucket=stack.bucket, key=key, versionId=current))
    assert latest["status"] == "started"
    assert stack.invoke("IntakeFunction", _request(bucket=stack.bucket, key=key))["status"] == "duplicate"
    assert _dead_letters(stack) == []
    for started in (allowed, latest):
        stack.wait_for_execution(started["executionArn"])


def test_a_request_for_a_deleted_or_unknown_version_is_refused(stack: LocalStack, example_manifest: bytes) -> None:
    key = "manifests/search-ranking/ranker-v2.yaml"
    version = upload(stack, key, example_manifest)
    stack.client("s3").delete_object(Bucket=stack.bucket, Key=key)
    deleted = stack.invoke("IntakeFunction", _request(bucket=stack.bucket, key=key, versionId=version))
    assert deleted["errors"] == [
        {
            "path": "detail.versionId",
            "message": f"{version} is not the current version of s3://{stack.bucket}/{key} (the manifest has been "
            "deleted); set detail.allowNonCurrentVersion to true to train it anyway",
        }
    ]
    unknown = stack.invoke("IntakeFunction", _request(bucket=stack.bucket, key=key, versionId="no-such-version"))
    assert unknown["errors"] == [
        {"path": "detail.versionId", "message": f"version no-such-version of s3://{stack.bucket}/{key} does not exist"}
    ]
    assert len(_dead_letters(stack)) == 2
    assert _executions(stack) == []


# --- missing or denied: S3's 404 and 403 (issue 26) --------------------------------------------


def test_a_request_for_a_missing_manifest_is_refused_once_naming_the_key(
    stack: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "manifests/search-ranking/never-uploaded.yaml"
    result = stack.invoke("IntakeFunction", _request(bucket=stack.bucket, key=key))
    message = _assert_rejected_once(stack, capsys, result, "Training Requested", "detail.key")
    assert message == f"s3://{stack.bucket}/{key} does not exist (never uploaded, or deleted since)"
    assert f"s3://{stack.bucket}/{key}" in result["reason"]  # the dead letter's reason attribute too


def test_access_denied_is_not_taken_for_a_missing_manifest(stack: LocalStack, example_manifest: bytes) -> None:
    key = "manifests/search-ranking/ranker-v2.yaml"
    upload(stack, key, example_manifest)
    deny_next("s3.HeadObject", code="403")  # HeadObject has no body: a denial is a bare 403
    with pytest.raises(RuntimeError) as raised:
        stack.invoke("IntakeFunction", _request(bucket=stack.bucket, key=key))
    assert str(raised.value).startswith(
        f"IntakeFunction failed: ManifestUnreadable: S3 denied Intake access to s3://{stack.bucket}/{key} "
        "(An error occurred (403) when calling the HeadObject operation: Forbidden). Not a missing manifest"
    )
    # Not refused as missing: Lambda retries the event, then its dead-letter queue keeps it with this message.
    assert _dead_letters(stack) == []
    assert _executions(stack) == []
    started = stack.invoke("IntakeFunction", _request(bucket=stack.bucket, key=key))
    assert started["status"] == "started"
    stack.wait_for_execution(started["executionArn"])


def test_a_manifest_with_a_nul_in_a_comment_gets_a_rejection_report_not_a_dead_letter(
    stack: LocalStack, example_manifest: bytes
) -> None:
    """Issue 45: the NUL used to crash Intake's read of the manifest's kind (the upload ended in
    the dead-letter queue, no report). It reads as a manifest that cannot be loaded: the training
    lifecycle's LoadManifest, the one place that reports every unreadable manifest, writes the
    rejection report beside it with the position, and the manifest is left as it was."""
    key = "manifests/search-ranking/ranker-v2.yaml"
    body = example_manifest + b"# reviewed \x00 by ops\n"
    version = upload(stack, key, body)
    started = stack.invoke("IntakeFunction", _event_for(stack, key, version))

    assert started["status"] == "started"
    execution = stack.wait_for_execution(started["executionArn"])
    assert (execution["status"], execution.get("error")) == ("FAILED", "ManifestInvalid")
    assert _dead_letters(stack) == []
    s3 = stack.client("s3")
    report = json.loads(
        s3.get_object(Bucket=stack.bucket, Key=f"reports/{key}.rejected.json")["Body"].read()  # beside the manifest
    )
    line = example_manifest.count(b"\n") + 1
    assert report["manifest"]["versionId"] == version
    assert report["errors"] == [
        {
            "path": "(manifest)",
            "message": f"line {line}, column 12: control character U+0000 (NUL); "
            "remove it (no control character is allowed anywhere, not even in a comment)",
        }
    ]
    (only,) = s3.list_object_versions(Bucket=stack.bucket, Prefix=key)["Versions"]
    assert only["VersionId"] == version
    assert s3.get_object(Bucket=stack.bucket, Key=key)["Body"].read() == body
