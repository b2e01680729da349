"""Scenarios through the whole system (real state machine, handlers, stand-in, virtual clock)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLE_MANIFEST
from spotline_dev.cli import main as cli_main
from spotline_dev.sandbox import Scenario, ScenarioError, load_scenario, run_scenario

START = datetime(2026, 12, 1, tzinfo=UTC)
HOUR = 3600.0
CHECKPOINT_INTERVAL = 15 * 60


def _manifest(tmp_path: Path, **replacements: str) -> Path:
    text = EXAMPLE_MANIFEST.read_text()
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "ranker.yaml"
    path.write_text(text)
    return path


def _run(manifest: Path, **weather: Any) -> dict[str, Any]:
    (run,) = run_scenario(Scenario(name="t", start=START, manifests=[manifest], **weather))["executions"]
    return run  # type: ignore[no-any-return]


def test_many_interruptions_keep_progress_across_restarts(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, **{'deadline: "2026-12-02T06:00:00Z"': "# no deadline"})
    run = _run(manifest, interruptions=[0.8 * HOUR, 1.9 * HOUR, 3.2 * HOUR, 4.4 * HOUR], duration=6 * HOUR)

    assert (run["status"], run["error"]) == ("SUCCEEDED", None)
    assert run["attempts"] == 1
    assert run["spotInterruptions"] == 4
    assert 0 < run["lostWorkSeconds"] <= 4 * CHECKPOINT_INTERVAL
    # Work is kept: billed training time is the job, what interruptions threw away, and the
    # start-ups (SageMaker counts Downloading as training time), never a restart from zero.
    startups = (1 + run["spotInterruptions"]) * 300
    assert run["trainingSeconds"] <= 6 * HOUR + run["lostWorkSeconds"] + startups + 60
    assert run["billableSeconds"] < run["trainingSeconds"]
    assert run["costUsd"] < run["onDemandCostUsd"]


def test_long_capacity_gap_moves_spot_first_to_on_demand(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, **{"maxRuntime: 30h": "maxRuntime: 10h", "maxWait: 36h": "maxWait: 12h"})
    run = _run(manifest, capacity_gaps=[(1 * HOUR, 300 * HOUR)], duration=8 * HOUR)

    assert (run["status"], run["error"]) == ("SUCCEEDED", None)
    assert run["onDemandFallback"] is True
    assert run["deadlineMet"] is True
    assert run["attempts"] >= 2


def test_long_capacity_gap_exhausts_spot_only(tmp_path: Path) -> None:
    manifest = _manifest(
        tmp_path,
        **{
            "strategy: spot-first": "strategy: spot-only",
            "maxRuntime: 30h": "maxRuntime: 10h",
            "maxWait: 36h": "maxWait: 12h",
            'deadline: "2026-12-02T06:00:00Z"': "# no deadline",
        },
    )
    run = _run(manifest, capacity_gaps=[(1 * HOUR, 300 * HOUR)], duration=8 * HOUR)

    assert (run["status"], run["error"]) == ("FAILED", "SpotCapacityExhausted")
    assert run["attempts"] == 3  # retry.maxAttempts in the manifest
    assert run["onDemandFallback"] is False


def test_tight_deadline_under_frequent_interruptions_is_met_on_demand(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, **{'deadline: "2026-12-02T06:00:00Z"': 'deadline: "2026-12-01T10:00:00Z"'})
    run = _run(manifest, interruptions=[h * HOUR / 2 for h in range(1, 40)], duration=8 * HOUR)

    assert (run["status"], run["error"]) == ("SUCCEEDED", None)
    assert run["onDemandFallback"] is True
    assert run["deadlineMet"] is True
    assert datetime.fromisoformat(run["finishedAt"]) <= datetime.fromisoformat(run["deadline"])


def test_permanent_training_error_fails_once_without_retries(tmp_path: Path) -> None:
    run = _run(_manifest(tmp_path), fail_after=1 * HOUR, duration=8 * HOUR)
    assert (run["status"], run["error"]) == ("FAILED", "TrainingFailed")
    assert run["attempts"] == 1
    assert run["onDemandFallback"] is False


def test_a_scenario_can_declare_a_resource_missing() -> None:
    scenario = load_scenario(Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "missing-image.yaml")
    (run,) = run_scenario(scenario)["executions"]
    assert (run["status"], run["error"]) == ("FAILED", "ResourceValidationFailed")
    assert "spec.image" in run["cause"]


def test_default_scenario_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["sandbox", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scenario"] == "interruptions-and-a-capacity-gap"
    runs = summary["executions"]
    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert set(runs[0]) == {
        "name",
        "manifest",
        "status",
        "error",
        "attempts",
        "spotInterruptions",
        "onDemandFallback",
        "deadline",
        "finishedAt",
        "deadlineMet",
        "trainingSeconds",
        "billableSeconds",
        "lostWorkSeconds",
        "costUsd",
        "onDemandCostUsd",
        "stateTransitions",
        "historyEvents",
    }
    assert all(r["spotInterruptions"] >= 1 and r["deadlineMet"] for r in runs)
    assert [r["onDemandFallback"] for r in runs] == [False, True]


def test_bad_scenarios_name_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("spot: {capacityGaps: [{from: 6h, to: 2h}]}\n")
    with pytest.raises(ScenarioError, match=r"spot.capacityGaps\[0\]"):
        load_scenario(bad)
    bad.write_text("trainig: {duration: 2h}\n")
    with pytest.raises(ScenarioError, match="unknown field"):
        load_scenario(bad)
    assert cli_main(["sandbox", "--scenario", str(bad)]) == 2


def test_json_with_explain_adds_each_story_under_explain(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "missing-image.yaml"
    assert cli_main(["sandbox", "--json", "--explain", "--scenario", str(scenario)]) == 0
    (run,) = json.loads(capsys.readouterr().out)["executions"]
    story = run.pop("explain")
    assert "explain" not in run and run["error"] == "ResourceValidationFailed"
    assert (story["name"], story["status"]) == (run["name"], "FAILED")
    failure = story["failure"]
    assert (failure["state"], failure["error"]) == ("ResourceValidationFailed", "ResourceValidationFailed")
    assert "spec.image" in failure["cause"]
