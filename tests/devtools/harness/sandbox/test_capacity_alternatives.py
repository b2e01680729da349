"""Issue 29: capacity where it is. A job with instance-type alternatives meets its deadline when
its on-demand type is short (InstancePreferences), moves to an alternative's spot before spending
on-demand, and, when no capacity exists anywhere, tells on-call (DeadlineAtRisk) while the
deadline is ahead, ends CapacityUnavailable and leaves nothing running. Each figure of these
scenarios is reconciled with the stand-in's own ledger by test_example_scenarios.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spotline_dev.cli.entry import main as cli_main
from spotline_dev.exit_codes import EXIT_NOT_SUCCEEDED
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.replay import run_scenario
from spotline_dev.harness.sandbox.runs import weather_of
from spotline_dev.harness.sandbox.scenario import ScenarioError, load_scenario

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


def test_a_deadline_at_risk_falls_back_onto_a_training_plan_not_paid_on_demand(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = replay("falls-back-onto-a-plan", capsys)
    assert (run["status"], run["deadlineMet"], run["onDemandFallback"]) == ("SUCCEEDED", True, False)
    assert run["capacityTiers"] == ["spot", "training-plan"]
    assert [n["type"] for n in run["notifications"]] == ["MovedToTrainingPlan"]
    # The plan's hours show apart; they cost nothing more (paid up front), and no saving is claimed.
    assert run["trainingPlanSeconds"] == run["billableSeconds"] > 0
    assert (run["costUsd"], run["savingsPercent"]) == (0.0, None)


def test_auto_never_falls_back_onto_another_teams_plan_or_an_untagged_one(tmp_path: Path) -> None:
    """Issue 45: "capacity.trainingPlan: auto takes another team's plan when a pattern is broad". The
    sandbox's pattern is every plan of the account (`training-plan/*`); only the tag tells whose a plan is."""
    scenario = yaml.safe_load((SCENARIOS / "falls-back-onto-a-plan.yaml").read_text())
    (plan,) = scenario["trainingPlans"]
    scenario["trainingPlans"] = [
        plan | {"name": "recsys-p4d", "tags": {"spotline:team": "recsys"}},
        plan | {"name": "untagged-p4d", "tags": {}},
    ]
    scenario["manifests"] = [str(SCENARIOS / "manifests" / "deadline-with-a-plan.yaml")]
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    (run,) = run_scenario(load_scenario(tmp_path / "scenario.yaml"))["executions"]
    assert run["status"] == "SUCCEEDED"
    assert run["capacityTiers"] == ["spot", "on-demand"] and run["trainingPlanSeconds"] == 0


def test_scenario_instance_types_override_only_what_they_name() -> None:
    weather = weather_of(load_scenario(SCENARIOS / "on-demand-short.yaml"))
    g5 = weather.for_type("ml.g5.2xlarge")
    assert g5 is not weather and len(g5.on_demand_gaps) == 1
    assert g5.capacity_gaps == weather.capacity_gaps  # spot: the default's
    assert g5.on_demand_start_delay == weather.on_demand_start_delay == 480
    assert weather.for_type("ml.g6.2xlarge") is weather and weather.on_demand_gaps == []


def test_a_plans_end_is_handled_like_an_interruption_not_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    run = replay("plan-ends-mid-run", capsys, EXIT_NOT_SUCCEEDED)
    # Late (the job needed 8 h, not the 6 declared), but trained to the end: resumed on on-demand.
    assert (run["status"], run["error"], run["finishedAt"] is not None) == ("FAILED", "DeadlineMissed", True)
    assert run["capacityTiers"] == ["spot", "training-plan", "on-demand"]
    kinds = [n["type"] for n in run["notifications"]]
    assert kinds == ["MovedToTrainingPlan", "DeadlineAtRisk", "MovedToOnDemand", "DeadlineMissed"]
    assert 0 < run["trainingPlanSeconds"] < run["billableSeconds"]
    assert run["lostWorkSeconds"] <= 15 * 60  # back to the last checkpoint at most


PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"


