"""Issue 50: the all-on-demand baseline of a run is the job on its manifest's primary type
(spec.resources.instanceType), its work there as the manifest declares it, wherever the run ended:
the same job priced the same whether it finished on its primary or on an alternative, and the
output says which type the baseline is priced at. Each run is reconciled with the stand-in's
ledger too (ledger_checks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from ledger_checks import assert_reconciled

from spotline.core.billing.cost import cost_usd
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.replay import render_text, run_scenario
from spotline_dev.harness.sandbox.scenario import load_scenario

MANIFEST = PROJECT_ROOT / "examples" / "scenarios" / "manifests" / "deadline-with-alternatives.yaml"
PRIMARY = "ml.g5.2xlarge"


def _replay(folder: Path, name: str, **weather: Any) -> tuple[dict[str, Any], str]:
    """The 8-hour job of deadline-with-alternatives.yaml (ml.g6.2xlarge declared, and really, 0.8 as
    fast as ml.g5.2xlarge), interrupted on spot after 1h04m30s of training."""
    scenario = {
        "name": name,
        "start": "2026-12-01T06:00:00Z",
        "manifests": [str(MANIFEST)],
        "spot": {"startDelay": "5m", "interruptions": ["1h4m30s"]},
        "onDemand": {"startDelay": "8m"},
        "instanceTypes": {"ml.g6.2xlarge": {"speed": 0.8}, **weather},
    }
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(scenario))
    summary = run_scenario(load_scenario(folder / f"{name}.yaml"))
    (run,) = summary["executions"]
    return run, render_text(summary, 0.0)


def test_the_same_job_has_the_same_baseline_on_its_primary_wherever_it_ended(tmp_path: Path) -> None:
    stayed, stayed_text = _replay(tmp_path, "stays-on-g5")
    # Spot ml.g5.2xlarge is gone after the interruption: the job moves to spot ml.g6.2xlarge and
    # trains the rest there, (28,800 - 3,600) / 0.8 = 31,500 s, which is 25,200 s of ml.g5.2xlarge's.
    moved, moved_text = _replay(
        tmp_path, "moves-to-g6", **{PRIMARY: {"spot": {"capacityGaps": [{"from": "1h11m", "to": "1d"}]}}}
    )

    assert stayed["instanceTypes"] == [PRIMARY] and stayed["status"] == "SUCCEEDED"  # restarted in its job
    assert moved["instanceTypes"] == [PRIMARY, "ml.g6.2xlarge"] and moved["status"] == "SUCCEEDED"
    # Both: 3,600 + 25,200 = 28,800 s of the primary's work, one download (60 s) and the upload (60 s).
    assert stayed["onDemandSeconds"] == moved["onDemandSeconds"] == 28_800 + 60 + 60
    assert stayed["onDemandCostUsd"] == moved["onDemandCostUsd"] == cost_usd(PRIMARY, 1, 28_920, region="us-east-1")
    baseline = f"all on-demand on {PRIMARY}"
    assert baseline in stayed_text and baseline in moved_text
    assert_reconciled(stayed)
    assert_reconciled(moved)
