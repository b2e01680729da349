"""Issue 46: DeadlineAtRisk pages only when the deadline is really out of reach. While a job trains,
the work left is the work left at the last checkpoint less what it has trained since at the pace
measured so far (an estimate, and the page says how sure it is); what a restart would lose is still
counted from the last checkpoint.

Every scenario below runs one on-demand job alone. The stand-in's timeline, from the scenario's
numbers: uploaded at 06:00:00, Batch starts it after its 30 s queue delay; the 8 m on-demand
start-up ends with 60 s of download (TrainingStartTime 06:07:30), so it trains from 06:08:30; the
training code checkpoints every `intervalMinutes` of training at 60 steps per hour of work, then
uploads for 60 s. Spotline checks at 06:01 and every 15 minutes after (06:16, 06:31, 06:46, ...).
The expected figures are worked out by hand in the comments, never by Spotline's code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from spotline_dev.harness.sandbox.replay import run_scenario
from spotline_dev.harness.sandbox.scenario import load_scenario

MANIFEST: dict[str, Any] = {
    "apiVersion": "spotline/v1",
    "kind": "TrainingJob",
    "metadata": {"team": "search-ranking", "name": "ranker-on-demand", "owner": "bob@example.com"},
    "spec": {
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11.28",
        "roleArn": "arn:aws:iam::123456789012:role/spotline/ranker-training",
        "resources": {"instanceType": "ml.g5.2xlarge"},
        "inputs": [{"name": "train", "s3Uri": "s3://search-ranking-data/clicks/2026-11-30/train/"}],
        "output": {"s3Uri": "s3://search-ranking-models/ranker-on-demand/"},
        "checkpoint": {"s3Uri": "s3://search-ranking-checkpoints/ranker-on-demand/", "intervalMinutes": 20},
        "capacity": {"strategy": "on-demand", "maxRuntime": "8h", "expectedDuration": "5h", "deadline": ""},
        "priority": 300,
    },
}


def _run(tmp_path: Path, *, deadline: str, interval: int = 20, duration: str | None = None) -> dict[str, Any]:
    manifest = json.loads(json.dumps(MANIFEST))
    manifest["spec"]["capacity"]["deadline"] = deadline
    manifest["spec"]["checkpoint"]["intervalMinutes"] = interval
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(manifest))
    scenario: dict[str, Any] = {
        "name": "deadline-at-risk",
        "start": "2026-12-01T06:00:00Z",
        "manifests": ["job.yaml"],
        "onDemand": {"startDelay": "8m"},
    }
    if duration:
        scenario["training"] = {"duration": duration}
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    (run,) = run_scenario(load_scenario(tmp_path / "scenario.yaml"))["executions"]
    return run  # type: ignore[no-any-return]


def _checks(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """CheckTrainingStatus's result at each check, by checkedAt."""
    checks = [
        json.loads(event["stateExitedEventDetails"]["output"])["status"]
        for event in run["history"]
        if (event.get("stateExitedEventDetails") or {}).get("name") == "CheckTrainingStatus"
    ]
    return {check["checkedAt"]: check for check in checks}


def test_a_job_on_pace_is_not_paged_when_it_has_trained_past_its_last_checkpoint(tmp_path: Path) -> None:
    """The false page of issue 46: 5 h of work, checkpoints every 20 minutes, deadline 11:22.
    It finishes at 06:08:30 + 5h + 60 s upload = 11:09:30, 12.5 minutes early.
    At the 06:46:00 check: the last checkpoint is step 20 of 300 (20 m of training, 06:28:30), so
    4h40m of work is left from it; 06:46:00 - 06:28:30 = 17m30s trained since; the work really
    left is 5h - 20m - 17m30s = 4h22m30s, and 11:22:00 - 06:46:00 = 4h36m is left: no page
    (Spotline paged here, "4h36m left ... less than the 4h40m of work left")."""
    run = _run(tmp_path, deadline="2026-12-01T11:22:00Z")
    assert (run["status"], run["deadlineMet"], run["finishedAt"]) == ("SUCCEEDED", True, "2026-12-01T11:09:30Z")
    assert run["notifications"] == []
    check = _checks(run)["2026-12-01T06:46:00Z"]
    progress = check["progress"]
    assert (progress["step"], progress["totalSteps"], progress["trainingSeconds"]) == (20, 300, 1200.0)
    assert progress["fraction"] == 20 / 300  # what is kept: a restart would resume here
    assert progress["trainingSinceCheckpointSeconds"] == 17 * 60 + 30
    # (20 m + 17m30s) / 5 h = 2250 / 18000 = 0.125 done by now, at the measured pace.
    assert progress["estimatedFraction"] == 0.125
    assert check["deadlineAtRisk"] is None


def test_a_job_that_completes_before_its_deadline_is_not_paged_at_its_end(tmp_path: Path) -> None:
    """Checkpoints every minute keep the estimate within a minute of the truth; the job ends at
    11:09:30, 15m30s before its 11:25 deadline. The last check sees it completed, nothing left to
    do: no page (the completed check paged: "0s of work" plus a 20-minute restart)."""
    run = _run(tmp_path, deadline="2026-12-01T11:25:00Z", interval=1)
    assert (run["status"], run["deadlineMet"], run["finishedAt"]) == ("SUCCEEDED", True, "2026-12-01T11:09:30Z")
    assert run["notifications"] == []


def test_a_job_that_truly_cannot_make_its_deadline_is_paged_saying_how_sure(tmp_path: Path) -> None:
    """The same job really needs 6 h (declared 5 h): 360 steps, step 20 checkpointed at 06:28:30
    after 1200 s of training, so the measured pace gives 1200 * 360 / 20 = 21600 s = 6h of work.
    At the 06:31:00 check it has trained 2m30s since: 21600 - 1200 - 150 = 20250 s = 5h37m30s left.
    The pace rests on one checkpoint interval (1200 s / 1200 s): 10 % of it may be off, 2025 s =
    33m45s; even 33m45s sooner, 5h3m45s is more than the 4h51m left (11:22 - 06:31): paged at
    06:31, and it ends 06:08:30 + 6h + 60 s = 12:09:30, after the deadline."""
    run = _run(tmp_path, deadline="2026-12-01T11:22:00Z", duration="6h")
    assert (run["status"], run["error"], run["finishedAt"]) == ("FAILED", "DeadlineMissed", "2026-12-01T12:09:30Z")
    assert [(n["type"], n["at"]) for n in run["notifications"]] == [
        ("DeadlineAtRisk", "2026-12-01T06:31:00Z"),
        ("DeadlineMissed", "2026-12-01T12:09:30Z"),
    ]
    at_risk = _checks(run)["2026-12-01T06:31:00Z"]["deadlineAtRisk"]
    assert (at_risk["workLeftSeconds"], at_risk["workLeftSpreadSeconds"], at_risk["workLeftEstimated"]) == (
        20250,
        2025,
        True,
    )
    assert at_risk["cause"] == (
        "4h51m left before the deadline; about 5h37m30s of work left (estimated at the pace measured over 20m of "
        "training to the last checkpoint, less the 2m30s trained since it; it may be 33m45s less): even at best it "
        "ends after the deadline, on any capacity (tried: on-demand on ml.g5.2xlarge)"
    )
