"""The team registry in the sandbox: a scenario's `teamPolicy:` seeds it through ApplyTeamChange,
`teamChanges:` change it mid-run and runs admitted after a change see it, a refused change
leaves the previous version in force, and a registry of 300 teams (each with roles, prefixes,
images and per-type quotas) is applied and used by a team near the end of the list."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from spotline.core.manifest import validate_bytes
from spotline.core.quota_shares import MAX_SHARES_PER_QUEUE
from spotline_dev.local.template import PROJECT_ROOT
from spotline_dev.sandbox.account import team_allowance
from spotline_dev.sandbox.replay import load_scenario, run_scenario

SCENARIOS = PROJECT_ROOT / "examples" / "scenarios"
RANKER = PROJECT_ROOT / "examples" / "manifests" / "ranker-v2.yaml"
START = "2026-11-30T00:00:00Z"
TEAMS, PER_SHARE = 300, 20
TYPES = ("ml.g5.2xlarge", "ml.g5.12xlarge", "ml.g6.2xlarge", "ml.p4d.24xlarge", "ml.c7i.4xlarge")


def _scenario(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "registry", "start": START, **fields}))
    return path


def _ranker_entry(**changes: Any) -> dict[str, Any]:
    spec = validate_bytes(RANKER.read_bytes(), now=datetime.fromisoformat(START)).spec
    assert spec is not None
    return {**team_allowance(spec), **changes}


def test_a_team_removed_mid_run_keeps_its_running_job_and_is_refused_new_runs() -> None:
    summary = run_scenario(load_scenario(SCENARIOS / "team-removed-mid-run.yaml"))
    first, second = summary["executions"]
    assert (first["status"], second["status"], second["error"]) == ("SUCCEEDED", "FAILED", "ResourceValidationFailed")
    assert "team 'search-ranking' is not in this stack's team registry" in second["cause"]
    assert summary["teamChanges"] == [
        {"at": 3600.0, "team": "search-ranking", "remove": True, "outcome": "applied", "version": 2}
    ]


def test_a_change_mid_run_reaches_the_runs_admitted_after_it(tmp_path: Path) -> None:
    scenario = _scenario(
        tmp_path,
        teamPolicy={"teams": {"search-ranking": _ranker_entry(maxPriority=50)}},  # the manifest asks for 100
        submissions=[{"manifest": str(RANKER)}, {"manifest": str(RANKER), "at": "2h"}],
        teamChanges=[{"at": "1h", "team": "search-ranking", "entry": _ranker_entry(maxPriority=500)}],
    )
    summary = run_scenario(load_scenario(scenario))
    before, after = summary["executions"]
    assert (before["status"], before["error"]) == ("FAILED", "ResourceValidationFailed")
    assert "100 exceeds team search-ranking's maximum priority 50" in before["cause"]
    assert after["status"] == "SUCCEEDED"
    assert [(c["outcome"], c["version"]) for c in summary["teamChanges"]] == [("applied", 2)]


def test_a_refused_change_mid_run_leaves_the_previous_version_in_force(tmp_path: Path) -> None:
    scenario = _scenario(
        tmp_path,
        manifests=[str(RANKER)],
        teamChanges=[
            {"at": "10m", "team": "search-ranking", "entry": _ranker_entry(quotas={"ml.p4d.24xlarge": 1})},
        ],
    )
    summary = run_scenario(load_scenario(scenario))
    (run,) = summary["executions"]
    assert run["status"] == "SUCCEEDED"
    (change,) = summary["teamChanges"]
    assert change["outcome"] == "refused"
    assert (
        "teams.search-ranking.quotas.ml.p4d.24xlarge: the service environment has no capacity limit"
        in (change["reason"])
    )


def _registry_of_300(account: str) -> dict[str, Any]:
    """300 teams in 15 shared quota shares (a queue holds 20), each team with its roles, prefixes,
    images and a quota of one or two instance types."""
    teams = {}
    for n in range(TEAMS):
        team = f"team-{n:03d}"
        first, second = TYPES[n % len(TYPES)], TYPES[(n + 1) % len(TYPES)]
        teams[team] = {
            "instanceFamilies": sorted({t.split(".")[1] for t in TYPES}),
            "maxInstances": 2,
            "maxPriority": 500,
            "roles": [f"arn:aws:iam::{account}:role/spotline/{team}/*"],
            "s3Prefixes": [f"s3://{team}-data/", f"s3://{team}-models/", f"s3://{team}-checkpoints/"],
            "images": [f"{account}.dkr.ecr.us-east-1.amazonaws.com/{team}/*"],
            "quotas": {first: 1, second: 1} if n % 3 == 0 else {first: 1},
            "quotaShare": f"org-{n // PER_SHARE:02d}",
            "maxRuntime": "30h",
        }
    return {"teams": teams}


def test_a_registry_of_300_teams_is_applied_and_a_team_near_its_end_trains(tmp_path: Path) -> None:
    policy = _registry_of_300("123456789012")
    (tmp_path / "teams.json").write_text(json.dumps(policy))
    team = "team-298"
    manifest = tmp_path / "job.yaml"
    manifest.write_text(
        RANKER.read_text()
        .replace("search-ranking-", f"{team}-")
        .replace("team: search-ranking", f"team: {team}")
        .replace("role/spotline/ranker-training", f"role/spotline/{team}/trainer")
        .replace("amazonaws.com/ranker:", f"amazonaws.com/{team}/ranker:")
        .replace("ml.g5.2xlarge", TYPES[298 % len(TYPES)])
    )
    per_type = {t: sum(q.get(t, 0) for q in (e["quotas"] for e in policy["teams"].values())) for t in TYPES}
    scenario = _scenario(
        tmp_path,
        teamPolicy="teams.json",
        submissions=[{"manifest": str(manifest)}],
        queue={"capacity": per_type},
    )
    summary = run_scenario(load_scenario(scenario))
    (run,) = summary["executions"]
    assert run["status"] == "SUCCEEDED", run.get("cause")
    assert run["team"] == team
    shares = summary["quotas"]
    assert len(shares) == TEAMS // PER_SHARE <= MAX_SHARES_PER_QUEUE
    share = policy["teams"][team]["quotaShare"]
    members = [e["quotas"] for e in policy["teams"].values() if e["quotaShare"] == share]
    assert shares[share] == {t: sum(q.get(t, 0) for q in members) for t in TYPES if any(t in q for q in members)}
