"""Every figure the sandbox reports of a generated scenario is the stand-in's ledger, per instance
type and region, and every replay of it prints the same `--json` (but `wallSeconds`).

The 40 scenarios (tests/generated_scenarios.py, one seed each) mix alternatives (spot moving to
another type, on-demand through InstancePreferences), training plans tagged for the team and plans
ending mid-run, region moves, two-instance jobs, spot interruptions and Batch preemptions in a
two-team fleet. test_billing_ledger.py does the same for 20 random single-type scenarios,
test_example_scenarios.py for every example scenario."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from generated_scenarios import KINDS, generated_scenario
from ledger_checks import assert_reconciled, assert_reconciled_by_type_and_region

from spotline_dev.harness.local import stack as local_aws
from spotline_dev.harness.local.handles import REGION
from spotline_dev.harness.sandbox.replay import load_scenario, public_summary, run_scenario
from spotline_dev.harness.standin.sagemaker.ledger import LedgerEntry, ManifestTypes, RunLedger

SEEDS = range(40)
THRICE = {0, 1, 2, 3}  # one of each kind is replayed a third time


def _printed(summary: dict[str, Any]) -> list[str]:
    """What `spotline sandbox --json` prints of the run, without `wallSeconds` (the replay's own
    wall time: the one figure replays do not share)."""
    return json.dumps(public_summary(summary), indent=2).splitlines()


def _exercised(kind: str, summary: dict[str, Any]) -> None:
    """The scenario did what its kind is for (else it reconciles nothing new)."""
    runs = summary["executions"]
    if kind == "alternatives":
        assert any(len({t for t in run["instanceTypes"] if t}) > 1 for run in runs), runs[0]["instanceTypes"]
    elif kind == "plan":
        assert any("training-plan" in run["capacityTiers"] for run in runs), runs[0]["capacityTiers"]
    elif kind == "regions":
        assert any({REGION, "us-west-2"} <= set(run["regions"]) for run in runs), runs[0]["regions"]
    else:
        assert summary["fleet"]["preemptions"] >= 1, summary["fleet"]


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_scenario_reports_what_the_stand_in_billed_and_replays_the_same(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generated = generated_scenario(seed)
    scenario = load_scenario(generated.write(tmp_path))

    def replay() -> dict[str, Any]:  # as in a fresh process: the stacks started so far seed moto's ids
        monkeypatch.setattr(local_aws, "_STACKS_STARTED", itertools.count())
        return run_scenario(scenario)

    summary = replay()

    _exercised(generated.kind, summary)
    assert summary["executions"] and summary["leftRunning"] == []
    for run in summary["executions"]:
        assert_reconciled(run)
        assert_reconciled_by_type_and_region(run)
    printed = _printed(summary)
    for _ in range(2 if seed in THRICE else 1):
        assert _printed(replay()) == printed


def test_the_generated_scenarios_mix_every_feature_the_ledger_covers() -> None:
    generated = [generated_scenario(seed) for seed in SEEDS]
    assert [g.files for g in generated] == [generated_scenario(seed).files for seed in SEEDS]  # seeded: the same files
    scenarios = [yaml.safe_load(g.files["scenario.yaml"]) for g in generated]
    manifests = [
        yaml.safe_load(text)["spec"] for g in generated for name, text in g.files.items() if name != "scenario.yaml"
    ]
    assert {g.kind for g in generated} == set(KINDS)
    assert any(m["resources"].get("alternatives") for m in manifests)
    assert any(m["resources"]["instanceCount"] == 2 for m in manifests)
    assert any(m["capacity"].get("regions") for m in manifests)
    plans = [plan for s in scenarios for plan in s.get("trainingPlans", ())]
    assert plans and all(plan["tags"] == {"spotline:team": "search-ranking"} for plan in plans)
    assert any((s.get("training") or {}).get("duration") for s in scenarios)  # more work than declared: a plan ends
    assert any(s["spot"].get("interruptions") for s in scenarios)
    assert any(s.get("submissions") for s in scenarios)  # a fleet, where Batch preempts


def _entry(name: str, instance_type: str, count: int, billed: int, *, region: str = REGION, **more: Any) -> LedgerEntry:
    fields: dict[str, Any] = {
        "execution": "run",
        "service_job": "run-a1",
        "training_job": name,
        "capacity": "spot",
        "instance_type": instance_type,
        "instance_count": count,
        "ended": True,
        "completed": False,
        "billed_seconds": billed,
        "training_seconds": billed,
        "lost_work_seconds": 0.0,
        "work_seconds": 3600.0,
        "upload_seconds": 60.0,
        "region": region,
    }
    return LedgerEntry(**(fields | more))


def test_a_ledger_splits_a_run_per_instance_type_and_region() -> None:
    """A run on g5 spot at home, then g6 (two instances) on a plan, then g5 spot in us-west-2."""
    ledger = RunLedger(
        (
            _entry("a", "ml.g5.2xlarge", 1, 1200, training_seconds=2400, lost_work_seconds=270.0),
            _entry("b", "ml.g6.2xlarge", 2, 1800, capacity="training-plan"),
            _entry("c", "ml.g5.2xlarge", 1, 600, region="us-west-2", lost_work_seconds=30.0),
            _entry("d", "ml.g5.2xlarge", 1, 2400, region="", completed=True),  # "": the stack's region
        ),
        on_demand_start_delay=480.0,
    )

    parts = ledger.parts(REGION)

    assert list(parts) == [("ml.g5.2xlarge", REGION), ("ml.g6.2xlarge", REGION), ("ml.g5.2xlarge", "us-west-2")]
    home = parts[("ml.g5.2xlarge", REGION)]
    # 1,200 + 2,400 s billed at home; the price table's $1.515 an hour: 3,600 s cost $1.515.
    assert (home.billed_seconds, home.training_seconds, home.lost_work_seconds) == (3600, 4800, 270.0)
    assert home.cost_usd == 1.515
    plan = parts[("ml.g6.2xlarge", REGION)]
    # On the plan: billed, prepaid (no cost), two instances.
    assert (plan.instance_counts, plan.billed_seconds, plan.training_plan_seconds, plan.cost_usd) == (
        (2,),
        1800,
        1800,
        0.0,
    )
    west = parts[("ml.g5.2xlarge", "us-west-2")]
    assert (west.billed_seconds, west.lost_work_seconds, west.cost_usd) == (600, 30.0, None)  # no us-west-2 price


def test_a_ledgers_baseline_is_the_work_kept_on_each_type_at_its_declared_speed_on_the_primary() -> None:
    """Issue 50: 125 of 1,000 steps kept on ml.g5.2xlarge (8 h for the job there), the other 875 on
    ml.g6.2xlarge (10 h for the job there, declared 0.8 as fast): 3,600 s + 31,500 s x 0.8 of the
    primary's work, priced on the primary."""
    ledger = RunLedger(
        (
            _entry("a", "ml.g5.2xlarge", 1, 1200, work_seconds=28800.0, total_steps=1000),
            _entry(
                "b", "ml.g6.2xlarge", 1, 9000, work_seconds=36000.0, total_steps=1000, restored_step=125, completed=True
            ),
        ),
        on_demand_start_delay=480.0,
    )
    primary = ManifestTypes("ml.g5.2xlarge", 1, {"ml.g5.2xlarge": 1.0, "ml.g6.2xlarge": 0.8})

    assert ledger.kept_work_by_type() == {"ml.g5.2xlarge": 3600.0, "ml.g6.2xlarge": 31500.0}
    assert ledger.on_demand_seconds(primary.speeds) == 3600 + 25200 + 60 + 60  # one download, the upload
    assert ledger.on_demand_cost_usd(REGION, primary) == round(1.515 * 28920 / 3600, 4)
