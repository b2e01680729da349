"""Issue 46: lost work across instance types. A run that moves to an alternative type (on spot, or
on-demand through InstancePreferences) loses the work since its last checkpoint on the first type,
and none on the second: each type's kept work is in that type's own seconds (progress.json's
`byInstanceType`), never the last type's seconds subtracted from both. Each run is replayed
through the stand-in's ledger too (ledger_checks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from ledger_checks import assert_reconciled

from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.replay import run_scenario
from spotline_dev.harness.sandbox.scenario import load_scenario

MANIFEST = PROJECT_ROOT / "examples" / "scenarios" / "manifests" / "deadline-with-alternatives.yaml"


def _replay(tmp_path: Path, scenario: dict[str, Any]) -> dict[str, Any]:
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    summary = run_scenario(load_scenario(tmp_path / "scenario.yaml"))
    assert summary["leftRunning"] == []
    (run,) = summary["executions"]
    return run  # type: ignore[no-any-return]


def _scenario(name: str, interruption: str, **weather: Any) -> dict[str, Any]:
    """The 8-hour job of deadline-with-alternatives.yaml (checkpoints every 15 minutes), interrupted
    on spot ml.g5.2xlarge after `interruption` of training; ml.g6.2xlarge runs at 0.8 its speed."""
    return {
        "name": name,
        "start": "2026-12-01T06:00:00Z",
        "manifests": [str(MANIFEST)],
        "spot": {"startDelay": "5m", "interruptions": [interruption], **weather.pop("spot", {})},
        "onDemand": {"startDelay": "8m"},
        "instanceTypes": {"ml.g6.2xlarge": {"speed": 0.8}, **weather.pop("instanceTypes", {})},
    }


def test_a_spot_move_to_an_alternative_type_loses_the_work_since_the_last_checkpoint(tmp_path: Path) -> None:
    # The interruption comes after 1h04m30s = 3870 s of training on ml.g5.2xlarge; the last checkpoint
    # (every 15 min = 900 s) was at 4 x 900 = 3600 s: 3870 - 3600 = 270 s lost. Spot ml.g5.2xlarge is gone
    # from 1h11m (before the restart's 5-minute start), so the job moves to spot ml.g6.2xlarge, restores
    # the 3600 s checkpoint and trains the rest, (28800 - 3600) / 0.8 = 31500 s, losing nothing there.
    scenario = _scenario(
        "spot-move-lost-work",
        "1h4m30s",
        instanceTypes={"ml.g5.2xlarge": {"spot": {"capacityGaps": [{"from": "1h11m", "to": "1d"}]}}},
    )
    run = _replay(tmp_path, scenario)

    assert (run["status"], run["capacityTiers"]) == ("SUCCEEDED", ["spot", "spot"])
    assert run["instanceTypes"] == ["ml.g5.2xlarge", "ml.g6.2xlarge"]
    assert run["lostWorkSeconds"] == 270
    # Training time (download + training, no upload for the stopped one): 60 + 3870 on ml.g5.2xlarge,
    # 60 + 31500 + 60 on ml.g6.2xlarge.
    assert run["trainingSeconds"] == 3930 + 31620
    assert_reconciled(run)


def test_an_on_demand_move_through_instance_preferences_loses_the_work_since_the_last_checkpoint(
    tmp_path: Path,
) -> None:
    # The interruption comes after 1h09m30s = 4170 s of training on spot ml.g5.2xlarge; the last checkpoint
    # was at 4 x 900 = 3600 s: 4170 - 3600 = 570 s lost. Spot is gone everywhere from 1h16m, and
    # on-demand ml.g5.2xlarge all day, so the on-demand attempt (InstancePreferences: g5, g6, g6e) gets
    # ml.g6.2xlarge, restores the 3600 s checkpoint and trains (28800 - 3600) / 0.8 = 31500 s there.
    scenario = _scenario(
        "on-demand-move-lost-work",
        "1h9m30s",
        spot={"capacityGaps": [{"from": "1h16m", "to": "1d"}]},
        instanceTypes={"ml.g5.2xlarge": {"onDemand": {"capacityGaps": [{"from": "0s", "to": "1d"}]}}},
    )
    run = _replay(tmp_path, scenario)

    assert (run["status"], run["capacityTiers"][0], run["capacityTiers"][-1]) == ("SUCCEEDED", "spot", "on-demand")
    assert (run["instanceTypes"][0], run["instanceTypes"][-1]) == ("ml.g5.2xlarge", "ml.g6.2xlarge")
    assert run["lostWorkSeconds"] == 570
    # 60 + 4170 on spot ml.g5.2xlarge; the spot attempts on other types never started; 60 + 31500 + 60 on-demand.
    assert run["trainingSeconds"] == 4230 + 31620
    assert_reconciled(run)
