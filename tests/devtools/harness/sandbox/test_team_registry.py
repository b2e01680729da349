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

from spotline.core.manifest.manifest import validate_bytes
from spotline.core.teams.quota_shares import MAX_SHARES_PER_QUEUE
from spotline_dev.harness.local.registry import quota_totals, synthetic_registry
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.account import team_allowance
from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario

SCENARIOS = PROJECT_ROOT / "examples" / "scenarios"
RANKER = PROJECT_ROOT / "examples" / "manifests" / "ranker-v2.yaml"
START = "2026-11-30T00:00:00Z"
TEAMS, PER_SHARE = 300, 20
ACCOUNT = "123456789012"
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


def test_a_registry_of_300_teams_is_applied_and_a_team_near_its_end_trains(tmp_path: Path) -> None:
    policy = synthetic_registry(TEAMS, per_share=PER_SHARE, instance_types=TYPES, account=ACCOUNT, region="us-east-1")
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
    scenario = _scenario(
        tmp_path,
        teamPolicy="teams.json",
        submissions=[{"manifest": str(manifest)}],
        queue={"capacity": quota_totals(policy)},
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
