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
