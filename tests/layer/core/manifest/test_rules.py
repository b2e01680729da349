"""Semantic rules and normalization on valid variants, JobSpec serialization, and `spotline.core.common.naming`."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from spotline.core.common.durations import format_duration, parse_duration
from spotline.core.common.naming import ManifestLocation, execution_name, manifest_location, report_key
from spotline.core.manifest.manifest import ValidationResult, validate_bytes
from spotline.core.spec.model import InputChannel, JobSpec

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "manifests" / "ranker-v2.yaml"
NOW = datetime(2026, 11, 29, tzinfo=UTC)
HOUR, DAY = 3600, 86400

MINIMAL: dict[str, Any] = {
    "apiVersion": "spotline/v1",
    "kind": "TrainingJob",
    "metadata": {"team": "search-ranking", "name": "ranker-v2"},
    "spec": {
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11.28",
        "roleArn": "arn:aws:iam::123456789012:role/spotline/ranker-training",
        "resources": {"instanceType": "ml.g5.2xlarge"},
        "inputs": [{"name": "train", "s3Uri": "s3://search-ranking-data/train/"}],
        "output": {"s3Uri": "s3://search-ranking-models/ranker-v2/"},
        "checkpoint": {"s3Uri": "s3://search-ranking-checkpoints/ranker-v2/"},
    },
}


def manifest(**spec_changes: Any) -> dict[str, Any]:
    """MINIMAL with `spec` keys replaced (None removes the key)."""
    document = copy.deepcopy(MINIMAL)
    for key, value in spec_changes.items():
        if value is None:
            document["spec"].pop(key, None)
        else:
            document["spec"][key] = value
    return document


def check(document: dict[str, Any] | bytes, expected_team: str | None = None) -> ValidationResult:
    data = document if isinstance(document, bytes) else json.dumps(document).encode()
    return validate_bytes(data, now=NOW, expected_team=expected_team)


def valid_spec(document: dict[str, Any] | bytes, expected_team: str | None = None) -> JobSpec:
    result = check(document, expected_team)
    assert result.valid, "\n".join(map(str, result.errors))
    assert result.errors == []
    assert result.spec is not None
    return result.spec


def error_paths(document: dict[str, Any] | bytes) -> list[str]:
    result = check(document)
    assert not result.valid
    assert result.spec is None
    return [e.path for e in result.errors]


# --- defaults -----------------------------------------------------------------------------------


def test_minimal_manifest_gets_the_documented_defaults() -> None:
    spec = valid_spec(MINIMAL)
    assert spec == JobSpec(
        team="search-ranking",
        name="ranker-v2",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11.28",
        role_arn="arn:aws:iam::123456789012:role/spotline/ranker-training",
        instance_type="ml.g5.2xlarge",
        inputs=(InputChannel("train", "s3://search-ranking-data/train/", "File"),),
        output_s3_uri="s3://search-ranking-models/ranker-v2/",
        strategy="spot-first",
        instance_count=1,
        volume_size_gb=50,
        checkpoint_s3_uri="s3://search-ranking-checkpoints/ranker-v2/",
        checkpoint_interval_minutes=15,
        max_runtime_seconds=DAY,
        max_wait_seconds=2 * DAY,
        expected_duration_seconds=None,
        deadline=None,
        retry_max_attempts=3,
        retry_backoff_seconds=120,
        priority=100,
        owner=None,
        labels={},
        hyperparameters={},
        environment={},
        depends_on=(),
    )
    assert spec.uses_spot
    assert spec.deadline_at is None


@pytest.mark.parametrize(
    ("max_runtime", "expected_wait"),
    [("30h", 60 * HOUR), ("13d", 26 * DAY), ("14d", 28 * DAY), ("20d", 28 * DAY), ("28d", 28 * DAY), (None, 2 * DAY)],
)
def test_default_max_wait_is_twice_max_runtime_capped_at_28d(max_runtime: str | None, expected_wait: int) -> None:
    capacity = {"maxRuntime": max_runtime} if max_runtime else {"strategy": "spot-only"}
    spec = valid_spec(manifest(capacity=capacity))
    assert spec.max_wait_seconds == expected_wait
    assert spec.max_wait_seconds >= spec.max_runtime_seconds


def test_explicit_values_override_defaults() -> None:
    spec = valid_spec(
        manifest(
            resources={"instanceType": "ml.p4d.24xlarge", "instanceCount": 4, "volumeSizeGB": 500},
            checkpoint={"s3Uri": "s3://ckpt-bucket/x/", "intervalMinutes": 5},
            capacity={
                "strategy": "spot-only",
                "maxRuntime": "2d",
                "maxWait": "3d",
                "retry": {"maxAttempts": 7, "backoff": "5m"},
            },
            priority=9,
            dependsOn=[{"dataset": "clicks-2026-11-28"}, {"dataset": "users.v3"}],
        )
    )
    assert (spec.instance_type, spec.instance_count, spec.volume_size_gb) == ("ml.p4d.24xlarge", 4, 500)
    assert (spec.checkpoint_s3_uri, spec.checkpoint_interval_minutes) == ("s3://ckpt-bucket/x/", 5)
    assert (spec.strategy, spec.max_runtime_seconds, spec.max_wait_seconds) == ("spot-only", 2 * DAY, 3 * DAY)
    assert (spec.retry_max_attempts, spec.retry_backoff_seconds) == (7, 300)
    assert spec.priority == 9
    assert spec.depends_on == ("clicks-2026-11-28", "users.v3")


def test_the_example_normalizes_as_documented() -> None:
    spec = valid_spec(EXAMPLE.read_bytes(), expected_team="search-ranking")
    assert spec.inputs == (
        InputChannel("train", "s3://search-ranking-data/clicks/2026-11-28/train/", "FastFile"),
        InputChannel("validation", "s3://search-ranking-data/clicks/2026-11-28/validation/", "File"),
    )
    assert (spec.max_runtime_seconds, spec.max_wait_seconds, spec.expected_duration_seconds) == (
        30 * HOUR,
        36 * HOUR,
        8 * HOUR,
    )
    assert spec.deadline == "2026-12-02T06:00:00Z"
    assert spec.labels == {"cost-center": "4711"}
    assert spec.owner == "alice@example.com"


# --- scalars become strings ------------------------------------------------------------------------


def test_hyperparameters_and_environment_become_strings() -> None:
    text = (
        EXAMPLE.read_text()
        .replace(
            "hyperparameters: {epochs: 12, lr: 0.0003, mixed_precision: true}",
            'hyperparameters: {epochs: 12, lr: 0.0003, mixed_precision: true, shuffle: false, arch: resnet, seed: "42",'
            " scale: 1.5e+3, dropout: 0.1}",
        )
        .replace("environment: {WANDB_MODE: offline}", "environment: {WANDB_MODE: offline, DEBUG: true, THREADS: 8}")
    )
    spec = valid_spec(text.encode())
    assert spec.hyperparameters == {
        "epochs": "12",
        "lr": "0.0003",
        "mixed_precision": "true",
        "shuffle": "false",
        "arch": "resnet",
        "seed": "42",
        "scale": "1500.0",
        "dropout": "0.1",
    }
    assert spec.environment == {"WANDB_MODE": "offline", "DEBUG": "true", "THREADS": "8"}
    assert all(type(v) is str for v in [*spec.hyperparameters.values(), *spec.environment.values()])


# --- durations -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("iso", "compact", "seconds"),
    [
        ("PT30H", "30h", 30 * HOUR),
        ("P1DT12H", "1d12h", 36 * HOUR),
        ("PT90M", "90m", 90 * 60),
        ("PT1H30M", "1h30m", 90 * 60),
        ("P2D", "2d", 2 * DAY),
        ("PT1H0M30S", "1h30s", HOUR + 30),
        ("P28D", "28d", 28 * DAY),
    ],
)
def test_iso_and_compact_durations_are_equal(iso: str, compact: str, seconds: int) -> None:
    assert parse_duration(iso) == parse_duration(compact) == seconds
    by_iso = valid_spec(manifest(capacity={"maxRuntime": iso, "maxWait": iso}))
    by_compact = valid_spec(manifest(capacity={"maxRuntime": compact, "maxWait": compact}))
    assert by_iso == by_compact
    assert by_iso.max_runtime_seconds == by_iso.max_wait_seconds == seconds


@pytest.mark.parametrize(
    "text", ["", "P", "PT", "30", "h", "30H", "pt30h", "1h1d", "1.5h", "-1h", "P1H", "PT1D", " 30h"]
)
def test_non_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)
    assert error_paths(manifest(capacity={"maxRuntime": text})) == ["spec.capacity.maxRuntime"]


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (90, "1m30s"), (36 * HOUR, "36h"), (72 * HOUR, "3d"), (28 * DAY, "28d")]
)
def test_format_duration(seconds: int, text: str) -> None:
    assert format_duration(seconds) == text


# --- capacity rules on valid variants ------------------------------------------------------------


def test_on_demand_needs_no_checkpoint_and_has_no_max_wait() -> None:
    spec = valid_spec(manifest(checkpoint=None, capacity={"strategy": "on-demand", "maxRuntime": "30h"}))
    assert spec.strategy == "on-demand"
    assert not spec.uses_spot
    assert spec.checkpoint_s3_uri is None
    assert spec.max_wait_seconds is None


@pytest.mark.parametrize("strategy", ["spot-first", "spot-only", None])
def test_spot_strategies_need_a_checkpoint(strategy: str | None) -> None:
    capacity = {"strategy": strategy} if strategy else {}
    assert error_paths(manifest(checkpoint=None, capacity=capacity)) == ["spec.checkpoint"]


@pytest.mark.parametrize(
    "capacity",
    [
        {"maxRuntime": "28d", "maxWait": "28d"},
        {"maxRuntime": "30h", "maxWait": "30h"},
        {"maxRuntime": "30h", "expectedDuration": "30h"},
        {"maxRuntime": "1s"},
        {"retry": {"maxAttempts": 1, "backoff": "6h"}},
        {"retry": {"maxAttempts": 10, "backoff": "1s"}},
        {"deadline": "2026-11-29T08:00:00Z", "expectedDuration": "8h"},
    ],
    ids=[
        "28d-ceiling",
        "maxwait-equals-maxruntime",
        "expected-equals-maxruntime",
        "one-second",
        "retry-min",
        "retry-max",
        "deadline-exactly-feasible",
    ],
)
def test_boundary_capacities_are_valid(capacity: dict[str, Any]) -> None:
    valid_spec(manifest(capacity=capacity))


@pytest.mark.parametrize(
    ("capacity", "path"),
    [
        ({"maxRuntime": "28d1s"}, "spec.capacity.maxRuntime"),
        ({"maxRuntime": "30h", "maxWait": "29h59m59s"}, "spec.capacity.maxWait"),
        ({"maxRuntime": "30h", "expectedDuration": "30h1s"}, "spec.capacity.expectedDuration"),
        ({"retry": {"backoff": "6h1s"}}, "spec.capacity.retry.backoff"),
        ({"retry": {"backoff": "0s"}}, "spec.capacity.retry.backoff"),
        ({"maxWait": "PT0S"}, "spec.capacity.maxWait"),
        ({"deadline": "2026-11-29T07:59:59Z", "expectedDuration": "8h"}, "spec.capacity.deadline"),
        ({"deadline": "2026-11-29T00:00:00Z", "expectedDuration": "1h"}, "spec.capacity.deadline"),
        ({"deadline": "2026-11-28T23:59:59Z", "expectedDuration": "1h"}, "spec.capacity.deadline"),
    ],
    ids=[
        "maxruntime-28d1s",
        "maxwait-1s-short",
        "expected-1s-long",
        "backoff-over-6h",
        "backoff-zero",
        "maxwait-zero",
        "deadline-1s-infeasible",
        "deadline-equals-now",
        "deadline-1s-past",
    ],
)
def test_just_past_the_boundary_is_refused(capacity: dict[str, Any], path: str) -> None:
    assert error_paths(manifest(capacity=capacity)) == [path]


def test_spot_max_wait_defaults_apply_to_max_wait_check_with_default_runtime() -> None:
    # maxWait without maxRuntime is compared with the 1d default runtime.
    assert error_paths(manifest(capacity={"maxWait": "23h"})) == ["spec.capacity.maxWait"]
    assert valid_spec(manifest(capacity={"maxWait": "1d"})).max_wait_seconds == DAY


# --- deadlines ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "deadline",
    [
        "2026-12-02T06:00:00Z",
        "2026-12-02T06:00:00z",
        "2026-12-02t06:00:00Z",
        "2026-12-02 06:00:00Z",
        "2026-12-02T06:00:00+00:00",
        "2026-12-02T07:00:00+01:00",
        "2026-12-02T11:30:00+05:30",
        "2026-12-01T22:00:00-08:00",
        "2026-12-01T20:00:00-10:00",
    ],
)
def test_deadline_is_normalized_to_utc_with_z(deadline: str) -> None:
    spec = valid_spec(manifest(capacity={"deadline": deadline, "expectedDuration": "8h"}))
    assert spec.deadline == "2026-12-02T06:00:00Z"
    assert spec.deadline_at == datetime(2026, 12, 2, 6, tzinfo=UTC)


def test_deadline_keeps_fractional_seconds() -> None:
    spec = valid_spec(manifest(capacity={"deadline": "2026-12-02T07:00:00.25+01:00", "expectedDuration": "8h"}))
    assert spec.deadline == "2026-12-02T06:00:00.250000Z"
    assert spec.deadline_at == datetime(2026, 12, 2, 6, 0, 0, 250000, tzinfo=UTC)


def test_deadline_is_judged_against_now_in_any_offset() -> None:
    # 2026-11-29T00:30:00+01:00 is 23:30 UTC on the 28th: already past.
    result = check(manifest(capacity={"deadline": "2026-11-29T00:30:00+01:00", "expectedDuration": "1h"}))
    assert [e.path for e in result.errors] == ["spec.capacity.deadline"]
    assert "in the past" in result.errors[0].message
    later = validate_bytes(
        json.dumps(manifest(capacity={"deadline": "2026-12-02T06:00:00Z", "expectedDuration": "8h"})).encode(),
        now=NOW + timedelta(days=3, hours=6),
    )
    assert [e.path for e in later.errors] == ["spec.capacity.deadline"]


# --- other rules ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "image",
    [
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker@sha256:" + "a" * 64,
        "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/team/ranker:v1",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:latest-2026",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/latest:v1",
    ],
)
def test_pinned_images_are_valid(image: str) -> None:
    assert valid_spec(manifest(image=image)).image == image


@pytest.mark.parametrize(
    "role",
    [
        "arn:aws:iam::123456789012:role/simple",
        "arn:aws-cn:iam::123456789012:role/a/b/c",
        "arn:aws-us-gov:iam::123456789012:role/x",
    ],
)
def test_role_arns_in_any_partition_are_valid(role: str) -> None:
    assert valid_spec(manifest(roleArn=role)).role_arn == role


def test_upper_bounds_are_inclusive() -> None:
    document = manifest(
        resources={"instanceType": "ml.m5.large", "instanceCount": 64, "volumeSizeGB": 16384},
        checkpoint={"s3Uri": "s3://bkt", "intervalMinutes": 60},
        priority=9999,
        inputs=[{"name": f"c{i}", "s3Uri": f"s3://data-bucket/{i}/"} for i in range(20)],
    )
    document["metadata"]["labels"] = {f"k{i}": f"v {i}" for i in range(20)}
    spec = valid_spec(document)
    assert (spec.instance_count, spec.volume_size_gb, spec.priority) == (64, 16384, 9999)
    assert len(spec.inputs) == 20
    assert len(spec.labels) == 20


def test_lower_bounds_are_inclusive() -> None:
    document = manifest(checkpoint={"s3Uri": "s3://bkt/ckpt/", "intervalMinutes": 1}, priority=0)
    document["metadata"].update(team="ab", name="r")
    spec = valid_spec(document)
    assert (spec.checkpoint_interval_minutes, spec.priority, spec.team, spec.name) == (1, 0, "ab", "r")


def test_team_must_match_the_folder_team_when_given() -> None:
    assert valid_spec(MINIMAL, expected_team="search-ranking").team == "search-ranking"
    result = check(MINIMAL, expected_team="search")
    assert [e.path for e in result.errors] == ["metadata.team"]
    assert "'search-ranking'" in result.errors[0].message
    assert "manifests/search/" in result.errors[0].message


def test_all_errors_are_reported_together_and_sorted_by_path() -> None:
    document = manifest(
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:latest",
        resources={"instanceType": "ml.g5.3xlarge", "instanceCount": 0},
        inputs=[
            {"name": "train", "s3Uri": "s3://data-bucket/a/"},
            {"name": "train", "s3Uri": "http://data-bucket/b/", "mode": "Stream"},
        ],
        checkpoint=None,
        capacity={"maxRuntime": "30h", "maxWait": "20h", "retry": {"maxAttempts": 11}},
        priority=10000,
    )
    document["metadata"]["team"] = "Search"
    document["metadata"]["owner"] = "nobody"
    document["kind"] = "Job"

    result = check(document)

    paths = [e.path for e in result.errors]
    assert paths == sorted(paths)
    assert set(paths) == {
        "kind",
        "metadata.owner",
        "metadata.team",
        "spec.capacity.maxWait",
        "spec.capacity.retry.maxAttempts",
        "spec.checkpoint",
        "spec.image",
        "spec.inputs[1].mode",
        "spec.inputs[1].name",
        "spec.inputs[1].s3Uri",
        "spec.priority",
        "spec.resources.instanceCount",
        "spec.resources.instanceType",
    }
    assert len(result.errors) >= 13
    assert len(set(result.errors)) == len(result.errors), "no duplicate errors"


# --- JobSpec serialization -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "document",
    [EXAMPLE.read_bytes(), MINIMAL, manifest(checkpoint=None, capacity={"strategy": "on-demand"})],
    ids=["example", "minimal", "on-demand"],
)
def test_jobspec_round_trips_through_json(document: dict[str, Any] | bytes) -> None:
    spec = valid_spec(document)
    data = spec.to_dict()
    wire = json.loads(json.dumps(data))
    assert wire == data
    assert isinstance(data["inputs"], list) and all(isinstance(c, dict) for c in data["inputs"])
    assert isinstance(data["depends_on"], list)
    restored = JobSpec.from_dict(wire)
    assert restored == spec
    assert restored.to_dict() == data


def test_a_spec_stored_before_code_metrics_and_warm_pools_reads_back_with_their_defaults() -> None:
    data = valid_spec(EXAMPLE.read_bytes()).to_dict()
    for field in ("code_s3_uri", "code_entry_point", "metrics", "keep_alive_seconds"):
        del data[field]
    for channel in data["inputs"]:
        del channel["distribution"]
    spec = JobSpec.from_dict(data)
    assert (spec.code_s3_uri, spec.metrics, spec.keep_alive_seconds) == (None, (), 0)
    assert {channel.distribution for channel in spec.inputs} == {"FullyReplicated"}
    assert spec == valid_spec(EXAMPLE.read_bytes())


def test_jobspec_dict_uses_seconds_and_utc() -> None:
    data = valid_spec(EXAMPLE.read_bytes()).to_dict()
    assert data["max_runtime_seconds"] == 30 * HOUR
    assert data["max_wait_seconds"] == 36 * HOUR
    assert data["deadline"] == "2026-12-02T06:00:00Z"
    assert data["inputs"][0] == {
        "name": "train",
        "s3_uri": "s3://search-ranking-data/clicks/2026-11-28/train/",
        "mode": "FastFile",
        "distribution": "FullyReplicated",
    }


# --- naming ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "team"),
    [
        ("manifests/search-ranking/ranker-v2.yaml", "search-ranking"),
        ("manifests/search-ranking/ranker-v2.yml", "search-ranking"),
        ("manifests/search-ranking/ranker-v2.json", "search-ranking"),
        ("manifests/search-ranking/weekly/2026/ranker-v2.yaml", "search-ranking"),
        ("manifests/ads/RANKER.YAML", "ads"),
    ],
)
def test_manifest_location_accepts_manifest_keys(key: str, team: str) -> None:
    assert manifest_location("ingest", key, "v1") == ManifestLocation("ingest", key, "v1", team)


@pytest.mark.parametrize(
    "key",
    [
        "manifests/ranker-v2.yaml",
        "manifests//ranker-v2.yaml",
        "manifests/search-ranking/",
        "manifests/search-ranking/weekly/",
        "manifests/search-ranking/readme.md",
        "manifests/search-ranking/ranker-v2.yaml.bak",
        "manifests/search-ranking/ranker-v2.yamlx",
        "manifests/search-ranking/ranker-v2",
        "reports/manifests/search-ranking/ranker-v2.yaml.rejected.json",
        "other/search-ranking/ranker-v2.yaml",
        "Manifests/search-ranking/ranker-v2.yaml",
        "search-ranking/ranker-v2.yaml",
        "manifests",
        "",
    ],
)
def test_manifest_location_ignores_other_keys(key: str) -> None:
    assert manifest_location("ingest", key, "v1") is None


def _location(
    key: str = "manifests/search-ranking/ranker-v2.yaml", version: str | None = "3HL4kqtJlcpXroDTDmJ"
) -> ManifestLocation:
    location = manifest_location("ingest", key, version)
    assert location is not None
    return location


def _valid_execution_name(name: str) -> bool:
    return len(name) <= 80 and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) is not None


def test_execution_name_is_readable_and_deterministic() -> None:
    location = _location()
    digest = hashlib.sha256(b"ingest\0manifests/search-ranking/ranker-v2.yaml\x003HL4kqtJlcpXroDTDmJ").hexdigest()[:8]
    assert execution_name(location) == f"search-ranking-ranker-v2-{digest}"
    assert execution_name(_location()) == execution_name(location)


def test_execution_name_differs_by_version_bucket_and_key() -> None:
    names = {
        execution_name(_location(version="v1")),
        execution_name(_location(version="v2")),
        execution_name(_location(version=None)),
        execution_name(
            ManifestLocation("other-bucket", "manifests/search-ranking/ranker-v2.yaml", "v1", "search-ranking")
        ),
        execution_name(_location(key="manifests/search-ranking/weekly/ranker-v2.yaml", version="v1")),
    }
    assert len(names) == 5
    assert all(name.startswith("search-ranking-ranker-v2-") for name in names)


def test_execution_name_without_version_is_still_deterministic() -> None:
    assert execution_name(_location(version=None)) == execution_name(_location(version=None))
    assert re.fullmatch(r"search-ranking-ranker-v2-[0-9a-f]{8}", execution_name(_location(version=None)))


@pytest.mark.parametrize(
    ("file_name", "stem"),
    [
        ("My Model_v2 (final).YAML", "my-model-v2-final"),
        ("ranker--v2..yaml", "ranker-v2"),
        ("__init__.json", "init"),
        ("ÄÖÜ.yaml", "manifest"),
        ("---.yml", "manifest"),
    ],
)
def test_execution_name_slugs_the_file_stem(file_name: str, stem: str) -> None:
    name = execution_name(_location(key=f"manifests/ads/{file_name}"))
    assert re.fullmatch(rf"ads-{stem}-[0-9a-f]{{8}}", name), name
    assert _valid_execution_name(name)


@pytest.mark.parametrize("team", ["ab", "search-ranking", "a-very-long-team-name-xy"])
@pytest.mark.parametrize("stem_length", [1, 40, 80, 300])
def test_long_file_names_are_truncated_to_80_characters(team: str, stem_length: int) -> None:
    stem = ("ranker-" * 50)[:stem_length].strip("-") or "r"
    name = execution_name(_location(key=f"manifests/{team}/{stem}.yaml"))
    assert _valid_execution_name(name), name
    assert name.startswith(f"{team}-")
    assert re.search(r"-[0-9a-f]{8}$", name)
    if stem_length == 300:
        assert len(name) >= 78  # truncated to fit, not shortened needlessly (a trailing dash may go)
    other = execution_name(_location(key=f"manifests/{team}/{stem}x.yaml"))
    assert other != name


@pytest.mark.parametrize(
    ("key", "outcome", "report"),
    [
        (
            "manifests/search-ranking/ranker-v2.yaml",
            "rejected",
            "reports/manifests/search-ranking/ranker-v2.yaml.rejected.json",
        ),
        ("manifests/a/b/c.json", "succeeded", "reports/manifests/a/b/c.json.succeeded.json"),
    ],
)
def test_report_key_lies_beside_the_manifest_path(key: str, outcome: str, report: str) -> None:
    assert report_key(key, outcome) == report
    assert manifest_location("ingest", report, None) is None, "a report must never look like a manifest"


def test_a_channel_with_neither_source_says_which_it_has_never_dumping_it() -> None:
    document = copy.deepcopy(MINIMAL)
    document["spec"]["inputs"] = [{"name": "train", "mode": "File"}]
    document["spec"]["output"] = {"s3Uri": {"bucket": "b"}}
    errors = {e.path: e.message for e in validate_bytes(json.dumps(document).encode(), now=NOW).errors}
    assert errors["spec.inputs[0]"].endswith(
        "fileSystem (an FSx for Lustre or EFS directory) (has none of s3Uri, fileSystem)"
    )
    assert errors["spec.output.s3Uri"].endswith("(got a mapping of 1 field(s))")
