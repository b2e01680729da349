"""Scenarios through the whole system (real state machine, handlers, stand-in, virtual clock)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from builders import example_text
from spotline.core.manifest.loader import MAX_BYTES
from spotline.core.manifest.manifest import validate_bytes
from spotline_dev.cli.entry import main as cli_main
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.replay import EXECUTION_FIELDS, Scenario, ScenarioError, load_scenario, run_scenario

START = datetime(2026, 12, 1, tzinfo=UTC)
HOUR = 3600.0
CHECKPOINT_INTERVAL = 15 * 60


def _manifest(tmp_path: Path, **replacements: str) -> Path:
    path = tmp_path / "ranker.yaml"
    path.write_text(example_text(*replacements.items()))
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
    # Interrupted every 25 minutes of training with a checkpoint every 15: each loses 10 minutes.
    # (Interruptions on the checkpoints, every 30 minutes, lose nothing: since issue 48 the margin
    # for a well-measured pace is small enough that such a job finishes on spot in time.)
    run = _run(manifest, interruptions=[h * 25 * 60 for h in range(1, 48)], duration=8 * HOUR)

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
    scenario = load_scenario(Path(__file__).resolve().parents[4] / "examples" / "scenarios" / "missing-image.yaml")
    (run,) = run_scenario(scenario)["executions"]
    assert (run["status"], run["error"]) == ("FAILED", "ResourceValidationFailed")
    assert "spec.image" in run["cause"]


def test_default_scenario_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["sandbox", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scenario"] == "interruptions-and-a-capacity-gap"
    runs = summary["executions"]
    assert [r["status"] for r in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert set(summary) == {"scenario", "account", "executions", "leftRunning", "fleet", "wallSeconds"}
    # Each manifest ran in a stack of its own: there is no capacity they shared to be used 149 % of.
    assert (summary["fleet"]["capacityInstances"], summary["fleet"]["capacityUtilization"]) == (None, None)
    assert summary["account"] == [
        "account 123456789012 in us-east-1, SageMaker roles under role/spotline/ (the manifest)"
    ]
    assert set(runs[0]) == {
        "name",
        "team",
        "manifest",
        "status",
        "error",
        "attempts",
        "spotInterruptions",
        "clusterRepairs",
        "onDemandFallback",
        "deadline",
        "finishedAt",
        "deadlineMet",
        "trainingEndedAt",
        "executionEndedAt",
        "trainingSeconds",
        "billableSeconds",
        "lostWorkSeconds",
        "instanceType",
        "instanceTypes",
        "capacityTiers",
        "notifications",
        "costUsd",
        "costUnknown",
        "costByRegion",
        "onDemandCostUsd",
        "onDemandSeconds",
        "savingsPercent",
        "trainingPlanSeconds",
        "regions",
        "zones",
        "checkpointCopies",
        "billingSettled",
        "prices",
        "stateTransitions",
        "historyEvents",
        "maxStateBytes",
    }
    assert all(0 < r["maxStateBytes"] < 16 * 1024 for r in runs)
    assert all(r["spotInterruptions"] >= 1 and r["deadlineMet"] for r in runs)
    assert [r["onDemandFallback"] for r in runs] == [False, True]
    # Each attempt's type and capacity tier, and what on-call received (the fallback's message).
    assert [r["capacityTiers"][-1] for r in runs] == ["spot", "on-demand"]
    assert all(set(r["instanceTypes"]) == {r["instanceType"]} for r in runs)
    assert [[n["type"] for n in r["notifications"]] for r in runs] == [[], ["MovedToOnDemand"]]
    # Deadlines are judged at the training's end (its TrainingEndTime), not when the execution
    # noticed; every training completed, nothing is left running.
    for run in runs:
        assert run["finishedAt"] == run["trainingEndedAt"]
        ended = datetime.fromisoformat(run["executionEndedAt"]) - datetime.fromisoformat(run["trainingEndedAt"])
        assert 0 <= ended.total_seconds() <= 60  # the end's event woke the execution at once
        assert run["deadlineMet"] == (
            datetime.fromisoformat(run["finishedAt"]) <= datetime.fromisoformat(run["deadline"])
        )
    assert summary["leftRunning"] == []


def _largest_manifest(tmp_path: Path) -> Path:
    """The largest manifest `spotline validate` accepts: the longest team, name, owner and output
    URI (what the state's summary shows), as many 2,400-character hyperparameters and then
    100-character environment values as AWS Batch's 10 KiB service request payload still takes,
    and comments up to the 256 KiB file limit. Spot-only, up to 10 spot attempts, 6 h maxWait
    each, no deadline."""
    output = "s3://search-ranking-models/" + "/".join(["o" * 99] * 8) + "/"
    text = f"""apiVersion: spotline/v1
kind: TrainingJob
metadata:
  team: search-ranking-platform1
  name: ranker-{"x" * 32}9
  owner: {"a" * 64}@{"b" * 185}.com
spec:
  image: 123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11.28
  roleArn: arn:aws:iam::123456789012:role/spotline/ranker-training
  resources: {{instanceType: ml.g5.2xlarge}}
  inputs: [{{name: train, s3Uri: "s3://search-ranking-data/train/"}}]
  output: {{s3Uri: "{output}"}}
  checkpoint: {{s3Uri: "s3://search-ranking-checkpoints/big/"}}
  capacity:
    strategy: spot-only
    maxRuntime: 1h
    maxWait: 6h
    expectedDuration: 10m
    retry: {{maxAttempts: 10, backoff: 1s}}
"""
    for section, entry in (
        ("hyperparameters", "    hp_{:03d}: " + "h" * 2400),
        ("environment", "    ENV_{:02d}: " + "e" * 100),
    ):
        text, entries = f"{text}  {section}:\n", 0
        while validate_bytes(f"{text}{entry.format(entries)}\n".encode(), now=START).valid:
            text, entries = f"{text}{entry.format(entries)}\n", entries + 1
        assert entries > 0, section
    comment = "# " + "c" * 1000 + "\n"
    text += comment * ((MAX_BYTES - len(text.encode())) // len(comment))
    path = tmp_path / "big.yaml"
    path.write_text(text)
    return path


def test_the_largest_valid_manifest_runs_ten_attempts_with_a_small_state(tmp_path: Path) -> None:
    """The spec travels by reference: near 256 KiB of manifest (its spec as large as Batch takes),
    nine spot endings and ten attempts leave every state input and output far below Step
    Functions' 256 KiB limit (which moto does not enforce: this test is what holds it)."""
    manifest = _largest_manifest(tmp_path)
    body = manifest.read_bytes()
    assert 250 * 1024 < len(body) <= MAX_BYTES
    assert validate_bytes(body, now=START).spec is not None
    assert cli_main(["validate", str(manifest)]) == 0
    # No spot capacity for 58 h: each of the first nine attempts runs out of its 6 h maxWait (the
    # ninth ends by ~56 h even with the longest polls and back-offs); the tenth, submitted after
    # 54 h, starts when capacity returns and completes well within its own maxWait.
    run = _run(manifest, capacity_gaps=[(0.0, 58 * HOUR)])

    assert (run["status"], run["error"]) == ("SUCCEEDED", None)
    assert run["attempts"] == 10
    endings = [a.ending for a in run["story"].attempts]
    assert all(e.startswith("ended by spot (spot-wait-exceeded)") for e in endings[:9]), endings
    assert endings[9].startswith("completed")
    assert run["maxStateBytes"] < 16 * 1024, run["maxStateBytes"]  # 9.4 KiB measured


def test_bad_scenarios_name_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("spot: {capacityGaps: [{from: 6h, to: 2h}]}\n")
    with pytest.raises(ScenarioError, match=r"spot.capacityGaps\[0\]"):
        load_scenario(bad)
    bad.write_text("trainig: {duration: 2h}\n")
    with pytest.raises(ScenarioError, match="unknown field"):
        load_scenario(bad)
    assert cli_main(["sandbox", "--scenario", str(bad)]) == 1  # a refused file, as the exit codes say


def test_json_with_explain_adds_each_story_under_explain(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = Path(__file__).resolve().parents[4] / "examples" / "scenarios" / "missing-image.yaml"
    assert cli_main(["sandbox", "--json", "--explain", "--scenario", str(scenario)]) == 3  # it failed
    (run,) = json.loads(capsys.readouterr().out)["executions"]
    story = run.pop("explain")
    assert "explain" not in run and run["error"] == "ResourceValidationFailed"
    assert (story["name"], story["status"]) == (run["name"], "FAILED")
    failure = story["failure"]
    assert (failure["state"], failure["error"]) == ("ResourceValidationFailed", "ResourceValidationFailed")
    assert "spec.image" in failure["cause"]


def test_the_sandbox_modules_leave_the_handlers_logger_unmade_until_their_settings_are_set() -> None:
    """Powertools reads its settings when its Logger and Metrics are made (at import, as in
    Lambda): if the CLI imported `spotline.aws.common.observability` first, every handler would log at
    INFO with no service name, and `make sandbox` and `make bench` would print it all."""
    code = (
        "import sys, spotline_dev.cli.entry, spotline_dev.harness.sandbox.replay, spotline_dev.harness.sandbox.fleet\n"
        "import spotline_dev.harness.sandbox.fleet_baseline\n"
        "print(sorted(m for m in sys.modules if m == 'spotline.aws.common.observability'))"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert shown.stdout.strip() == "[]"


def test_a_scenario_typo_is_an_error_naming_each_field_at_once(tmp_path: Path) -> None:
    """The scenario schema (devtools/spotline_dev/schemas/scenario-v1.schema.json) words errors
    as the manifests' do: the path, the reason, the closest known name."""
    bad = tmp_path / "typo.yaml"
    bad.write_text("spot: {startDelay: 5m, interruption: [2h]}\nmissing: [spec.imge]\ntraining: {duration: -3h}\n")
    with pytest.raises(ScenarioError) as refused:
        load_scenario(bad)
    message = str(refused.value)
    assert "spot.interruption: unknown field (did you mean 'interruptions'?)" in message
    assert "missing[0]: names a resource the account lacks: spec.roleArn, spec.image" in message
    assert "training.duration: must be a duration" in message and "(got '-3h')" in message
    bad.write_text("spot: {on: 3}\nonDemand:\n")  # YAML reads `on` as true: a key that is no string
    with pytest.raises(ScenarioError, match=r"spot\.True: unknown field"):
        load_scenario(bad)


def test_a_failed_run_prints_only_what_the_project_wrote(capfd: pytest.CaptureFixture[str]) -> None:
    """moto's own log (its interpreter logs each Fail state with its internals) stays out."""
    scenario = Path(__file__).resolve().parents[4] / "examples" / "scenarios" / "missing-image.yaml"
    assert cli_main(["sandbox", "--scenario", str(scenario)]) == 3
    out, err = capfd.readouterr()
    assert err == ""
    assert "ResourceValidationFailed" in out
    assert not any(noise in out for noise in ("Exception=", "FailureEventException", "moto"))


def test_getting_started_lists_every_key_of_an_execution_in_the_json_and_no_other() -> None:
    """The key table of docs/getting-started.md is the `--json` contract (`EXECUTION_FIELDS`)."""
    page = (PROJECT_ROOT / "docs" / "getting-started.md").read_text()
    table = page.split("Each\nexecution has these keys:\n", 1)[1].lstrip("\n").split("\n\n", 1)[0]
    documented = {key for row in table.splitlines()[2:] for key in re.findall(r"`(\w+)`", row.split(" | ")[0])}
    assert documented == set(EXECUTION_FIELDS)
