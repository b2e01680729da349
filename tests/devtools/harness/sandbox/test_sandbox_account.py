"""The sandbox plays the manifest's AWS account: its id, region and role path come from the
manifest (or the scenario says them), and what it plays is said whenever the two disagree."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import example_text
from spotline_dev.harness.sandbox.replay import SLACK_LEGEND, ScenarioError, load_scenario, render_text, run_scenario

OTHER_ACCOUNT = "210987654321"


def _manifest(folder: Path, name: str, *, account: str, role_path: str = "ml/training") -> Path:
    """The example manifest in `account`, its role under `role_path`, two hours long."""
    text = example_text(
        ("123456789012", account),
        ("role/spotline/", f"role/{role_path}/"),
        ("name: ranker-v2", f"name: {name}"),
        ("expectedDuration: 8h", "expectedDuration: 2h"),
    )
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def _scenario(folder: Path, manifests: list[Path], extra: str = "") -> Path:
    path = folder / "scenario.yaml"
    listed = ", ".join(p.name for p in manifests)
    path.write_text(f'name: accounts\nstart: "2026-12-01T00:00:00Z"\nmanifests: [{listed}]\n{extra}')
    return path


def test_a_manifest_naming_any_account_runs_as_that_account(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, "own-account", account=OTHER_ACCOUNT)

    summary = run_scenario(load_scenario(_scenario(tmp_path, [manifest])))

    (run,) = summary["executions"]
    assert (run["status"], run["error"]) == ("SUCCEEDED", None)
    assert (
        run["account"]
        == f"account {OTHER_ACCOUNT} in us-east-1, SageMaker roles under role/ml/training/ (the manifest)"
    )
    history_arns = [e for e in run["history"] if e["type"] == "ExecutionStarted"]
    assert history_arns and f":{OTHER_ACCOUNT}:" in str(history_arns[0])
    text = render_text(summary, 1.0)
    assert f"Plays account {OTHER_ACCOUNT} in us-east-1" in text
    # The slack the checks print is defined once, where it first appears.
    assert text.index(SLACK_LEGEND) < text.index(", slack ") and text.count(SLACK_LEGEND) == 1


def test_when_the_scenario_pins_another_account_the_refusal_says_what_the_sandbox_plays(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, "elsewhere", account=OTHER_ACCOUNT)
    pinned = "account: {id: '123456789012', region: us-east-1, rolePath: spotline}\n"

    summary = run_scenario(load_scenario(_scenario(tmp_path, [manifest], pinned)))

    (run,) = summary["executions"]
    assert run["error"] == "ResourceValidationFailed"
    assert "not a role this stack may pass" in run["cause"]
    text = render_text(summary, 1.0)
    assert "Plays account 123456789012 in us-east-1, SageMaker roles under role/spotline/ (the scenario)" in text


def test_manifests_sharing_one_stack_must_name_one_account(tmp_path: Path) -> None:
    ours = _manifest(tmp_path, "ours", account="123456789012", role_path="spotline")
    theirs = _manifest(tmp_path, "theirs", account=OTHER_ACCOUNT, role_path="spotline")
    path = tmp_path / "fleet.yaml"
    path.write_text(
        'name: fleet\nstart: "2026-12-01T00:00:00Z"\nqueue: {capacity: {ml.g5.2xlarge: 4}}\n'
        f"submissions:\n  - {{manifest: {ours.name}, at: 0h}}\n  - {{manifest: {theirs.name}, at: 0h}}\n"
    )

    with pytest.raises(
        ScenarioError, match=rf"account.id: the manifests of this stack name 123456789012, {OTHER_ACCOUNT}"
    ):
        run_scenario(load_scenario(path))


def test_a_scenario_account_is_checked_like_every_field(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, "checked", account=OTHER_ACCOUNT)

    with pytest.raises(ScenarioError, match=r"account\.id"):
        load_scenario(_scenario(tmp_path, [manifest], "account: {id: '12345'}\n"))
