"""Issue 29: capacity where it is. A job with instance-type alternatives meets its deadline when
its on-demand type is short (InstancePreferences), moves to an alternative's spot before spending
on-demand, and, when no capacity exists anywhere, tells on-call (DeadlineAtRisk) while the
deadline is ahead, ends CapacityUnavailable and leaves nothing running. Each figure is reconciled
with the stand-in's own ledger."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spotline_dev.cli import main as cli_main
from spotline_dev.exit_codes import EXIT_NOT_SUCCEEDED
from spotline_dev.local.template import PROJECT_ROOT
from tests.ledger_checks import assert_reconciled

SCENARIOS = PROJECT_ROOT / "examples" / "scenarios"


def replay(name: str, capsys: pytest.CaptureFixture[str], exit_code: int = 0) -> dict[str, Any]:
    assert cli_main(["sandbox", "--scenario", str(SCENARIOS / f"{name}.yaml"), "--json"]) == exit_code
    summary = json.loads(capsys.readouterr().out)
    assert summary["leftRunning"] == []
    (run,) = summary["executions"]
    return run  # type: ignore[no-any-return]


def test_on_demand_short_falls_back_onto_the_first_alternative_with_capacity(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = replay("on-demand-short", capsys)
    assert (run["status"], run["deadlineMet"], run["onDemandFallback"]) == ("SUCCEEDED", True, True)
    # The on-demand attempt asked for all three types; ml.g5.2xlarge had no on-demand capacity,
    # and SageMaker selected the next in the list.
    assert run["capacityTiers"][-1] == "on-demand"
    assert run["instanceTypes"][-1] == "ml.g6.2xlarge"
    assert "MovedToOnDemand" in [n["type"] for n in run["notifications"]]
    assert "DeadlineAtRisk" not in [n["type"] for n in run["notifications"]]


def test_spot_moves_to_an_alternative_with_spot_and_spends_no_on_demand(capsys: pytest.CaptureFixture[str]) -> None:
    run = replay("spot-on-an-alternative", capsys)
    assert (run["status"], run["deadlineMet"], run["onDemandFallback"]) == ("SUCCEEDED", True, False)
    assert run["capacityTiers"] == ["spot", "spot"]
    assert run["instanceTypes"] == ["ml.g5.2xlarge", "ml.g6.2xlarge"]
    assert [n["type"] for n in run["notifications"]] == ["MovedToAnotherInstanceType"]
    assert run["savingsPercent"] > 50


def test_no_capacity_anywhere_warns_before_the_deadline_and_ends_named(capsys: pytest.CaptureFixture[str]) -> None:
    run = replay("no-capacity-anywhere", capsys, EXIT_NOT_SUCCEEDED)
    assert (run["status"], run["error"]) == ("FAILED", "CapacityUnavailable")
    kinds = [n["type"] for n in run["notifications"]]
    assert kinds.count("DeadlineAtRisk") == 1
    at_risk = next(n["at"] for n in run["notifications"] if n["type"] == "DeadlineAtRisk")
    assert at_risk < run["deadline"]
    assert kinds[-1] == "CapacityUnavailable"
    assert run["costUsd"] == 0.0  # nothing ever acquired instances
    # Attempts that never got capacity have no selected type.
    assert set(run["capacityTiers"]) == {"spot", "on-demand"}
    on_demand = [t for t, tier in zip(run["instanceTypes"], run["capacityTiers"], strict=True) if tier == "on-demand"]
    assert on_demand and all(t is None for t in on_demand)


@pytest.mark.parametrize("name", ["on-demand-short", "spot-on-an-alternative", "no-capacity-anywhere"])
def test_costs_of_mixed_types_match_the_ledger(name: str) -> None:
    from spotline_dev.sandbox.replay import run_scenario
    from spotline_dev.sandbox.scenario import load_scenario

    summary = run_scenario(load_scenario(SCENARIOS / f"{name}.yaml"))
    for run in summary["executions"]:
        assert_reconciled(run)


def test_scenario_instance_types_override_only_what_they_name() -> None:
    from spotline_dev.sandbox.runs import weather_of
    from spotline_dev.sandbox.scenario import load_scenario

    weather = weather_of(load_scenario(SCENARIOS / "on-demand-short.yaml"))
    g5 = weather.for_type("ml.g5.2xlarge")
    assert g5 is not weather and len(g5.on_demand_gaps) == 1
    assert g5.capacity_gaps == weather.capacity_gaps  # spot: the default's
    assert g5.on_demand_start_delay == weather.on_demand_start_delay == 480
    assert weather.for_type("ml.g6.2xlarge") is weather and weather.on_demand_gaps == []
