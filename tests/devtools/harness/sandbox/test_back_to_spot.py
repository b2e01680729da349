"""Issue 48: back to spot. A padded deadline retrain (8h declared, 6h24m really) with no spot for
its first hour moves to on-demand; its first checkpoint there measures the real pace and frees
slack, and once the fleet's record sees spot of its type again (another team's job starts on it)
it goes back to spot from its last checkpoint, in time and at a spot bill. Figures are reconciled
with the stand-in's ledger."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spotline_dev.cli.entry import main as cli_main
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.replay import run_scenario
from spotline_dev.harness.sandbox.scenario import load_scenario
from tests.ledger_checks import assert_reconciled

SCENARIO = PROJECT_ROOT / "examples" / "scenarios" / "back-to-spot.yaml"


def _runs(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    assert cli_main(["sandbox", "--scenario", str(SCENARIO), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["leftRunning"] == []
    return {run["team"]: run for run in summary["executions"]}


def test_a_job_whose_measured_pace_frees_slack_goes_back_to_spot_once_the_fleet_sees_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs = _runs(capsys)
    padded, other = runs["search-ranking"], runs["vision"]
    assert (padded["status"], padded["deadlineMet"]) == ("SUCCEEDED", True)
    assert padded["capacityTiers"] == ["spot", "on-demand", "spot"]
    moves = [(n["type"], n["at"]) for n in padded["notifications"]]
    assert [kind for kind, _ in moves] == ["MovedToOnDemand", "MovedBackToSpot"]
    # Back only after the other job was seen training on spot (spot returns an hour in, it starts
    # after a 5-minute start-up and its download), not while spot was still gone.
    assert moves[1][1] > "2026-12-01T07:05:00Z"
    assert other["capacityTiers"] == ["spot"] and other["status"] == "SUCCEEDED"
    # Most of the work ran on spot: about half an hour on on-demand, against 6h24m one way.
    assert padded["savingsPercent"] > 50
    assert padded["lostWorkSeconds"] < 60  # each stop saved a checkpoint first


def test_figures_of_a_return_to_spot_match_the_ledger_and_the_timeline_says_what_was_stopped() -> None:
    summary = run_scenario(load_scenario(SCENARIO))
    for run in summary["executions"]:
        assert_reconciled(run)
    padded = next(run for run in summary["executions"] if run["team"] == "search-ranking")
    stops = [line.split("StopSpotJob", 1)[1].strip() for line in padded["timeline"] if "StopSpotJob" in line]
    assert [stop.split(": ", 2)[:2] for stop in stops] == [
        ["stopped the spot job", "moving to on-demand"],
        ["stopped the on-demand job", "moving to spot again"],
    ]
    assert [move.kind for move in padded["story"].moves] == ["on-demand", "back-to-spot"]
