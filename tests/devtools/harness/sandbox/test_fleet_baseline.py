"""The benchmark's baseline: the fleet as plain Batch runs it (no Spotline workflow at all)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from builders import example_text
from spotline_dev.harness.sandbox.fleet_baseline import run_plain_batch
from spotline_dev.harness.sandbox.scenario import load_scenario


def test_plain_batch_waits_out_a_capacity_gap_on_spot_and_misses_the_deadline_spotline_keeps(tmp_path: Path) -> None:
    manifest = tmp_path / "hotfix.yaml"
    manifest.write_text(
        example_text(("expectedDuration: 8h", "expectedDuration: 4h"), ("maxWait: 36h", "maxWait: 48h"))
    )
    scenario = tmp_path / "gap.yaml"
    scenario.write_text(
        'name: gap\nstart: "2026-12-01T00:00:00Z"\nqueue: {capacity: {ml.g5.2xlarge: 2}}\n'
        f"submissions: [{{manifest: {manifest.name}, at: 0h, deadlineAfter: 8h}}]\n"
        "spot: {startDelay: 5m, capacityGaps: [{from: 1h, to: 10h}]}\n"
    )

    plain = run_plain_batch(load_scenario(scenario))

    (run,) = plain["executions"]
    assert run["status"] == "SUCCEEDED"  # it waited on spot through the gap: Batch has no deadline
    assert run["deadlineMet"] is False
    assert datetime.fromisoformat(run["deadline"]) == datetime.fromisoformat("2026-12-01T08:00:00Z")
    assert plain["fleet"]["deadlinesMissed"] == 1 and plain["leftRunning"] == []
    assert 0 < run["costUsd"] < run["onDemandCostUsd"]  # spot, billed at the spot discount
