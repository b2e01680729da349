"""Values the request builders or AWS would refuse are refused when the manifest is validated,
each naming its field (issue 45): integers written as floats, NaN and infinities, speeds and
rates outside a sane range, records no run can finish, line breaks and control characters
where SageMaker's patterns forbid them, regions that do not exist."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import botocore
import botocore.session
import pytest
from botocore.validate import ParamValidator

from spotline.core.manifest.manifest import schema, validate_bytes, validate_document
from spotline.core.training.training_request import Attempt, create_training_job_request

from .test_limits import EXECUTION, MINIMAL

NOW = datetime(2026, 11, 29, tzinfo=UTC)
SCORING: dict[str, Any] = {
    "apiVersion": "spotline/v1",
    "kind": "ScoringJob",
    "metadata": {"team": "media-recs", "name": "backfill-scores"},
    "spec": {
        "model": {"name": "media-recs-ranker-2026-11"},
        "input": {"s3Uri": "s3://media-recs-data/pairs/2026-12-05/", "contentType": "text/csv", "records": 40000000},
        "output": {"s3Uri": "s3://media-recs-scores/backfill/", "accept": "text/csv"},
        "deadline": "2026-12-05T03:00:00Z",
        "resources": {"instanceType": "ml.c5.2xlarge", "maxInstances": 12},
        "throughput": {"recordsPerSecond": 1500},
    },
}


def _with(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    *parents, last = path.split(".")
    node = changed
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return changed


def _errors(document: dict[str, Any]) -> dict[str, str]:
    return {e.path: e.message for e in validate_document(document, now=NOW).errors}


def test_the_bases_are_valid() -> None:
    assert _errors(MINIMAL) == {}
    assert _errors(SCORING) == {}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec.resources.instanceCount", 1.0),
        ("spec.resources.volumeSizeGB", 100.0),
        ("spec.priority", 5.0),
        ("spec.checkpoint.intervalMinutes", 15.0),
        ("spec.resources.alternatives", [{"instanceType": "ml.g5.4xlarge", "instanceCount": 2.0}]),
    ],
)
def test_an_integer_written_as_a_float_is_refused_by_field(path: str, value: Any) -> None:
    errors = _errors(_with(MINIMAL, path, value))
    field = path if not isinstance(value, list) else f"{path}[0].instanceCount"
    assert errors == {field: f"must be an integer, got {2.0 if isinstance(value, list) else value}"}


def test_a_float_instance_count_is_what_botocore_refuses_in_the_request() -> None:
    """The real shape the refusal protects: CreateTrainingJob with InstanceCount 1.0."""
    spec = validate_document(MINIMAL, now=NOW).spec
    assert spec is not None
    request = create_training_job_request(spec, Attempt(EXECUTION, 1, "spot"))
    request["ResourceConfig"]["InstanceCount"] = 1.0
    shape = botocore.session.get_session().get_service_model("sagemaker").operation_model("CreateTrainingJob")
    report = ParamValidator().validate(request, shape.input_shape)
    assert "Invalid type for parameter ResourceConfig.InstanceCount, value: 1.0" in report.generate_report()


@pytest.mark.parametrize(
    ("speed", "refused"), [(1e-300, True), (0.09, True), (0.1, False), (10, False), (10.5, True)], ids=repr
)
def test_an_alternative_speed_is_between_a_tenth_and_ten(speed: float, refused: bool) -> None:
    alternative = [{"instanceType": "ml.g5.4xlarge", "speed": speed}]
    errors = _errors(_with(MINIMAL, "spec.resources.alternatives", alternative))
    assert ("spec.resources.alternatives[0].speed" in errors) is refused, errors


@pytest.mark.parametrize(("rate", "refused"), [(1e-300, True), (0.0009, True), (0.001, False), (1e7, False)])
def test_a_scoring_rate_is_at_least_one_record_in_about_17_minutes(rate: float, refused: bool) -> None:
    document = _with(SCORING, "spec.throughput.recordsPerSecond", rate)
    document["spec"]["input"]["records"] = 1  # the rate alone
    errors = _errors(document)
    assert ("spec.throughput.recordsPerSecond" in errors) is refused, errors


def test_records_no_run_can_score_in_its_time_are_refused() -> None:
    """A deadline's run ends within its execution (a Standard execution's longest is a year); a
    window's within its window (under a day). The week-long night of the history-limit test fits."""
    most = 12 * 1500 * 365 * 24 * 3600  # maxInstances x recordsPerSecond x a year
    assert _errors(_with(SCORING, "spec.input.records", most)) == {}
    errors = _errors(_with(SCORING, "spec.input.records", most + 1))
    assert list(errors) == ["spec.input.records"]
    assert "a run must end within a year (its execution's longest)" in errors["spec.input.records"]
    schema_maximum = 10**12
    assert "spec.input.records" in _errors(_with(SCORING, "spec.input.records", schema_maximum))

    nightly = copy.deepcopy(SCORING)
    del nightly["spec"]["deadline"]
    nightly["spec"]["window"] = {"start": "01:00", "end": "04:00", "timeZone": "Europe/Berlin"}
    a_day = 12 * 1500 * 24 * 3600
    assert _errors(_with(nightly, "spec.input.records", a_day)) == {}
    errors = _errors(_with(nightly, "spec.input.records", a_day + 1))
    assert (
        "take 24 h; a run must end within a day (its window) (at most 1,555,200,000 records)"
        in errors["spec.input.records"]
    )


