"""`spotline validate` says when a valid manifest's deadline leaves no room for spot, and still
exits 0: a warning, not a refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spotline_dev.cli.entry import main as cli_main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "manifests" / "ranker-v2.yaml"


def _tight(tmp_path: Path) -> Path:
    """ranker-v2 with 30h of work due 30h30m after --now."""
    text = EXAMPLE.read_text().replace('deadline: "2026-12-02T06:00:00Z"', 'deadline: "2026-11-30T14:30:00Z"')
    text = text.replace("expectedDuration: 8h", "expectedDuration: 30h").replace("maxRuntime: 30h", "maxRuntime: 36h")
    manifest = tmp_path / "tight.yaml"
    manifest.write_text(text)
    return manifest


def test_a_deadline_without_room_for_spot_is_warned_about(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _tight(tmp_path)
    assert cli_main(["validate", "--now", "2026-11-29T08:00:00Z", str(manifest)]) == 0
    valid, warning = capsys.readouterr().out.splitlines()
    assert valid == f"{manifest}: valid"
    assert warning.startswith(f"{manifest}: warning: spec.capacity.deadline: leaves no room for spot: 30h30m left")
    assert cli_main(["validate", "--json", "--now", "2026-11-29T08:00:00Z", str(manifest)]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["valid"] and [w["path"] for w in report["warnings"]] == ["spec.capacity.deadline"]


def test_a_deadline_with_room_gets_no_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["validate", "--now", "2026-11-29T08:00:00Z", str(EXAMPLE)]) == 0
    assert capsys.readouterr().out == f"{EXAMPLE}: valid\n"


def _edited(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = EXAMPLE.read_text()
    assert old in text
    manifest = tmp_path / name
    manifest.write_text(text.replace(old, new))
    return manifest


NO_DEADLINE = ('    expectedDuration: 8h\n    deadline: "2026-12-02T06:00:00Z"\n', "")
RETRY = "    retry: {maxAttempts: 3, backoff: 2m}\n"


def test_a_spot_job_without_a_deadline_is_warned_about_and_still_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _edited(tmp_path, "no-deadline.yaml", *NO_DEADLINE)
    assert cli_main(["validate", "--now", "2026-11-29T08:00:00Z", str(manifest)]) == 0
    valid, warning = capsys.readouterr().out.splitlines()
    assert valid == f"{manifest}: valid"
    assert warning.startswith(
        f"{manifest}: warning: spec.capacity.deadline: is not set: the job stays on spot for as long as spot takes"
    )
    assert "maxWait 36h (waiting for spot plus training): up to 4d12h on spot" in warning
    assert cli_main(["validate", "--strict", "--now", "2026-11-29T08:00:00Z", str(manifest)]) == 1


def test_an_unknown_region_is_refused_naming_its_place_and_the_closest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _edited(tmp_path, "regions.yaml", RETRY, RETRY + "    regions: [us-west-2, eu-west-9]\n")
    assert cli_main(["validate", "--now", "2026-11-29T08:00:00Z", str(manifest)]) == 1
    (error,) = capsys.readouterr().out.splitlines()
    assert error.startswith(f"{manifest}: spec.capacity.regions[1]: is not a region where SageMaker training runs")
    assert error.endswith("(got 'eu-west-9'; closest: eu-west-3, eu-west-2, eu-west-1)")


def test_the_stacks_region_must_be_in_the_list_checked_when_validate_knows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    manifest = _edited(tmp_path, "regions.yaml", RETRY, RETRY + "    regions: [us-west-2, eu-west-1]\n")
    now = ["--now", "2026-11-29T08:00:00Z"]
    assert cli_main(["validate", *now, str(manifest)]) == 0  # the stack's region unknown: said, not refused
    valid, warning = capsys.readouterr().out.splitlines()
    assert valid == f"{manifest}: valid"
    assert warning == (
        f"{manifest}: warning: spec.capacity.regions: must include the stack's own region, where the manifest is "
        "dropped (the stack refuses the run otherwise); not checked here: give --region REGION (or set AWS_REGION "
        "or AWS_DEFAULT_REGION) to check it"
    )
    assert cli_main(["validate", *now, "--region", "us-east-1", str(manifest)]) == 1
    assert capsys.readouterr().out == (
        f"{manifest}: spec.capacity.regions: must include us-east-1, the region the manifest was dropped in: "
        "the run, its on-demand fallback and its records stay there\n"
    )
    assert cli_main(["validate", *now, "--region", "us-west-2", str(manifest)]) == 0
    assert capsys.readouterr().out == f"{manifest}: valid\n"
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    assert cli_main(["validate", *now, "--json", str(manifest)]) == 1
    (report,) = json.loads(capsys.readouterr().out)
    assert [e["path"] for e in report["errors"]] == ["spec.capacity.regions"] and report["warnings"] == []
