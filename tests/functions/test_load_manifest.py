"""LoadManifest handler: exact version read, manifest never altered, rejection reported beside it."""

from __future__ import annotations

import json

from conftest import NOW, upload
from spotline_dev.local_aws import LocalStack

KEY = "manifests/search-ranking/ranker-v2.yaml"


def _load(stack: LocalStack, version: str, key: str = KEY, team: str = "search-ranking") -> dict[str, object]:
    event = {
        "execution": "arn:aws:states:us-east-1:123456789012:execution:sm:run-1",
        "input": {
            "bucket": stack.bucket,
            "key": key,
            "versionId": version,
            "etag": "e",
            "team": team,
            "receivedAt": "2026-11-29T08:00:00Z",
        },
    }
    return stack.invoke("LoadManifestFunction", event)


def test_valid_manifest_yields_the_normalized_spec(stack: LocalStack, example_manifest: bytes) -> None:
    result = _load(stack, upload(stack, KEY, example_manifest))
    assert result["valid"] is True
    assert result["errors"] == []
    spec = result["spec"]
    assert isinstance(spec, dict)
    assert spec["team"] == "search-ranking"
    assert spec["max_runtime_seconds"] == 30 * 3600
    assert spec["hyperparameters"]["epochs"] == "12"


def test_reads_the_exact_version_not_the_latest(stack: LocalStack, example_manifest: bytes) -> None:
    good = upload(stack, KEY, example_manifest)
    upload(stack, KEY, b"apiVersion: spotline/v0\n")
    assert _load(stack, good)["valid"] is True


def test_rejection_writes_a_report_and_leaves_the_manifest_untouched(
    stack: LocalStack, example_manifest: bytes
) -> None:
    body = example_manifest.replace(b"maxWait: 36h", b"maxWait: 2h").replace(b"ml.g5.2xlarge", b"ml.g5.3xlarge")
    version = upload(stack, KEY, body)
    result = _load(stack, version)

    assert result["valid"] is False
    paths = [e["path"] for e in result["errors"]]  # type: ignore[union-attr]
    assert paths == ["spec.capacity.maxWait", "spec.resources.instanceType"]
    assert result["summary"].startswith("2 error(s): spec.capacity.maxWait:")  # type: ignore[union-attr]

    s3 = stack.client("s3")
    report_key = "reports/manifests/search-ranking/ranker-v2.yaml.rejected.json"
    assert result["report"] == f"s3://{stack.bucket}/{report_key}"
    report = json.loads(s3.get_object(Bucket=stack.bucket, Key=report_key)["Body"].read())
    assert report["outcome"] == "rejected"
    assert report["manifest"]["versionId"] == version
    assert report["checkedAt"] == "2026-11-29T08:00:00Z"
    assert report["errors"] == result["errors"]

    versions = s3.list_object_versions(Bucket=stack.bucket, Prefix=KEY)
    assert [v["VersionId"] for v in versions["Versions"]] == [version]
    assert "DeleteMarkers" not in versions
    assert s3.get_object(Bucket=stack.bucket, Key=KEY)["Body"].read() == body


def test_team_must_match_the_upload_folder(stack: LocalStack, example_manifest: bytes) -> None:
    key = "manifests/ads/ranker-v2.yaml"
    result = _load(stack, upload(stack, key, example_manifest), key=key, team="ads")
    assert result["valid"] is False
    assert [e["path"] for e in result["errors"]] == ["metadata.team"]  # type: ignore[union-attr]
    assert "manifests/ads/" in result["errors"][0]["message"]  # type: ignore[index]


def test_deadlines_are_judged_against_the_clock_handlers_read(stack: LocalStack, example_manifest: bytes) -> None:
    version = upload(stack, KEY, example_manifest)
    stack.clock.set(NOW.replace(day=2, month=12, hour=12))
    result = _load(stack, version)
    assert [e["path"] for e in result["errors"]] == ["spec.capacity.deadline"]  # type: ignore[union-attr]


def test_a_vanished_version_is_a_rejection_not_a_crash(stack: LocalStack) -> None:
    result = _load(stack, "no-such-version")
    assert result["valid"] is False
    assert "no longer exists" in result["errors"][0]["message"]  # type: ignore[index]
