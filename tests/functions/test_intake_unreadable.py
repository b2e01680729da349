"""Every kind of upload Spotline cannot read ends the same way (issue 45): Intake starts the
training lifecycle for it (it is not a scoring job), LoadManifest writes the rejection report
beside it naming the position or the field, the execution ends in ManifestInvalid, nothing goes
to the events dead-letter queue, the manifest is left as it was, and a redelivered event starts
nothing twice. A version deleted before it is read has no report (spotline.aws.manifest.manifest_store:
it would land beside a key whose current version may be another upload): it ends ManifestNotFound.

Each upload goes through the local stack's S3 -> EventBridge -> Intake path (deliver_events)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import EXAMPLE_MANIFEST, sample_event
from spotline.core.manifest.loader import MAX_BYTES, MAX_EXPANDED_NODES
from spotline_dev.harness.local.handles import LocalStack

KEY = "manifests/search-ranking/ranker-v2.yaml"
EXAMPLE = EXAMPLE_MANIFEST.read_bytes()
LAST_LINE = EXAMPLE.count(b"\n") + 1
BOMB = b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
    f"{b}: &{b} [{', '.join(['*' + a] * 9)}]\n".encode() for a, b in zip("abcde", "bcdef", strict=True)
)
TOO_BIG = EXAMPLE + b"#" + b"x" * MAX_BYTES + b"\n"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"

# (case, key, body, the report's errors as (path, start of the message))
CASES: list[tuple[str, str, bytes, tuple[str, str]]] = [
    (
        "nul-in-a-comment",
        KEY,
        EXAMPLE + b"# reviewed \x00 by ops\n",
        ("(manifest)", f"line {LAST_LINE}, column 12: control character U+0000 (NUL)"),
    ),
    (
        "invalid-utf8",
        KEY,
        EXAMPLE + b"# caf\xe9\n",
        (
            "(manifest)",
            f"manifest is not UTF-8 (invalid byte at offset {len(EXAMPLE) + 5}): "
            f"byte 0xE9 at line {LAST_LINE}, column 6",
        ),
    ),
    (
        "lone-surrogate-escape",
        KEY,
        EXAMPLE.replace(b"name: ranker-v2", b'name: "ranker-v2\\ud800"'),
        ("metadata.name", "lone UTF-16 surrogate U+D800"),
    ),
    (
        "png",
        "manifests/search-ranking/diagram.json",
        PNG,
        ("(manifest)", "manifest is not UTF-8 (invalid byte at offset 0): byte 0x89 at line 1, column 1"),
    ),
    ("empty", KEY, b"", ("(manifest)", "manifest is empty")),
    # The report gives the upload's size, not the 256 KiB + 1 bytes LoadManifest reads of it.
    (
        "over-256-kib",
        KEY,
        TOO_BIG,
        ("(manifest)", f"manifest is {len(TOO_BIG)} bytes; the limit is {MAX_BYTES} bytes (256 KiB)"),
    ),
    (
        "yaml-alias-bomb",
        KEY,
        BOMB,
        ("(manifest)", f"document has more than {MAX_EXPANDED_NODES} values once YAML aliases are expanded"),
    ),
    (
        "deeply-nested",
        KEY,
        b"spec: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
        ("(manifest)", "document is nested too deeply"),
    ),
    (
        "json-list",
        "manifests/search-ranking/ranker-v2.json",
        b'[{"apiVersion": "spotline/v1"}]',
        ("(manifest)", "manifest must be a mapping of fields, found a list"),
    ),
    (
        "odd-key",
        "manifests/search-ranking/my ranker (v2) é ü 日本.yaml",
        EXAMPLE + b"# \x00\n",
        ("(manifest)", f"line {LAST_LINE}, column 3: control character U+0000 (NUL)"),
    ),
]


def _event_for(stack: LocalStack, key: str, version_id: str) -> dict[str, Any]:
    event = sample_event("s3_manifest_created.json")
    event["detail"]["bucket"]["name"] = stack.bucket
    event["detail"]["object"] |= {"key": key, "version-id": version_id}
    return event


def _dead_letters(stack: LocalStack) -> list[dict[str, Any]]:
    sqs, url = stack.client("sqs"), stack.physical["EventsDeadLetterQueue"]
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])  # type: ignore[no-any-return]


def _executions(stack: LocalStack) -> list[dict[str, Any]]:
    sfn = stack.client("stepfunctions")
    return sfn.list_executions(stateMachineArn=stack.state_machine_arn())["executions"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(("key", "body", "error"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_an_unreadable_upload_gets_a_rejection_report_and_ends_manifest_invalid(
    stack: LocalStack, key: str, body: bytes, error: tuple[str, str]
) -> None:
    s3 = stack.client("s3")
    version = s3.put_object(Bucket=stack.bucket, Key=key, Body=body)["VersionId"]
    (started,) = stack.deliver_events()  # S3 -> EventBridge -> Intake, as deployed

    assert started["status"] == "started", started
    execution = stack.wait_for_execution(started["executionArn"])
    assert (execution["status"], execution.get("error")) == ("FAILED", "ManifestInvalid")
    report = json.loads(s3.get_object(Bucket=stack.bucket, Key=f"reports/{key}.rejected.json")["Body"].read())
    assert report["manifest"]["versionId"] == version
    path, message = error
    assert [e["path"] for e in report["errors"]] == [path], report["errors"]
    assert report["errors"][0]["message"].startswith(message), report["errors"]
    assert _dead_letters(stack) == []
    (only,) = s3.list_object_versions(Bucket=stack.bucket, Prefix=key)["Versions"]  # the manifest untouched
    assert only["VersionId"] == version
    assert s3.get_object(Bucket=stack.bucket, Key=key)["Body"].read() == body

    again = stack.invoke("IntakeFunction", _event_for(stack, key, version))  # EventBridge delivers at least once
    assert (again["status"], again["executionArn"]) == ("duplicate", started["executionArn"])
    assert len(_executions(stack)) == 1
    assert _dead_letters(stack) == []


def test_an_unreadable_version_deleted_before_intake_reads_it_ends_manifest_not_found(stack: LocalStack) -> None:
    s3 = stack.client("s3")
    version = s3.put_object(Bucket=stack.bucket, Key=KEY, Body=EXAMPLE + b"# \x00\n")["VersionId"]
    s3.delete_object(Bucket=stack.bucket, Key=KEY, VersionId=version)  # gone before its event is delivered
    (started,) = stack.deliver_events()

    assert started["status"] == "started", started
    execution = stack.wait_for_execution(started["executionArn"])
    assert (execution["status"], execution.get("error")) == ("FAILED", "ManifestNotFound")
    assert f"version {version} of s3://{stack.bucket}/{KEY} no longer exists" in str(execution.get("cause"))
    assert s3.list_objects_v2(Bucket=stack.bucket, Prefix="reports/").get("KeyCount") == 0
    assert _dead_letters(stack) == []
    again = stack.invoke("IntakeFunction", _event_for(stack, KEY, version))
    assert again["status"] == "duplicate" and len(_executions(stack)) == 1


def test_an_unreadable_manifest_deleted_with_a_delete_marker_is_still_read_and_reported(stack: LocalStack) -> None:
    """A plain delete in a versioned bucket leaves the version: Intake and LoadManifest read it by id."""
    s3 = stack.client("s3")
    version = s3.put_object(Bucket=stack.bucket, Key=KEY, Body=PNG)["VersionId"]
    s3.delete_object(Bucket=stack.bucket, Key=KEY)
    (started,) = stack.deliver_events()

    execution = stack.wait_for_execution(started["executionArn"])
    assert (execution["status"], execution.get("error")) == ("FAILED", "ManifestInvalid")
    report = json.loads(s3.get_object(Bucket=stack.bucket, Key=f"reports/{KEY}.rejected.json")["Body"].read())
    assert report["manifest"]["versionId"] == version
    assert report["errors"][0]["message"].startswith("manifest is not UTF-8 (invalid byte at offset 0)")
    assert _dead_letters(stack) == []
