"""docs/teams/manifests.md's field tables are the schema's (spotline_dev.docs_tables): every field
has a row and a description, a stale page is caught, and each default a description states is
the one the validator really applies."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from spotline.core.common.durations import parse_duration
from spotline.core.manifest.manifest import schema, validate_document
from spotline_dev.docs_tables import PAGE, MissingDescription, begin, end, kinds, main, refreshed, rows, table

NOW = datetime(2026, 11, 29, tzinfo=UTC)
TRAINING = {
    "apiVersion": "spotline/v1",
    "kind": "TrainingJob",
    "metadata": {"team": "search-ranking", "name": "defaults"},
    "spec": {
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:1",
        "roleArn": "arn:aws:iam::123456789012:role/spotline/ranker",
        "resources": {"instanceType": "ml.g5.2xlarge"},
        "inputs": [{"name": "train", "s3Uri": "s3://search-ranking-data/train/"}],
        "output": {"s3Uri": "s3://search-ranking-models/defaults/"},
        "checkpoint": {"s3Uri": "s3://search-ranking-checkpoints/defaults/"},
    },
}
SCORING = {
    "apiVersion": "spotline/v1",
    "kind": "ScoringJob",
    "metadata": {"team": "media-recs", "name": "defaults"},
    "spec": {
        "model": {"name": "media-recs-ranker"},
        "input": {"s3Uri": "s3://media-recs-data/pairs/", "contentType": "text/csv"},
        "output": {"s3Uri": "s3://media-recs-scores/defaults/"},
        "window": {"start": "01:00", "end": "04:00", "timeZone": "UTC"},
        "resources": {"instanceType": "ml.c5.2xlarge", "maxInstances": 4},
    },
}
AS_WRITTEN: Callable[[str], Any] = str
APPLIED: dict[str, tuple[Callable[[Any], Any], Callable[[str], Any]]] = {
    "spec.resources.instanceCount": (lambda s: s.instance_count, int),
    "spec.resources.volumeSizeGB": (lambda s: s.volume_size_gb, int),
    "spec.inputs[].mode": (lambda s: s.inputs[0].mode, AS_WRITTEN),
    "spec.inputs[].distribution": (lambda s: s.inputs[0].distribution, AS_WRITTEN),
    "spec.checkpoint.intervalMinutes": (lambda s: s.checkpoint_interval_minutes, int),
    "spec.checkpoint.format": (lambda s: s.checkpoint_format, AS_WRITTEN),
    "spec.capacity.strategy": (lambda s: s.strategy, AS_WRITTEN),
    "spec.capacity.maxRuntime": (lambda s: s.max_runtime_seconds, parse_duration),
    "spec.capacity.retry.maxAttempts": (lambda s: s.retry_max_attempts, int),
    "spec.capacity.retry.backoff": (lambda s: s.retry_backoff_seconds, parse_duration),
    "spec.priority": (lambda s: s.priority, int),
    "spec.dependencyTimeout": (lambda s: s.dependency_timeout_seconds, parse_duration),
    "spec.input.splitType": (lambda s: s.split_type, AS_WRITTEN),
    "spec.headroom": (lambda s: s.headroom_percent, int),
    "spec.maxConcurrentTransforms": (lambda s: s.max_concurrent_transforms, lambda text: int(text.split()[0])),
}
"""Defaults written as a value, and where the validated spec of a manifest without the field keeps it."""
IN_WORDS = {
    "spec.resources.alternatives[].instanceCount",
    "spec.resources.alternatives[].speed",
    "spec.resources.infraCheck",
    "spec.distribution.processesPerHost",
    "spec.distribution.efa",
    "spec.inputs[].fileSystem.access",
    "spec.capacity.maxWait",
    "spec.capacity.regions",
    "spec.input.compression",
    "spec.output.assembleWith",
    "spec.maxPayloadMB",
}
"""Defaults the table states in words or for a field a minimal manifest cannot leave out alone
(the tests of the validator check these)."""


def test_the_page_s_tables_are_a_fresh_generation() -> None:
    assert main(["--check", "--page", str(PAGE)]) == 0


def test_each_kind_has_a_table_with_every_field_of_its_spec() -> None:
    root = schema()
    assert set(kinds(root)) == {"TrainingJob", "ScoringJob"}
    training = {row.path for row in rows("TrainingJob")}
    scoring = {row.path for row in rows("ScoringJob")}
    spec = root["$defs"]
    assert {f"spec.{name}" for name in spec["trainingSpec"]["properties"]} <= training
    assert {f"spec.{name}" for name in spec["scoringSpec"]["properties"]} <= scoring
    assert {"spec.capacity.retry.backoff", "spec.inputs[].fileSystem.access"} <= training
    assert {"spec.maxConcurrentTransforms", "spec.maxPayloadMB", "spec.environment"} <= scoring
    assert "| `kind` | string | required |" in table("ScoringJob") and "`ScoringJob` |" in table("ScoringJob")


def test_a_stale_page_is_caught_and_rewritten(tmp_path: Path) -> None:
    fresh = PAGE.read_text()
    stale = tmp_path / "manifests.md"
    stale.write_text(fresh.replace("| `spec.maxPayloadMB` | integer |", "| `spec.maxPayloadMB` | string |"))
    assert main(["--check", "--page", str(stale)]) == 1
    assert main(["--page", str(stale)]) == 0
    assert stale.read_text() == fresh


def test_a_page_without_a_kind_s_block_is_refused() -> None:
    page = f"{begin('TrainingJob')}\n{end('TrainingJob')}\n"
    with pytest.raises(ValueError, match="no block for ScoringJob"):
        refreshed(page)


def test_a_field_without_a_description_stops_the_generation() -> None:
    root = copy.deepcopy(schema())
    del root["$defs"]["scoringSpec"]["properties"]["maxPayloadMB"]["description"]
    with pytest.raises(MissingDescription, match=r"spec\.maxPayloadMB"):
        rows("ScoringJob", root)


def test_a_description_s_default_goes_to_the_required_column_and_cells_stay_one_cell() -> None:
    by_path = {row.path: row for row in rows("TrainingJob")}
    assert by_path["spec.capacity.maxRuntime"].required == "default: 1d"
    assert "Default:" not in by_path["spec.capacity.maxRuntime"].what
    assert by_path["spec.inputs[].s3Uri"].required == "either `s3Uri` or `fileSystem`"
    environment = by_path["spec.environment"].markdown()
    assert environment.count(" | ") == 4 and "\\_" in environment and "<" not in environment


def _defaults(kind: str) -> dict[str, str]:
    return {
        row.path: row.required.removeprefix("default: ") for row in rows(kind) if row.required.startswith("default")
    }


@pytest.mark.parametrize(("kind", "document"), [("TrainingJob", TRAINING), ("ScoringJob", SCORING)])
def test_each_default_the_table_states_is_the_one_the_validator_applies(kind: str, document: dict[str, Any]) -> None:
    result = validate_document(copy.deepcopy(document), now=NOW)
    assert result.valid, result.errors
    spec = result.spec if kind == "TrainingJob" else result.scoring
    stated = _defaults(kind)
    assert set(stated) - set(APPLIED) - IN_WORDS == set(), "a new default: check it in APPLIED or list it in IN_WORDS"
    for path, value in stated.items():
        if path in APPLIED:
            applied, parse = APPLIED[path]
            assert applied(spec) == parse(value), (path, value)