@pytest.mark.parametrize(
    ("plan", "plans", "words"),
    [
        (f"{PLAN}nowhere", [], "training-plan/nowhere does not exist"),
        (f"{PLAN}p5", [{"name": "p5", "instanceType": "ml.p5.48xlarge"}], "reserves ml.p5.48xlarge, not one"),
        (
            f"{PLAN}recsys-p4d",
            [{"name": "recsys-p4d", "tags": {"spotline:team": "recsys"}}],
            "training plan recsys-p4d is not tagged spotline:team=search-ranking (it is tagged spotline:team=recsys: "
            "team recsys's)",
        ),
        (f"{PLAN}untagged", [{"name": "untagged", "tags": {}}], "(it has no such tag)"),
    ],
)
def test_a_named_plan_that_cannot_serve_the_job_is_refused_naming_the_field(
    tmp_path: Path, plan: str, plans: list[dict[str, Any]], words: str
) -> None:
    manifest = yaml.safe_load((SCENARIOS / "manifests" / "deadline-with-a-plan.yaml").read_text())
    manifest["spec"]["capacity"]["trainingPlan"] = plan
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(manifest))
    defaults = {
        "instanceType": "ml.p4d.24xlarge",
        "instances": 1,
        "from": "0s",
        "to": "3d",
        "tags": {"spotline:team": "search-ranking"},  # the team's, unless the case says otherwise
    }
    scenario = {
        "name": "named-plan",
        "start": "2026-12-01T06:00:00Z",
        "manifests": ["job.yaml"],
        "trainingPlans": [defaults | p for p in plans],
    }
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    (run,) = run_scenario(load_scenario(tmp_path / "scenario.yaml"))["executions"]
    assert run["error"] == "ResourceValidationFailed"
    assert "spec.capacity.trainingPlan" in run["cause"] and words in run["cause"], run["cause"]


def test_a_scenario_plan_must_be_of_a_type_sagemaker_reserves(tmp_path: Path) -> None:
    scenario = {"trainingPlans": [{"name": "g5", "instanceType": "ml.g5.2xlarge", "instances": 1, "from": 0, "to": 9}]}
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    with pytest.raises(ScenarioError, match=r"trainingPlans\[0\].instanceType: ml.g5.2xlarge is not offered"):
        load_scenario(tmp_path / "scenario.yaml")


def test_a_types_speed_is_declared_until_measured_and_the_policy_plans_with_it(tmp_path: Path) -> None:
    """ml.g6.2xlarge is declared 0.8 as fast as the primary but really runs at half its speed: once
    the job has trained on both, progress.json measures it, and the deadline policy plans the
    fallback with the measured speed."""
    scenario = yaml.safe_load((SCENARIOS / "spot-on-an-alternative.yaml").read_text())
    scenario["manifests"] = [str(SCENARIOS / "manifests" / "deadline-with-alternatives.yaml")]
    scenario["spot"].pop("interruptions")
    scenario["instanceTypes"] = {
        "ml.g5.2xlarge": {"spot": {"capacityGaps": [{"from": "2h", "to": "1d"}]}},
        "ml.g6.2xlarge": {"speed": 0.5},
    }
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    (run,) = run_scenario(load_scenario(tmp_path / "scenario.yaml"))["executions"]
    checks = [
        json.loads(event["stateExitedEventDetails"]["output"])["status"]
        for event in run["history"]
        if (event.get("stateExitedEventDetails") or {}).get("name") == "CheckTrainingStatus"
    ]
    first, last = checks[0]["progress"]["speeds"], [c for c in checks if c["progress"].get("step")][-1]
    assert [s["source"] for s in first] == ["declared"] * 3
    speeds = {s["instanceType"]: s for s in last["progress"]["speeds"]}
    assert speeds["ml.g6.2xlarge"]["source"] == "measured"
    assert speeds["ml.g6.2xlarge"]["speed"] == pytest.approx(0.5, abs=0.02)
    assert speeds["ml.g6e.2xlarge"] == {"instanceType": "ml.g6e.2xlarge", "speed": 1.0, "source": "declared"}
    # Half speed on ml.g6.2xlarge cannot make the deadline on spot: the fallback came, on-demand.
    assert run["capacityTiers"][:2] == ["spot", "spot"] and run["capacityTiers"][-1] == "on-demand"
    assert run["deadlineMet"] is True
