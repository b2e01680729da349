"""Issue 46: DeadlineAtRisk pages only when the deadline is really out of reach; a job with
nothing left to do is never paged.

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

from spotline_dev.sandbox.replay import run_scenario
from spotline_dev.sandbox.scenario import load_scenario

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


def test_a_job_that_completes_before_its_deadline_is_not_paged_at_its_end(tmp_path: Path) -> None:
    """Checkpoints every minute keep the estimate within a minute of the truth; the job ends at
    11:09:30, 15m30s before its 11:25 deadline. The last check sees it completed, nothing left to
    do: no page (the completed check paged: "0s of work" plus a 20-minute restart)."""
    run = _run(tmp_path, deadline="2026-12-01T11:25:00Z", interval=1)
    assert (run["status"], run["deadlineMet"], run["finishedAt"]) == ("SUCCEEDED", True, "2026-12-01T11:09:30Z")
    assert run["notifications"] == []
