"""Intake handler: one execution per manifest version, whatever the number of deliveries."""

from __future__ import annotations

import copy
import json

from conftest import sample_event, upload
from spotline_dev.local_aws import LocalStack


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
