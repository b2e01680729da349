"""The command line's conventions: --version, help for every option, examples, --output on
every command that prints data, stdin, the documented exit codes."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from conftest import EXAMPLE_MANIFEST, NOW
from spotline_dev.cli import EXIT_CODES, build_parser, main
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_USAGE

PRINTS_DATA = ("validate", "sandbox", "explain", "simulate", "submit", "runs", "status", "logs", "cancel")
DEPLOYED = ("submit", "runs", "status", "logs", "cancel")


def _commands() -> dict[str, argparse.ArgumentParser]:
    (subparsers,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(subparsers.choices)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out.strip() == "spotline 0.1.0"


def test_every_option_of_every_command_has_help() -> None:
    for name, parser in _commands().items():
        for action in parser._actions:
            assert action.help and action.help != argparse.SUPPRESS, f"spotline {name} {action.dest}: no help"


def test_every_command_that_prints_data_takes_output_json_and_every_command_shows_examples() -> None:
    commands = _commands()
    for name in PRINTS_DATA:
        (output,) = [a for a in commands[name]._actions if a.dest == "output" and a.option_strings == ["--output"]]
        assert output.choices == ("table", "json"), name
    for name in DEPLOYED:
        options = {o for a in commands[name]._actions for o in a.option_strings}
        assert {"--stack", "--region", "--profile"} <= options, name
    for name, parser in commands.items():
        assert parser.epilog and parser.epilog.startswith("examples:\n  spotline " + name), name


def test_the_exit_codes_are_documented_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == EXIT_OK
    out = capsys.readouterr().out
    assert EXIT_CODES in out
    for code in ("0", "1", "2", "3", "4", "130"):
        assert f"\n  {code} " in out


def test_validate_reads_standard_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(EXAMPLE_MANIFEST.read_bytes())))
    assert main(["validate", "-", "--now", NOW.isoformat(), "--output", "json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == [{"file": "-", "valid": True, "errors": []}]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"apiVersion: spotline/v1\n")))
    assert main(["validate", "-", "--json"]) == EXIT_INVALID  # --json stays as the short form


def test_deployed_commands_need_a_stack_and_a_known_profile(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPOTLINE_STACK", raising=False)
    assert main(["runs"]) == EXIT_USAGE
    assert "--stack NAME is needed (or set SPOTLINE_STACK)" in capsys.readouterr().err
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    assert main(["runs", "--stack", "spotline", "--profile", "no-such-profile"]) == EXIT_USAGE
    assert "no-such-profile" in capsys.readouterr().err