@pytest.mark.parametrize(
    "path",
    ["spec.inputs.0.fileSystem.path"],
)
@pytest.mark.parametrize("bad", ["/fsx/data\n/x", "/fsx/da\tta", "/fsx/\x7fdata", "/fsx/data\u2028"], ids=repr)
def test_a_file_system_path_with_a_control_character_or_line_break_is_refused(path: str, bad: str) -> None:
    channel = {"name": "train", "fileSystem": {"type": "fsx-lustre", "id": "fs-0123456789abcdef0", "path": bad}}
    errors = _errors(_with(MINIMAL, "spec.inputs", [channel]))
    assert list(errors) == ["spec.inputs[0].fileSystem.path"]
    assert "no control character or line break" in errors["spec.inputs[0].fileSystem.path"]
    ok = _with(MINIMAL, "spec.inputs", [{**channel, "fileSystem": {**channel["fileSystem"], "path": "/fsx/data"}}])
    assert _errors(ok) == {}


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("spec.hyperparameters", {"lr": "0.1\nrm -rf"}, "spec.hyperparameters.lr"),
        ("spec.hyperparameters", {"lr": "0.1\r"}, "spec.hyperparameters.lr"),
        ("spec.hyperparameters", {"a\u2028b": 1}, "spec.hyperparameters.a\u2028b"),
        ("spec.metrics", [{"name": "loss\u2028x", "regex": "loss=([0-9.]+)"}], "spec.metrics[0].name"),
        ("spec.metrics", [{"name": "loss", "regex": "loss=\u2029([0-9.]+)"}], "spec.metrics[0].regex"),
    ],
    ids=["hp-value-lf", "hp-value-cr", "hp-name-u2028", "metric-name", "metric-regex"],
)
def test_a_line_break_where_sagemakers_pattern_is_dot_star_is_refused(path: str, value: Any, field: str) -> None:
    # botocore's model: HyperParameterValue/Key, MetricName, MetricRegex are ".*" or ".+"; AWS
    # matches them as Java patterns, whose "." matches no line terminator (\n, \r, U+0085, U+2028, U+2029).
    errors = _errors(_with(MINIMAL, path, value))
    assert field in errors, errors


def test_regions_are_the_ones_where_sagemaker_runs_per_botocore() -> None:
    endpoints = json.loads((Path(botocore.__file__).parent / "data" / "endpoints.json").read_text())
    expected = []
    for partition in endpoints["partitions"]:
        if partition["partition"] in ("aws", "aws-cn", "aws-us-gov"):
            regions = partition["services"]["api.sagemaker"]["endpoints"]
            expected += sorted(r for r, e in regions.items() if "fips" not in r and not e.get("deprecated"))
    items = schema()["$defs"]["trainingSpec"]["properties"]["capacity"]["properties"]["regions"]["items"]
    assert items["enum"] == expected
    assert _errors(_with(MINIMAL, "spec.capacity.regions", ["us-east-1", "us-west-2"])) == {}
    errors = _errors(_with(MINIMAL, "spec.capacity.regions", ["us-east-1", "us-north-7"]))
    assert list(errors) == ["spec.capacity.regions[1]"]
    assert errors["spec.capacity.regions[1]"].startswith("is not a region where SageMaker training runs")
    typo = _errors(_with(MINIMAL, "spec.capacity.regions", ["us-east-1", "eu-west-9"]))["spec.capacity.regions[1]"]
    assert typo.endswith("(got 'eu-west-9'; closest: eu-west-3, eu-west-2, eu-west-1)")  # as LoadManifest says it


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (b"spec:\n  hyperparameters: {lr: .nan}\n", "spec.hyperparameters.lr"),
        (b"spec:\n  resources: {alternatives: [{speed: .inf}]}\n", "spec.resources.alternatives[0].speed"),
        (b'{"spec": {"throughput": {"recordsPerSecond": 1e999}}}', "spec.throughput.recordsPerSecond"),
        (b"spec:\n  throughput: {recordsPerSecond: -.Inf}\n", "spec.throughput.recordsPerSecond"),
    ],
    ids=["yaml-nan", "yaml-inf", "json-overflow", "yaml-minus-inf"],
)
def test_nan_and_infinities_are_refused_anywhere_by_field(data: bytes, field: str) -> None:
    (error,) = validate_bytes(data, now=NOW).errors
    assert error.path == field
    assert "is not a number any field takes" in error.message
