"""Issue 46: a run in two regions. Its cost shows the part that is known (us-east-1's, priced) and
names the part that is not (us-west-2 has no price), and its saving is never us-west-2 priced as
us-east-1. Figures are computed by hand from the scenario's inputs; the run is replayed through
the stand-in's ledger too. Three replays of a region move print the same `--json`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from ledger_checks import assert_reconciled

from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.replay import run_scenario
from spotline_dev.harness.sandbox.scenario import load_scenario

MANIFEST = PROJECT_ROOT / "examples" / "scenarios" / "manifests" / "deadline-across-regions.yaml"
SCENARIO: dict[str, Any] = {
    # The 8-hour job of deadline-across-regions.yaml (ml.g5.2xlarge, checkpoints every 15 minutes) is
    # interrupted on spot at home after 1h04m30s of training; spot at home is gone from 1h11m (before the
    # restart's 5-minute start), while us-west-2 has it: the job moves there from a copy of its checkpoint.
    "name": "two-regions",
    "start": "2026-12-01T06:00:00Z",
    "manifests": [str(MANIFEST)],
    "spot": {"startDelay": "5m", "interruptions": ["1h4m30s"], "capacityGaps": [{"from": "1h11m", "to": "1d"}]},
    "onDemand": {"startDelay": "8m"},
    "regions": {"us-west-2": {"spot": {"startDelay": "5m", "interruptions": [], "capacityGaps": []}}},
}


def test_a_run_in_two_regions_shows_the_known_part_and_names_the_unknown_one(tmp_path: Path) -> None:
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(SCENARIO))
    summary = run_scenario(load_scenario(tmp_path / "scenario.yaml"))
    (run,) = summary["executions"]
    assert (run["status"], run["regions"]) == ("SUCCEEDED", ["us-east-1", "us-west-2"])

    # us-east-1: 60 s download + 3870 s training = 3930 s, billed at the stand-in's spot discount
    # (BillableTimeInSeconds = 0.3 x 3930 = 1179 s), at ml.g5.2xlarge's $1.515/h in us-east-1:
    # 1179 x 1.515 / 3600 = $0.49616 -> 0.4962. The checkpoint copy out of us-east-1 (166 bytes) costs
    # 0.02 $/GiB x 166 / 2^30 = $0.000000003 -> 0.0.
    assert run["costByRegion"] == {"us-east-1": 0.4962, "us-west-2": None}
    # us-west-2 has no price: the whole is unknown, and the JSON names the job and why.
    assert run["costUsd"] is None
    (west,) = [j for j in run["ledger"].entries if j.region == "us-west-2" and j.billed_seconds]
    assert run["costUnknown"] == f"no price for ml.g5.2xlarge in us-west-2: training job(s) {west.training_job}"
    # The baseline is the whole job on-demand at home: 28800 s work + 60 s download + 60 s upload
    # = 28920 s x 1.515 / 3600 = $12.1705; the saving needs us-west-2's part: unknown, not us-west-2
    # priced as us-east-1.
    assert (run["onDemandSeconds"], run["onDemandCostUsd"]) == (28920, 12.1705)
    assert run["savingsPercent"] is None
    assert_reconciled(run)


def test_three_replays_of_a_region_move_print_the_same_json_apart_from_wall_seconds() -> None:
    """Each replay in a process of its own, as a user runs it (the stacks of one process draw their ids
    from seeds that follow one another). The checkpoint copy's seconds were the host's time."""
    scenario = PROJECT_ROOT / "examples" / "scenarios" / "spot-in-another-region.yaml"
    outputs = []
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-m", "spotline_dev.cli.entry", "sandbox", "--scenario", str(scenario), "--json"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary.pop("wallSeconds") > 0
        outputs.append(summary)
    (run,) = outputs[0]["executions"]
    assert run["checkpointCopies"]["count"] == 1  # the region move copied its checkpoint
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]
