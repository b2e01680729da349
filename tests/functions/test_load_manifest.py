"""LoadManifest handler: exact version read, manifest never altered, rejection reported beside it,
the normalized spec stored once and referenced from the state (never carried in it)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

import pytest

from conftest import NOW, deny_next, emitted_metrics, entered_states, upload
from spotline.aws.manifest.spec_store import SpecUnavailable, load_spec, spec_bytes, spec_of
from spotline.core.common.errors import ManifestError
from spotline.core.state import ManifestCheck, SpecRef
from spotline.core.state.execution_state import MAX_ERROR_PATH, MAX_ERRORS_IN_STATE
from spotline_dev.harness.local.handles import LocalStack

KEY = "manifests/search-ranking/ranker-v2.yaml"
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:sm:run-1"
SPEC_KEY = "specs/run-1.json"


def _load(stack: LocalStack, version: str, key: str = KEY, team: str = "search-ranking") -> dict[str, Any]:
    event = {
        "execution": EXECUTION,
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


def _spec_versions(stack: LocalStack) -> list[str]:
    listed = stack.client("s3").list_object_versions(Bucket=stack.bucket, Prefix=SPEC_KEY)
    return [v["VersionId"] for v in listed.get("Versions", [])]


def test_valid_manifest_stores_the_normalized_spec_and_the_state_carries_a_reference(
    stack: LocalStack, example_manifest: bytes
) -> None:
    result = _load(stack, upload(stack, KEY, example_manifest))
    assert (result["valid"], result["errors"], result["errorCount"], result["report"]) == (True, [], 0, None)
    assert "spec" not in result
    assert result["job"] == {
        "team": "search-ranking",
        "name": "ranker-v2",
        "owner": "alice@example.com",
        "strategy": "spot-first",
        "instanceType": "ml.g5.2xlarge",
        "instanceCount": 1,
        "deadline": "2026-12-02T06:00:00Z",
        "outputS3Uri": "s3://search-ranking-models/ranker-v2/",
        "dependsOnDatasets": False,
        "dependencyTimeoutSeconds": 24 * 3600,
    }
    ref = result["specRef"]
    (version,) = _spec_versions(stack)
    assert ref == {
        "bucket": stack.bucket,
        "key": SPEC_KEY,
        "versionId": version,
        "sha256": hashlib.sha256(
            stack.client("s3").get_object(Bucket=stack.bucket, Key=SPEC_KEY)["Body"].read()
        ).hexdigest(),
    }
    spec = spec_of({"manifest": result})
    assert (spec.team, spec.max_runtime_seconds, spec.hyperparameters["epochs"]) == ("search-ranking", 30 * 3600, "12")
    assert spec_bytes(spec) == stack.client("s3").get_object(Bucket=stack.bucket, Key=SPEC_KEY)["Body"].read()


def test_a_rerun_returns_the_copy_it_already_stored(stack: LocalStack, example_manifest: bytes) -> None:
    version = upload(stack, KEY, example_manifest)
    first = _load(stack, version)
    assert _load(stack, version) == first  # a Lambda retry: same reference, no second write
    assert _spec_versions(stack) == [first["specRef"]["versionId"]]


def test_a_stale_copy_under_the_same_name_is_replaced_not_reused(stack: LocalStack, example_manifest: bytes) -> None:
    s3 = stack.client("s3")
    stale = s3.put_object(Bucket=stack.bucket, Key=SPEC_KEY, Body=b"{}", Metadata={"sha256": "0" * 64})["VersionId"]
    ref = _load(stack, upload(stack, KEY, example_manifest))["specRef"]
    assert ref["versionId"] != stale
    assert sorted(_spec_versions(stack)) == sorted([stale, ref["versionId"]])
    assert load_spec(SpecRef.from_state(ref)).name == "ranker-v2"


def test_later_steps_read_the_version_loadmanifest_wrote_and_refuse_an_altered_one(
    stack: LocalStack, example_manifest: bytes
) -> None:
    ref = SpecRef.from_state(_load(stack, upload(stack, KEY, example_manifest))["specRef"])
    s3 = stack.client("s3")
    altered = json.loads(s3.get_object(Bucket=stack.bucket, Key=SPEC_KEY)["Body"].read())
    altered["instance_count"] = 64
    overwrite = s3.put_object(Bucket=stack.bucket, Key=SPEC_KEY, Body=json.dumps(altered).encode())["VersionId"]

    assert load_spec(ref).instance_count == 1  # pinned: the overwrite changes nothing for this run
    with pytest.raises(SpecUnavailable, match="sha256 differs"):
        load_spec(replace(ref, version_id=overwrite))
    with pytest.raises(SpecUnavailable, match="no longer exists"):
        load_spec(replace(ref, version_id="no-such-version"))
    with pytest.raises(SpecUnavailable, match=r"no \$\.manifest\.specRef"):
        spec_of({"manifest": ManifestCheck.rejected([ManifestError("spec", "x")], report=None).to_state()})


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
    assert (report["manifest"]["versionId"], report["manifest"]["etag"]) == (version, "e")
    assert report["checkedAt"] == "2026-11-29T08:00:00Z"
    assert report["errors"] == result["errors"]
    assert result["errorCount"] == 2
    assert (result["job"], result["specRef"]) == (None, None)
    assert _spec_versions(stack) == []

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


def test_a_vanished_version_is_missing_named_by_key_not_a_crash(
    stack: LocalStack, example_manifest: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    version = upload(stack, KEY, example_manifest)
    stack.client("s3").delete_object(Bucket=stack.bucket, Key=KEY, VersionId=version)  # gone for good
    result = _load(stack, version)

    message = (
        f"version {version} of s3://{stack.bucket}/{KEY} no longer exists: it was deleted before Spotline read it. "
        "Nothing was queued; upload the manifest again if the run is still wanted."
    )
    assert result == {
        "valid": False,
        "missing": True,
        "errors": [{"path": "(manifest)", "message": message}],
        "errorCount": 1,
        "summary": message,  # the cause of ManifestNotFound
        "report": None,  # none beside a key whose current version may be another upload's
        "job": None,
        "specRef": None,
    }
    assert "Contents" not in stack.client("s3").list_objects_v2(Bucket=stack.bucket, Prefix="reports/")
    counted = [m for m in emitted_metrics(capsys.readouterr().out) if "ManifestsMissing" in m]
    assert [(m["team"], m["ManifestsMissing"]) for m in counted] == [("search-ranking", [1.0])]
    assert _load(stack, "no-such-version")["missing"] is True


def test_access_denied_is_an_access_error_not_a_missing_manifest(stack: LocalStack, example_manifest: bytes) -> None:
    version = upload(stack, KEY, example_manifest)
    deny_next("s3.GetObject")  # a bucket policy or the object's KMS key says no
    with pytest.raises(RuntimeError) as raised:
        _load(stack, version)
    assert str(raised.value).startswith(
        f"LoadManifestFunction failed: ManifestUnreadable: S3 denied LoadManifest access to version {version} "
        f"of s3://{stack.bucket}/{KEY} (An error occurred (AccessDenied) when calling the GetObject operation: "
        "Access Denied). Not a missing manifest: LoadManifest may list the ingest bucket, so S3 would answer 404 "
        "for one."
    )
    assert _load(stack, version)["valid"] is True  # the next read is allowed again


def test_the_state_keeps_the_first_errors_bounded_and_the_report_keeps_them_all(
    stack: LocalStack, example_manifest: bytes
) -> None:
    long_key = "k" * 5000
    nested = "".join(f"    bad{i}: {{nested: [1, 2]}}\n" for i in range(30))
    flow = b"  hyperparameters: {epochs: 12, lr: 0.0003, mixed_precision: true}\n"
    assert flow in example_manifest
    body = example_manifest.replace(flow, f"  hyperparameters:\n{nested}    ? {long_key}\n    : x\n".encode())
    result = _load(stack, upload(stack, KEY, body))

    report = json.loads(
        stack.client("s3")
        .get_object(Bucket=stack.bucket, Key="reports/manifests/search-ranking/ranker-v2.yaml.rejected.json")["Body"]
        .read()
    )
    count = len(report["errors"])
    assert count == result["errorCount"] == 31  # 30 nested values, 1 key over 256 characters
    assert result["errors"] == report["errors"][:MAX_ERRORS_IN_STATE]  # short enough to keep as they are
    assert result["summary"].startswith("31 error(s): ")
    assert result["summary"].endswith("; ... and 11 more (see the report)")
    assert all(len(e["path"]) <= MAX_ERROR_PATH for e in result["errors"])
    assert len(json.dumps(result)) < 32 * 1024


def test_a_manifest_deleted_before_loadmanifest_runs_ends_the_execution_in_manifest_not_found(
    stack: LocalStack, example_manifest: bytes
) -> None:
    version = upload(stack, KEY, example_manifest)
    stack.client("s3").delete_object(Bucket=stack.bucket, Key=KEY, VersionId=version)  # before Intake's event
    (started,) = stack.deliver_events()  # Intake reads nothing for an upload: the execution starts
    execution = stack.wait_for_execution(started["executionArn"])

    assert (execution["status"], execution["error"]) == ("FAILED", "ManifestNotFound")
    assert execution["cause"].startswith(f"version {version} of s3://{stack.bucket}/{KEY} no longer exists")
    assert entered_states(stack.history(started["executionArn"])) == [
        "IsItAContinuation?",
        "LoadManifest",
        "IsManifestValid?",
        "ManifestNotFound",
    ]
    assert stack.standin.jobs == []


def test_a_valid_scoring_manifest_started_here_by_hand_is_refused_naming_its_kind(stack: LocalStack) -> None:
    from spotline_dev.harness.local.template import PROJECT_ROOT

    key = "manifests/media-recs/nightly-scores.yaml"
    body = (PROJECT_ROOT / "examples" / "scoring" / "nightly-scores.yaml").read_bytes()
    result = _load(stack, upload(stack, key, body), key=key, team="media-recs")
    assert result["valid"] is False and result["specRef"] is None
    assert result["errors"] == [
        {"path": "kind", "message": "ScoringJob manifests run in the scoring state machine, not the training lifecycle"}
    ]
