"""`spotline teams` against the local stack as a deployed one: the registry read, changed through
ApplyTeamChange, a refused change leaving the previous version in force, every change kept with
who made it, a rollback in one command, and runs admitted under the version in force when they start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLE_MANIFEST, example_spec, run_upload
from devtools.cli.operate.printed import printed_json, printed_lines
from spotline.aws.teams.team_registry import propose
from spotline.core.teams.team_registry import Change
from spotline_dev.cli.entry import main
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_USAGE
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import STACK
from spotline_dev.harness.sandbox.account import team_allowance

ON_STACK = ["--stack", STACK]
TEAM = "search-ranking"


def _policy_file(tmp_path: Path, **changes: Any) -> str:
    entry = {**team_allowance(example_spec()), **changes}
    path = tmp_path / f"teams-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps({"teams": {TEAM: entry}}))
    return str(path)


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, *ON_STACK, "--output", "json"]) == EXIT_OK
    return printed_json(capsys.readouterr().out)


def test_list_and_show_read_the_seeded_registry(deployed: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    (listed,) = _json(capsys, "teams", "list")
    assert (listed["team"], listed["version"], listed["quotaShare"]) == (TEAM, 1, TEAM)
    shown = _json(capsys, "teams", "show", TEAM)
    assert shown["entry"] == team_allowance(example_spec()) and shown["version"] == 1
    assert shown["changedBy"]  # the caller's aws:userid, from the proposal's tag
    assert main(["teams", "show", "nobody", *ON_STACK]) == EXIT_INVALID
    assert "team nobody is not in the registry" in capsys.readouterr().err


def test_a_change_is_diffed_applied_and_kept_in_the_history(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    wider = _policy_file(tmp_path, maxInstances=4)
    assert main(["teams", "validate", wider, *ON_STACK]) == EXIT_OK
    assert printed_lines(capsys.readouterr().out) == [f"{wider}: valid for stack {STACK}: 1 teams, 1 would change"]
    assert main(["teams", "diff", wider, *ON_STACK]) == EXIT_OK
    assert printed_lines(capsys.readouterr().out) == [f"{TEAM}: ~ maxInstances: 1 -> 4"]
    applied = _json(capsys, "teams", "apply", wider)
    assert (applied["outcome"], applied["versions"]) == ("applied", {TEAM: 2})
    assert _json(capsys, "teams", "show", TEAM)["entry"]["maxInstances"] == 4
    again = _json(capsys, "teams", "apply", wider)
    assert (again["outcome"], again["versions"]) == ("unchanged", {TEAM: 2})  # idempotent: no new version
    history = _json(capsys, "teams", "history", TEAM)
    assert [record["version"] for record in history] == [2, 1]
    assert all(record["changedBy"] and record["changedAt"] for record in history)
    assert main(["teams", "history", TEAM, *ON_STACK]) == EXIT_OK
    rows = printed_lines(capsys.readouterr().out)
    assert rows[0].split() == ["VERSION", "CHANGED", "AT", "CHANGED", "BY", "CHANGE"]
    assert rows[1].startswith("2 ") and rows[1].endswith("~ maxInstances")


def test_an_invalid_change_is_refused_naming_the_field_and_the_previous_version_keeps_working(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for bad, field in (
        (_policy_file(tmp_path, maxInstances=0), f"teams.{TEAM}.maxInstances: must be at least 1"),
        (_policy_file(tmp_path, quotas={"ml.p4d.24xlarge": 1}), f"teams.{TEAM}.quotas.ml.p4d.24xlarge: the service"),
        (
            _policy_file(tmp_path, quotas={"ml.g5.2xlarge": 9}),
            f"teams.{TEAM}.quotas.ml.g5.2xlarge: the registry's quotas of ml.g5.2xlarge would add up to 9, more "
            "than the service environment's 8",
        ),
    ):
        for command in ("validate", "apply"):
            assert main(["teams", command, bad, *ON_STACK]) == EXIT_INVALID
            err = capsys.readouterr().err
            assert field in err, err
            assert "refused; the registry is unchanged" in err
    assert _json(capsys, "teams", "show", TEAM)["version"] == 1
    execution, _history = run_upload(deployed, EXAMPLE_MANIFEST.read_bytes())
    assert execution["status"] == "SUCCEEDED"


def test_the_stack_refuses_a_proposal_the_cli_was_not_asked_to_check(deployed: LocalStack) -> None:
    """ApplyTeamChange validates on its own: a proposal put by hand (not through the CLI) that
    breaks the schema is refused with the field named, and nothing is written."""
    from spotline.aws.teams.team_registry import submit_changes
    from spotline.core.teams.team_registry import Change

    answer = submit_changes(
        [Change(TEAM, {"maxInstances": 0})],
        function_name=deployed.functions["ApplyTeamChangeFunction"],
        bucket_name=deployed.physical["TeamRegistryBucket"],
    )
    assert answer["outcome"] == "refused"
    assert {"path": f"teams.{TEAM}.maxInstances", "message": "must be at least 1, got 0"} in answer["errors"]


def test_a_rollback_restores_a_version_as_a_new_one(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _json(capsys, "teams", "apply", _policy_file(tmp_path, maxInstances=4, maxPriority=900))
    rolled = _json(capsys, "teams", "rollback", TEAM, "1")
    assert rolled["versions"] == {TEAM: 3}
    shown = _json(capsys, "teams", "show", TEAM)
    assert shown["entry"] == team_allowance(example_spec()) and shown["rollbackOf"] == 1
    assert main(["teams", "rollback", TEAM, "7", *ON_STACK]) == EXIT_INVALID
    assert "has no version 7" in capsys.readouterr().err


def test_a_removed_team_is_refused_new_runs_and_can_be_restored(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    removed = _json(capsys, "teams", "remove", TEAM, "--yes")
    assert removed["versions"] == {TEAM: 2}
    assert _json(capsys, "teams", "list") == []
    shares = deployed.client("batch").list_quota_shares(jobQueue=deployed.physical["TrainingJobQueue"])
    assert [(s["quotaShareName"], s["state"]) for s in shares["quotaShares"]] == [(TEAM, "DISABLED")]
    execution, _history = run_upload(deployed, EXAMPLE_MANIFEST.read_bytes())
    assert execution["status"] == "FAILED"
    assert "is not in this stack's team registry" in execution["cause"]
    assert _json(capsys, "teams", "rollback", TEAM, "1")["versions"] == {TEAM: 3}
    deployed.deliver_events()  # the refused run's end reaches the clean-up
    execution, _history = run_upload(deployed, EXAMPLE_MANIFEST.read_bytes(), key=f"manifests/{TEAM}/again.yaml")
    assert execution["status"] == "SUCCEEDED"


def test_a_file_that_is_not_a_policy_is_refused_before_anything_is_proposed(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"teams": {"Bad Name": {}}}')
    assert main(["teams", "apply", str(path), *ON_STACK]) == EXIT_INVALID
    assert "teams.Bad Name: must be 2-24 characters of lowercase letters" in capsys.readouterr().err
    listed = deployed.client("s3").list_objects_v2(Bucket=deployed.physical["TeamRegistryBucket"], Prefix="proposed/")
    assert [o["Key"] for o in listed.get("Contents", [])] == [f"proposed/{TEAM}.json"]  # the seed's only


def test_a_caller_whose_session_name_holds_a_comma_is_refused_before_anything_is_proposed(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """STS lets a role session name hold `,` ([\\w+=,.@-]*), an S3 tag value may not: the CLI says
    so and what to do, instead of S3's InvalidTag after the upload started."""
    from spotline.aws.teams import team_registry

    sts = deployed.client("sts")
    role = f"arn:aws:iam::{sts.get_caller_identity()['Account']}:role/vision-lead"
    userid = sts.assume_role(RoleArn=role, RoleSessionName="alice,admin")["AssumedRoleUser"]["AssumedRoleId"]
    assert userid.endswith(":alice,admin")  # what GetCallerIdentity answers such a session as its UserId
    monkeypatch.setattr(team_registry, "caller_id", lambda: userid)
    bucket = deployed.physical["TeamRegistryBucket"]
    before = deployed.client("s3").list_object_versions(Bucket=bucket, Prefix="proposed/")["Versions"]
    assert main(["teams", "apply", _policy_file(tmp_path, maxInstances=4), *ON_STACK]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"nothing proposed: your AWS identity {userid} holds ','" in err
    assert "session name" in err and "no commas" in err
    after = deployed.client("s3").list_object_versions(Bucket=bucket, Prefix="proposed/")["Versions"]
    assert [v["VersionId"] for v in after] == [v["VersionId"] for v in before]
    assert _json(capsys, "teams", "show", TEAM)["version"] == 1


def test_a_leads_widening_change_is_pending_until_the_platform_approves_it(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 45: `spotline teams approve TEAM` is the platform's second, recorded step."""
    bucket = deployed.physical["TeamRegistryBucket"]
    wider = Change(TEAM, {**team_allowance(example_spec()), "maxPriority": 9999})
    version = propose(wider, "AROALEAD:alice", bucket, lead_of=TEAM)  # as the team's lead (tag spotline:lead-of)
    pending = deployed.invoke("ApplyTeamChangeFunction", {"proposals": [{"team": TEAM, "versionId": version}]})
    assert pending["outcome"] == "pending" and pending["pending"][0]["fields"] == ["maxPriority"]
    assert _json(capsys, "teams", "show", TEAM)["entry"]["maxPriority"] != 9999
    assert main(["teams", "approve", TEAM, *ON_STACK]) == EXIT_OK
    assert printed_lines(capsys.readouterr().out)[0] == f"Applied: {TEAM} version 2"
    shown = _json(capsys, "teams", "show", TEAM)
    assert shown["entry"]["maxPriority"] == 9999
    assert (shown["changedBy"], bool(shown["approvedBy"])) == ("AROALEAD:alice", True)
    assert main(["teams", "approve", "nobody", *ON_STACK]) == EXIT_INVALID
