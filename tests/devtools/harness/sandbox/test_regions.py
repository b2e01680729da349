"""Issue 30: regions. A run stays in its home region while its spot attempts may run in a peer
region where the team keeps replicas: with no spot at home, the job moves there from a copy of
its checkpoint and meets its deadline without on-demand; with a replica missing there, it stays
home and says why. Figures are reconciled with every region's stand-in ledger."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import yaml

from spotline.aws.regions import regions
from spotline_dev.cli.entry import main as cli_main
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox import replay as replay_module
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.sandbox.replay import run_scenario
from spotline_dev.harness.sandbox.scenario import ScenarioError, load_scenario
from tests.ledger_checks import assert_reconciled

SCENARIOS = PROJECT_ROOT / "examples" / "scenarios"
MANIFEST = SCENARIOS / "manifests" / "deadline-across-regions.yaml"


def replay(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli_main(["sandbox", "--scenario", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["leftRunning"] == []
    (run,) = summary["executions"]
    return run  # type: ignore[no-any-return]


def test_no_spot_at_home_moves_the_job_to_a_region_with_spot_from_its_copied_checkpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = replay(SCENARIOS / "spot-in-another-region.yaml", capsys)
    assert (run["status"], run["deadlineMet"], run["onDemandFallback"]) == ("SUCCEEDED", True, False)
    assert run["capacityTiers"] == ["spot", "spot"]
    assert run["regions"] == ["us-east-1", "us-west-2"]
    copies = run["checkpointCopies"]
    assert copies["count"] == 1 and copies["bytes"] > 0  # progress.json and the checkpoint beside it
    assert [n["type"] for n in run["notifications"]] == ["MovedToAnotherRegion"]
    # It resumed from the checkpoint: 8h of work and a little lost (and the billed downloads), where
    # starting again from zero in us-west-2 would have trained the 1h14m done at home a second time.
    assert run["lostWorkSeconds"] < 900
    assert run["trainingSeconds"] < 8 * 3600 + 1800


def test_a_missing_replica_keeps_the_job_home_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    run = replay(SCENARIOS / "replica-missing-stays-home.yaml", capsys)
    assert (run["status"], run["deadlineMet"], run["onDemandFallback"]) == ("SUCCEEDED", True, True)
    assert run["regions"] == ["us-east-1", "us-east-1"]
    assert run["checkpointCopies"]["count"] == 0
    summary = run_scenario(load_scenario(SCENARIOS / "replica-missing-stays-home.yaml"))
    (validated,) = [line for line in summary["executions"][0]["timeline"] if "ValidateResources" in line]
    assert "us-west-2 left out: spec.inputs[0].s3Uri: bucket search-ranking-data-us-west-2 does not exist" in validated


def _moves(regions: list[str]) -> int:
    return sum(a != b for a, b in pairwise(regions))


def test_a_job_with_no_spot_in_either_region_does_not_move_back_and_forth(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = replay(SCENARIOS / "no-spot-in-either-region.yaml", capsys)
    assert (run["status"], run["deadlineMet"], run["onDemandFallback"]) == ("SUCCEEDED", True, True)
    regions = run["regions"]  # every attempt's, in order
    assert regions[0] == "us-east-1" and _moves(regions) <= 2


def test_a_job_interrupted_once_where_spot_is_stays_rather_than_go_back_where_there_was_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = replay(SCENARIOS / "interrupted-once-in-another-region.yaml", capsys)
    assert (run["status"], run["deadlineMet"]) == ("SUCCEEDED", True)
    regions = run["regions"]
    assert "us-west-2" in regions
    assert "us-east-1" not in regions[regions.index("us-west-2") :]  # never back to the home without spot


@pytest.mark.parametrize("name", ["spot-in-another-region", "replica-missing-stays-home"])
def test_figures_across_regions_match_every_regions_ledger(name: str) -> None:
    summary = run_scenario(load_scenario(SCENARIOS / f"{name}.yaml"))
    for run in summary["executions"]:
        assert_reconciled(run)


def _scenario(tmp_path: Path, **fields: Any) -> Path:
    manifest = yaml.safe_load(MANIFEST.read_text())
    manifest["spec"]["capacity"]["regions"] = ["us-east-1", "us-east-2", "us-west-2"]
    manifest["spec"]["capacity"]["deadline"] = "2026-12-02T00:00:00Z"
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    scenario = {"name": "unseen", "start": "2026-12-01T09:00:00Z", "manifests": ["m.yaml"], **fields}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return path


def test_an_unseen_scenario_goes_where_spot_is_and_skips_the_region_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Home loses spot 40 minutes in; us-east-2 has none either, us-west-2 has it all day.
    path = _scenario(
        tmp_path,
        spot={"startDelay": "4m", "interruptions": ["40m"], "capacityGaps": [{"from": "40m", "to": "2d"}]},
        regions={
            "us-east-2": {"spot": {"interruptions": [], "capacityGaps": [{"from": "0s", "to": "2d"}]}},
            "us-west-2": {"spot": {"startDelay": "3m", "interruptions": [], "capacityGaps": []}},
        },
    )
    run = replay(path, capsys)
    assert (run["status"], run["deadlineMet"], run["onDemandFallback"]) == ("SUCCEEDED", True, False)
    assert run["regions"][0] == "us-east-1" and run["regions"][-1] == "us-west-2"
    assert run["checkpointCopies"]["count"] >= 1


def test_a_region_missing_names_only_fields_with_replicas(tmp_path: Path) -> None:
    path = _scenario(tmp_path, regions={"us-west-2": {"missing": ["spec.roleArn"]}})
    with pytest.raises(ScenarioError, match=r"regions\.us-west-2\.missing\[0\]"):
        load_scenario(path)


def test_the_getting_started_excerpt_is_a_real_run_of_the_scenario() -> None:
    """`spotline sandbox --scenario spot-in-another-region.yaml` in a process of its own, as a user
    runs it (the stacks of one process draw their ids from seeds that follow one another)."""
    page = (PROJECT_ROOT / "docs" / "getting-started.md").read_text()
    excerpt = re.search(r"```\n(== search-ranking-deadline-across-regions.*?)```", page, re.S)
    assert excerpt, "the regions excerpt moved from docs/getting-started.md"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "spotline_dev.cli.entry",
            "sandbox",
            "--scenario",
            str(SCENARIOS / "spot-in-another-region.yaml"),
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert excerpt.group(1) in done.stdout


def test_a_fleet_places_later_runs_where_the_fleet_saw_spot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs in one stack: the first waits at home and moves; the fleet's record (its sightings)
    places the second straight in us-west-2."""
    manifest = yaml.safe_load(MANIFEST.read_text())
    del manifest["spec"]["capacity"]["deadline"]
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    scenario = {
        "name": "fleet-across-regions",
        "start": "2026-12-01T06:00:00Z",
        "queue": {"capacity": {"ml.g5.2xlarge": 4}},
        "submissions": [{"manifest": "m.yaml", "at": "0h", "every": "3h", "count": 2, "deadlineAfter": "14h"}],
        "spot": {"startDelay": "5m", "capacityGaps": [{"from": "0s", "to": "2d"}]},
        "regions": {"us-west-2": {"spot": {"startDelay": "5m", "capacityGaps": []}}},
    }
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(scenario))
    assert cli_main(["sandbox", "--scenario", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["leftRunning"] == []
    first, second = summary["executions"]
    assert (first["status"], first["deadlineMet"], first["onDemandFallback"]) == ("SUCCEEDED", True, False)
    assert first["regions"] == ["us-east-1", "us-west-2"]
    assert (second["status"], second["deadlineMet"], second["onDemandFallback"]) == ("SUCCEEDED", True, False)
    assert second["regions"] == ["us-west-2"]  # placed by what the fleet saw, no wait at home


def test_a_checkpoint_copy_larger_than_one_invocation_goes_on_in_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two objects per invocation and five in the checkpoint (progress.json and four shards a model
    saved): SubmitTrainingJob fails twice with CheckpointCopyIncomplete, its Retry runs it again at
    once, and the copy goes on where it stopped until the whole checkpoint is in us-west-2."""
    monkeypatch.setattr(regions, "COPY_BATCH_OBJECTS", 2)

    def with_shards(clients: Any, spec: Any, missing: Any = ()) -> None:
        prepare_account(clients, spec, missing)
        bucket, _, prefix = spec.checkpoint_s3_uri.removeprefix("s3://").partition("/")
        for n in range(4):
            clients("s3").put_object(Bucket=bucket, Key=f"{prefix}shard-{n}.pt", Body=b"w" * 100)

    monkeypatch.setattr(replay_module, "prepare_account", with_shards)
    summary = run_scenario(load_scenario(SCENARIOS / "spot-in-another-region.yaml"))
    (run,) = summary["executions"]
    assert (run["status"], run["deadlineMet"], run["regions"]) == ("SUCCEEDED", True, ["us-east-1", "us-west-2"])
    failed = [e["taskFailedEventDetails"] for e in run["history"] if e["type"] == "TaskFailed"]
    assert [f["error"] for f in failed] == ["CheckpointCopyIncomplete"] * 2
    assert "copied 2 objects of s3://search-ranking-checkpoints/ranker-anywhere/ (us-east-1)" in failed[0]["cause"]
    submitted = [
        json.loads(e["stateExitedEventDetails"]["output"])["training"]
        for e in run["history"]
        if e["type"] == "TaskStateExited" and e["stateExitedEventDetails"]["name"] == "SubmitTrainingJob"
    ]
    assert [t["checkpointCopy"]["objects"] if t["checkpointCopy"] else None for t in submitted] == [None, 5]
