"""The sandbox names a manifest with bad bytes (a NUL in a comment) instead of a traceback: a
manifest run alone ends its run in ManifestInvalid with the loader's position; a fleet, which
re-reads its manifests as YAML before any stack sees them, refuses the scenario naming the file
(issue 45)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import EXAMPLE_MANIFEST
from spotline_dev.cli.entry import main as cli_main
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_NOT_SUCCEEDED
from spotline_dev.harness.sandbox.replay import ScenarioError, load_scenario

NUL = "control character U+0000 (NUL); remove it (no control character is allowed anywhere, not even in a comment)"


def _nul_manifest(folder: Path) -> tuple[Path, int]:
    body = EXAMPLE_MANIFEST.read_bytes()
    path = folder / "nul.yaml"
    path.write_bytes(body + b"# reviewed \x00 by ops\n")
    return path, body.count(b"\n") + 1


def _scenario(folder: Path, body: str) -> Path:
    path = folder / "scenario.yaml"
    path.write_text(f'name: bytes\nstart: "2026-12-01T00:00:00Z"\n{body}')
    return path


def test_a_manifest_run_alone_is_refused_by_name_in_its_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest, line = _nul_manifest(tmp_path)
    assert cli_main(["sandbox", "--scenario", str(_scenario(tmp_path, f"manifests: [{manifest.name}]\n"))]) == (
        EXIT_NOT_SUCCEEDED
    )
    captured = capsys.readouterr()
    assert f"manifest rejected: 1 error(s): (manifest): line {line}, column 12: {NUL}" in captured.out
    assert "result: FAILED (ManifestInvalid)" in captured.out
    assert "Traceback" not in captured.out + captured.err


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("submissions: [{{manifest: {name}, count: 1}}]\n", "submissions[0].manifest"),
        ("manifests: [{name}]\nqueue: {{capacity: {{ml.g5.2xlarge: 1}}}}\n", "manifests"),
    ],
    ids=["submissions", "queue"],
)
def test_a_fleet_scenario_names_the_manifest_it_cannot_read(tmp_path: Path, body: str, where: str) -> None:
    manifest, line = _nul_manifest(tmp_path)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_scenario(tmp_path, body.format(name=manifest.name)))
    assert str(caught.value) == f"{where}: {manifest} cannot be read: (manifest): line {line}, column 12: {NUL}"


def test_the_fleet_refusal_is_a_named_cli_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest, _ = _nul_manifest(tmp_path)
    scenario = _scenario(tmp_path, f"submissions: [{{manifest: {manifest.name}}}]\n")
    assert cli_main(["sandbox", "--scenario", str(scenario)]) == EXIT_INVALID
    captured = capsys.readouterr()
    assert "cannot be read: (manifest): line" in captured.err
    assert "Traceback" not in captured.out + captured.err
