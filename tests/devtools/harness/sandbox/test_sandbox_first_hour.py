"""Issue 50, the sandbox as a new user meets it from README.md: a scoring job in one's own account
runs as that account, and an invalid manifest's run shows its own errors, its real deadline and
the account it names (never a team-folder error, `deadline none` or the sandbox's default that
the sandbox made up)."""

from __future__ import annotations

from pathlib import Path

from builders import example_text
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.replay import load_scenario, public_summary, render_text, run_scenario
from spotline_dev.harness.sandbox.scoring import DEFAULT_RECORDS

OTHER_ACCOUNT = "210987654321"
SCORING = PROJECT_ROOT / "examples" / "scoring"


def _scenario(folder: Path, manifest: Path, start: str, extra: str = "") -> Path:
    path = folder / "scenario.yaml"
    path.write_text(f'name: first-hour\nstart: "{start}"\nmanifests: [{manifest.name}]\n{extra}')
    return path


def _scoring_manifest(folder: Path, name: str, *changes: tuple[str, str]) -> Path:
    text = (SCORING / "scores-with-its-own-model.yaml").read_text()
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def test_a_scoring_job_in_the_teams_own_account_runs_as_that_account(tmp_path: Path) -> None:
    # Its model's role and image are in another account than the sandbox's default: the sandbox
    # plays that account, as it does for a training manifest, with no `account:` in the scenario.
    manifest = _scoring_manifest(
        tmp_path, "own-account", ("123456789012", OTHER_ACCOUNT), ("records: 40000000", "records: 4000000")
    )
    summary = run_scenario(load_scenario(_scenario(tmp_path, manifest, "2026-12-04T23:55:00Z")))

    (run,) = summary["executions"]
    assert (run["status"], run["error"]) == ("SUCCEEDED", None), run["cause"]
    assert (
        run["account"] == f"account {OTHER_ACCOUNT} in us-east-1, SageMaker roles under role/spotline/ (the manifest)"
    )
    assert f"Plays account {OTHER_ACCOUNT} in us-east-1" in render_text(summary, 1.0)


def test_an_invalid_training_manifest_shows_its_own_errors_its_deadline_and_its_account(tmp_path: Path) -> None:
    manifest = tmp_path / "misspelt.yaml"
    manifest.write_text(
        example_text(("expectedDuration:", "expectedDurration:"), ("123456789012", OTHER_ACCOUNT))  # a typo
    )
    summary = run_scenario(load_scenario(_scenario(tmp_path, manifest, "2026-12-01T00:00:00Z")))

    (run,) = summary["executions"]
    assert (run["status"], run["error"]) == ("FAILED", "ManifestInvalid")
    assert "spec.capacity.expectedDurration: unknown field (did you mean 'expectedDuration'?)" in run["cause"]
    assert "metadata.team" not in run["cause"]  # uploaded under its own team's folder
    assert run["deadline"] == "2026-12-02T06:00:00Z"
    text = render_text(summary, 1.0)
    assert "deadline 2026-12-02T06:00:00Z not reached" in text and "deadline none" not in text
    assert f"Plays account {OTHER_ACCOUNT} in us-east-1, SageMaker roles under role/spotline/ (the manifest)" in text
    assert "the sandbox's default" not in text


def test_an_invalid_scoring_manifest_shows_its_own_errors_and_its_deadline(tmp_path: Path) -> None:
    manifest = _scoring_manifest(
        tmp_path, "misspelt", ("    artifact:", "    artefact:"), ("123456789012", OTHER_ACCOUNT)
    )
    summary = run_scenario(load_scenario(_scenario(tmp_path, manifest, "2026-12-04T23:55:00Z")))

    (run,) = public_summary(summary)["executions"]
    assert (run["kind"], run["status"], run["error"]) == ("ScoringJob", "FAILED", "ScoringManifestRejected")
    assert "spec.model.artefact: unknown field (did you mean 'artifact'?)" in (summary["executions"][0]["cause"] or "")
    assert "metadata.team" not in (summary["executions"][0]["cause"] or "")
    assert run["deadline"] == "2026-12-05T03:00:00Z"
    text = render_text(summary, 1.0)
    assert "result: FAILED (ScoringManifestRejected); deadline 2026-12-05T03:00:00Z not reached" in text
    assert "attempts 0" not in text and "deadline none" not in text  # not a training run's words
    # Its model's role and image are valid, and name the account the sandbox plays.
    assert f"Plays account {OTHER_ACCOUNT} in us-east-1, SageMaker roles under role/spotline/ (the manifest)" in text


def _night_without_records(folder: Path, transform: str) -> dict[str, object]:
    lines = (SCORING / "scores-on-upload.yaml").read_text().splitlines(keepends=True)
    manifest = folder / "no-records.yaml"
    manifest.write_text("".join(line for line in lines if "records: 40000000" not in line))
    summary = run_scenario(load_scenario(_scenario(folder, manifest, "2026-12-04T23:55:00Z", transform)))
    (run,) = public_summary(summary)["executions"]
    return run  # type: ignore[no-any-return]


def test_a_night_without_declared_records_prints_the_records_and_throughput_the_stand_in_scored(
    tmp_path: Path,
) -> None:
    # Spotline counts undeclared records from the input's bytes; the sandbox writes that many
    # lines (DEFAULT_RECORDS), so the count and the pace it prints are what the stand-in scored.
    run = _night_without_records(tmp_path, "transform: {recordsPerSecond: 1200}\n")
    assert run["status"] == "SUCCEEDED"
    assert run["sizing"]["records"] == DEFAULT_RECORDS  # type: ignore[index]
    assert run["recordsPerSecond"] == 1200.0


def test_without_transform_the_stand_in_scores_at_the_manifests_declared_throughput(tmp_path: Path) -> None:
    run = _night_without_records(tmp_path, "")
    assert (run["status"], run["recordsPerSecond"]) == ("SUCCEEDED", 1500.0)  # throughput: {recordsPerSecond: 1500}
