"""`spotline validate` names bad bytes (a NUL even in a comment, bytes that are not UTF-8) with
their position, and still checks every other file of the batch (issue 45)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spotline_dev.cli.entry import main as cli_main
from spotline_dev.exit_codes import EXIT_INVALID

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "manifests" / "ranker-v2.yaml"
NOW = ["--now", "2026-11-29T08:00:00Z"]
NUL_REFUSAL = (
    "(manifest): line {line}, column 12: control character U+0000 (NUL); "
    "remove it (no control character is allowed anywhere, not even in a comment)"
)


def _batch(tmp_path: Path) -> tuple[Path, Path, int]:
    body = EXAMPLE.read_bytes()
    nul = tmp_path / "nul-in-a-comment.yaml"
    nul.write_bytes(body + b"# reviewed \x00 by ops\n")
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"# Z\xfcrich\n" + body)
    return nul, latin1, body.count(b"\n") + 1


def test_each_bad_file_is_named_and_the_rest_of_the_batch_is_still_validated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nul, latin1, line = _batch(tmp_path)
    assert cli_main(["validate", *NOW, str(nul), str(EXAMPLE), str(latin1)]) == EXIT_INVALID
    assert capsys.readouterr().out.splitlines() == [
        f"{nul}: {NUL_REFUSAL.format(line=line)}",
        f"{EXAMPLE}: valid",
        f"{latin1}: (manifest): manifest is not UTF-8 (invalid byte at offset 3): byte 0xFC at line 1, column 4",
    ]


def test_the_json_report_carries_the_refusal_as_a_path_and_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nul, _, line = _batch(tmp_path)
    assert cli_main(["validate", "--json", *NOW, str(nul), str(EXAMPLE)]) == EXIT_INVALID
    refused, valid = json.loads(capsys.readouterr().out)
    assert refused["valid"] is False and valid["valid"] is True
    path, message = NUL_REFUSAL.format(line=line).split(": ", 1)
    assert refused["errors"] == [{"path": path, "message": message}]
