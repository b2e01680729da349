"""One team can never act as another: the same TeamPolicy refuses another team's role, data
and image offline (`spotline validate --team-policy`) and in the running system (sandbox)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spotline_dev.cli.entry import main as cli_main
from spotline_dev.harness.sandbox.replay import ScenarioError, load_scenario, run_scenario

ROOT = Path(__file__).resolve().parents[4]
SCENARIO = ROOT / "examples" / "scenarios" / "another-teams-resources.yaml"
POLICY = ROOT / "examples" / "team-policy.json"  # the scenario's teamPolicy
MANIFEST = ROOT / "examples" / "scenarios" / "manifests" / "uses-team-b-resources.yaml"
FIELDS = ["spec.roleArn", "spec.image", "spec.inputs[0].s3Uri", "spec.output.s3Uri", "spec.checkpoint.s3Uri"]


def test_validate_with_the_team_policy_refuses_every_borrowed_resource(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["validate", "--json", "--now", "2026-11-29T08:00:00Z", "--team-policy", str(POLICY), str(MANIFEST)]
    assert cli_main(args) == 1
    (report,) = json.loads(capsys.readouterr().out)
    assert sorted(e["path"] for e in report["errors"]) == sorted(FIELDS)
    assert cli_main(["validate", "--now", "2026-11-29T08:00:00Z", str(MANIFEST)]) == 0  # fine without a policy


def test_the_sandbox_with_that_policy_ends_in_resource_validation_failed_naming_each_field() -> None:
    (run,) = run_scenario(load_scenario(SCENARIO))["executions"]
    assert (run["status"], run["error"]) == ("FAILED", "ResourceValidationFailed")
    assert run["attempts"] == 0
    for field in FIELDS:
        assert field in run["cause"], field


def test_an_unusable_team_policy_is_a_usage_error_naming_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "team-policy.json"
    policy.write_text('{"teams": {"search-ranking": {"s3Prefix": []}}}')
    assert cli_main(["validate", "--team-policy", str(policy), str(MANIFEST)]) == 2
    assert "teams.search-ranking.s3Prefix: unknown field (did you mean 's3Prefixes'?)" in capsys.readouterr().err
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("teamPolicy: {teams: {search-ranking: {roles: [not-an-arn]}}}\n")
    with pytest.raises(ScenarioError, match=r"teamPolicy\.teams\.search-ranking\.roles\[0\]: must be an IAM role ARN"):
        load_scenario(scenario)
