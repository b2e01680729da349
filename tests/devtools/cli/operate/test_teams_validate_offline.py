"""`spotline teams validate FILE` without a stack: a team lead checks an entry offline before
proposing it (the JSON Schema and each entry's own rules); with --stack, the stack's checks too.

The command runs as the command table runs a command that needs no stack (`on_stack=False`,
`cli.table.runner`): the table entry of `teams validate` is another owner's change (issue 50)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from conftest import ROOT
from devtools.cli.operate.printed import printed_lines
from spotline_dev.cli.entry import build_parser, main
from spotline_dev.cli.table import COMMANDS, runner
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_USAGE
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import STACK

EXAMPLE = "examples/teams/search-ranking-g6.json"
PAGE = ROOT / "docs" / "teams" / "team-policy.md"


@pytest.fixture(autouse=True)
def no_stack_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPOTLINE_STACK", raising=False)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No way to a stack: connecting fails the test."""

    def connect(*args: object, **kwargs: object) -> None:
        raise AssertionError("connected to a stack")

    monkeypatch.setattr("spotline_dev.cli.operate.commands.connect", connect)


def _validate(*argv: str) -> int:
    """`spotline teams validate ...` as the table runs a command that needs no stack."""
    (command,) = [c for c in COMMANDS if c.name == "teams validate"]
    args: argparse.Namespace = build_parser().parse_args(["teams", "validate", *argv])
    return runner(dataclasses.replace(command, on_stack=False))(args)


@pytest.mark.usefixtures("offline")
def test_a_policy_file_is_validated_offline(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert _validate(EXAMPLE) == EXIT_OK
    assert capsys.readouterr().out == (
        f"{EXAMPLE}: valid offline: 1 teams (not checked without --stack: quota types and totals within "
        "TrainingCapacity, quota shares, resources other teams hold)\n"
    )
    assert _validate(EXAMPLE, "--json") == EXIT_OK
    assert json.loads(capsys.readouterr().out) == {"file": EXAMPLE, "valid": True, "teams": 1, "stack": None}


@pytest.mark.usefixtures("offline")
def test_offline_a_bad_entry_is_refused_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads((ROOT / EXAMPLE).read_text())
    document["teams"]["search-ranking"]["maxInstances"] = 0
    document["teams"]["search-ranking"]["instanceFamilies"] = ["g5", "G6!"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    assert _validate(str(bad)) == EXIT_INVALID
    err = capsys.readouterr().err
    assert f"{bad}: teams.search-ranking.maxInstances: must be at least 1" in err
    assert f"{bad}: teams.search-ranking.instanceFamilies[1]:" in err
    assert _validate(str(tmp_path / "missing.json")) == EXIT_USAGE
    assert "usage error:" in capsys.readouterr().err


@pytest.mark.usefixtures("offline")
def test_the_page_shows_what_the_offline_command_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    text = PAGE.read_text()
    start = text.index(f"$ spotline teams validate {EXAMPLE}\n")
    shown = text[start : text.index("```", start)].splitlines()
    assert _validate(EXAMPLE) == EXIT_OK
    assert shown == [f"$ spotline teams validate {EXAMPLE}", *capsys.readouterr().out.splitlines(), "(exit 0)"]


def test_with_a_stack_the_stacks_checks_come_too(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert _validate(EXAMPLE, "--stack", STACK) == EXIT_OK
    assert printed_lines(capsys.readouterr().out) == [f"{EXAMPLE}: valid for stack {STACK}: 1 teams, 1 would change"]
    over = "examples/teams/search-ranking-over-capacity.json"
    assert _validate(over) == EXIT_OK  # offline: its quotas fit no stack's capacity, which needs the stack
    assert _validate(over, "--stack", STACK) == EXIT_INVALID
    assert "more than the service environment's 8 (TrainingCapacity)" in capsys.readouterr().err


def test_the_command_line_validates_without_a_stack(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["teams", "validate", EXAMPLE]) == EXIT_OK
