"""Scoring manifests (`kind: ScoringJob`): the schema's shape, the rules it cannot say, the spec
built from them, and the window a night's run is due in."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time
from pathlib import Path
from typing import Any

import pytest
import yaml

from spotline.core.manifest.manifest import validate_document
from spotline.core.scoring.scoring import ScoringWindow

NOW = datetime(2026, 12, 4, 8, tzinfo=UTC)


def _document(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": {"name": "media-recs-ranker-2026-11"},
        "input": {"s3Uri": "s3://media-recs-data/pairs/", "contentType": "text/csv", "records": 40_000_000},
        "output": {"s3Uri": "s3://media-recs-scores/nightly/"},
        "window": {"start": "01:00", "end": "04:00", "timeZone": "Europe/Berlin"},
        "resources": {"instanceType": "ml.c5.2xlarge", "maxInstances": 12},
        "throughput": {"recordsPerSecond": 1500},
        "dependsOn": [{"dataset": "media-pairs-nightly"}],
    }
    return {
        "apiVersion": "spotline/v1",
        "kind": "ScoringJob",
        "metadata": {"team": "media-recs", "name": "nightly-scores"},
        "spec": {k: v for k, v in (base | spec).items() if v is not None},
    }


def _errors(document: dict[str, Any], team: str | None = None) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in validate_document(document, now=NOW, expected_team=team).errors]


def test_a_scoring_manifest_builds_its_spec_and_no_training_spec() -> None:
    result = validate_document(_document(), now=NOW)
    assert (result.errors, result.spec) == ([], None)
    scoring = result.scoring
    assert scoring is not None
    assert (scoring.team, scoring.name, scoring.model.name, scoring.records, scoring.split_type) == (
        "media-recs",
        "nightly-scores",
        "media-recs-ranker-2026-11",
        40_000_000,
        "Line",
    )
    assert (scoring.assemble_with, scoring.headroom_percent, scoring.max_instances) == ("Line", 30, 12)
    assert scoring.window == ScoringWindow(time(1), time(4), "Europe/Berlin")
    assert (scoring.records_per_second, scoring.depends_on) == (1500.0, ("media-pairs-nightly",))


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        (
            {"model": {"name": "m", "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/a:1"}},
            ("spec.model", "names either an existing model (name) or image, artifact and roleArn, not both"),
        ),
        (
            {"deadline": "2026-12-05T04:00:00Z"},
            ("spec", "needs either window (a nightly window) or deadline, not both"),
        ),
        ({"window": None}, ("spec", "needs either window (a nightly window) or deadline, not both")),
        ({"window": {"start": "25:00", "end": "04:00", "timeZone": "UTC"}}, ("spec.window.start", "must be a time")),
        ({"window": {"start": "01:00", "end": "04:00", "timeZone": "Mars/Olympus"}}, ("spec.window.timeZone", "")),
        ({"window": {"start": "01:00", "end": "01:00", "timeZone": "UTC"}}, ("spec.window.end", "must differ")),
        ({"resources": {"instanceType": "ml.p4d.24xlarge", "maxInstances": 2}}, ("spec.resources.instanceType", "")),
        ({"resources": {"instanceType": "ml.c5.2xlarge", "maxInstances": 101}}, ("spec.resources.maxInstances", "")),
        ({"maxPayloadMB": 20, "maxConcurrentTransforms": 6}, ("spec.maxPayloadMB", "over 100 MB")),
        ({"deadline": "2026-12-01T00:00:00Z", "window": None}, ("spec.deadline", "2026-12-01T00:00:00Z has passed")),
        ({"checkpoint": {"s3Uri": "s3://b/"}}, ("spec.checkpoint", "unknown field")),
    ],
)
def test_each_rule_names_its_field(spec: dict[str, Any], error: tuple[str, str]) -> None:
    errors = _errors(_document(**spec))
    assert any(path == error[0] and error[1] in message for path, message in errors), errors


def test_the_rules_a_schema_cannot_say_give_their_reasons() -> None:
    errors = dict(_errors(_document(resources={"instanceType": "ml.p4d.24xlarge", "maxInstances": 2})))
    assert errors["spec.resources.instanceType"].startswith(
        "ml.p4d.24xlarge is not a SageMaker Batch Transform instance type"
    )
    errors = dict(_errors(_document(maxPayloadMB=20, maxConcurrentTransforms=6)))
    assert errors["spec.maxPayloadMB"] == (
        "20 MB x 6 concurrent transforms is over 100 MB (CreateTransformJob: MaxConcurrentTransforms * "
        "MaxPayloadInMB cannot exceed 100 MB)"
    )
    assert _errors(_document(), team="search-ranking")[0][0] == "metadata.team"


def test_the_committed_example_is_valid() -> None:
    from spotline_dev.harness.local.template import PROJECT_ROOT

    document = yaml.safe_load((PROJECT_ROOT / "examples" / "scoring" / "nightly-scores.yaml").read_text())
    assert _errors(document) == []


BERLIN = ScoringWindow(time(1), time(4), "Europe/Berlin")  # 00:00-03:00 UTC in winter


@pytest.mark.parametrize(
    ("ready", "opens", "closes"),
    [
        ("2026-12-04T23:30:00+00:00", "2026-12-05T00:00:00+00:00", "2026-12-05T03:00:00+00:00"),  # waits to open
        ("2026-12-05T01:10:00+00:00", "2026-12-05T00:00:00+00:00", "2026-12-05T03:00:00+00:00"),  # inside
        ("2026-12-05T04:00:00+00:00", "2026-12-05T00:00:00+00:00", "2026-12-05T03:00:00+00:00"),  # late: nearer
        ("2026-12-05T17:00:00+00:00", "2026-12-06T00:00:00+00:00", "2026-12-06T03:00:00+00:00"),  # next night's
    ],
)
def test_a_nights_data_is_due_in_the_nearer_window(ready: str, opens: str, closes: str) -> None:
    assert BERLIN.around(datetime.fromisoformat(ready)) == (
        datetime.fromisoformat(opens),
        datetime.fromisoformat(closes),
    )


def test_a_window_keeps_its_local_times_across_midnight_and_daylight_saving() -> None:
    # 29 March 2026: Berlin skips 02:00-03:00, so 01:00-04:00 local is two hours (00:00-02:00 UTC).
    opens, closes = BERLIN.around(datetime(2026, 3, 29, 0, 30, tzinfo=UTC))
    assert (opens, closes) == (datetime(2026, 3, 29, 0, tzinfo=UTC), datetime(2026, 3, 29, 2, tzinfo=UTC))
    late = ScoringWindow(time(22), time(2), "UTC")
    assert late.around(datetime(2026, 12, 4, 23, tzinfo=UTC)) == (
        datetime(2026, 12, 4, 22, tzinfo=UTC),
        datetime(2026, 12, 5, 2, tzinfo=UTC),
    )


def test_a_run_starts_when_its_data_is_ready_but_not_before_its_window_opens() -> None:
    result = validate_document(_document(), now=NOW)
    assert result.scoring is not None
    start, due = result.scoring.due(datetime(2026, 12, 4, 23, 30, tzinfo=UTC))
    assert (start, due) == (datetime(2026, 12, 5, 0, tzinfo=UTC), datetime(2026, 12, 5, 3, tzinfo=UTC))
    by_deadline = validate_document(_document(window=None, deadline="2026-12-05T04:00:00Z"), now=NOW).scoring
    assert by_deadline is not None
    assert by_deadline.due(NOW) == (NOW, datetime(2026, 12, 5, 4, tzinfo=UTC))


@pytest.mark.parametrize(("count", "valid"), [(16, True), (17, False)])
def test_spotline_validate_holds_a_scoring_environment_to_create_transform_jobs_16(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], count: int, valid: bool
) -> None:
    # botocore's sagemaker model: CreateTransformJob's Environment is a TransformEnvironmentMap, "max": 16
    # (a training job's EnvironmentMap takes 100): a 17th variable fails the night at its first shard.
    from spotline_dev.cli.entry import main as cli_main

    limit = "CreateTransformJob takes at most 16 environment variables"
    document = _document(environment={f"VAR_{i}": str(i) for i in range(count)})
    manifest = tmp_path / "scores.json"
    manifest.write_text(json.dumps(document))
    assert cli_main(["validate", "--json", "--now", "2026-12-04T08:00:00Z", str(manifest)]) == (0 if valid else 1)
    (report,) = json.loads(capsys.readouterr().out)
    expected = [] if valid else [("spec.environment", f"allows at most 16 entries, got {count}: {limit}")]
    assert [(e["path"], e["message"]) for e in report["errors"]] == expected


# --- issue 50: a scoring manifest's errors read like a training manifest's ----------------------


def test_a_misspelt_field_comes_first_and_no_error_dumps_the_spec() -> None:
    # `deadlin` for `deadline` (and no window): the typo is the cause of the missing choice, so it
    # is listed first, as for a training manifest; the choice says which fields the spec has.
    document = _document(window=None, deadlin="2026-12-05T03:00:00Z")
    errors = _errors(document)
    assert errors[0] == (
        "spec.deadlin",
        "unknown field (did you mean 'deadline'?); allowed here: deadline, dependsOn, environment, headroom, input, "
        "maxConcurrentTransforms, maxPayloadMB, model, output, resources, throughput, window",
    )
    assert errors[1] == (
        "spec",
        "needs either window (a nightly window) or deadline, not both (has none of window, deadline)",
    )
    parts = {"image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:1", "artefact": "s3://m/model.tar.gz"}
    errors = _errors(_document(model=parts))
    assert [path for path, _ in errors] == ["spec.model.artefact", "spec.model"]
    assert errors[1][1].endswith("not both (has image)")
    assert not any("{" in message for _, message in errors)


def test_a_typo_in_an_instance_type_or_a_time_zone_gets_the_closest_names() -> None:
    errors = dict(_errors(_document(resources={"instanceType": "ml.c5.2xlarg", "maxInstances": 2})))
    assert errors["spec.resources.instanceType"].endswith("; closest: ml.c5.2xlarge, ml.c5.xlarge, ml.m5.2xlarge")
    errors = dict(_errors(_document(window={"start": "01:00", "end": "04:00", "timeZone": "Europe/Berln"})))
    assert errors["spec.window.timeZone"].startswith("Europe/Berln is not an IANA time zone; closest: Europe/Berlin")
