"""The command line's conventions: --version, help for every option, examples, --output on
every command that prints data, stdin, the documented exit codes."""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import EXAMPLE_MANIFEST, NOW, ROOT
from devtools.research.simulate.fixture_traces import fixture_logs
from spotline_dev.cli.entry import EXIT_BROKEN_PIPE, EXIT_CODES, build_parser, main
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_USAGE

PRINTS_DATA = ("validate", "render", "sandbox", "explain", "simulate", "submit", "runs", "status", "logs", "cancel")
DEPLOYED = ("submit", "runs", "status", "logs", "cancel")
TEAM_ACTIONS = ("list", "show", "validate", "diff", "apply", "history", "rollback", "approve", "remove")


def _commands() -> dict[str, argparse.ArgumentParser]:
    (subparsers,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(subparsers.choices)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out.strip() == "spotline 0.1.0"


def _parsers(parser: argparse.ArgumentParser, name: str = "spotline") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """The parser and those of its commands, and of theirs, with their command lines."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {command}")


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]


def test_every_option_of_every_command_has_help() -> None:
    parsers = list(_parsers(build_parser()))
    assert len(parsers) == 1 + len(_commands()) + len(TEAM_ACTIONS)  # spotline teams <action>
    for name, parser in parsers:
        for action in _options(parser):
            assert action.help and action.help.strip(), f"{name} {action.dest}: no help"
            assert action.help != argparse.SUPPRESS, f"{name} {action.dest}: hidden from --help"
        for command in (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)):
            for choice in command._choices_actions:
                assert choice.help, f"{name} {choice.dest}: no help in the list of commands"


def _example_argv(line: str) -> list[str]:
    """An example line's `spotline` arguments: the shell's comment, the other commands of a pipe
    and a redirection left out."""
    words = shlex.split(line, comments=True)
    pipeline: list[list[str]] = [[]]
    for word in words:
        if word == "|":
            pipeline.append([])
        else:
            pipeline[-1].append(word)
    (command,) = [part for part in pipeline if part[:1] == ["spotline"]]
    if ">" in command:
        command = command[: command.index(">")]
    return command[1:]


def test_every_example_of_every_help_parses_with_the_real_parser() -> None:
    """An example that names an option the command lacks (`from-trainer -o`) fails here."""
    checked = 0
    for name, parser in _parsers(build_parser()):
        lines = str(parser.epilog or "").split("examples:\n", 1)[1:]
        for line in (line.strip() for text in lines for line in text.splitlines() if line.startswith("  ")):
            argv = _example_argv(line)
            try:
                build_parser().parse_args(argv)
            except SystemExit as exc:
                raise AssertionError(f"{name}: the example {line!r} does not parse") from exc
            checked += 1
    assert checked >= 2 * len(_commands())


def test_every_option_with_a_default_says_it() -> None:
    for name, parser in _parsers(build_parser()):
        for action in _options(parser):
            if action.option_strings and action.default not in (None, False, [], argparse.SUPPRESS):
                assert "default" in str(action.help), f"{name} {action.option_strings[0]}: {action.default!r} untold"


def _simulate(folder: Path) -> list[str]:
    traces = fixture_logs(folder / "traces")
    grid = ["--work-hours", "4", "--slack", "50", "--start-every-hours", "12", "--jobs", "2", "--no-plot"]
    return ["simulate", "--traces", str(traces), "--out", str(folder / "out"), *grid]


@pytest.mark.parametrize("command", ["render", "simulate"])
def test_a_reader_that_went_away_stops_the_command_quietly(command: str, tmp_path: Path) -> None:
    """`spotline ... | head`: the pipe closes while the command still has output to write."""
    argv = _simulate(tmp_path) if command == "simulate" else ["render", str(EXAMPLE_MANIFEST), "--now", NOW.isoformat()]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte, as head after its lines
    try:
        done = subprocess.run(
            [sys.executable, "-m", "spotline_dev.cli.entry", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""  # no BrokenPipeError traceback, no "Exception ignored"
    assert done.returncode == EXIT_BROKEN_PIPE


def test_every_command_that_prints_data_takes_output_json_and_every_command_shows_examples() -> None:
    commands = _commands()
    for name in PRINTS_DATA:
        (output,) = [a for a in commands[name]._actions if a.dest == "output" and a.option_strings == ["--output"]]
        assert output.choices == ("table", "json"), name
        (short,) = [a for a in commands[name]._actions if a.option_strings == ["--json"]]
        assert (short.dest, short.const) == ("output", "json"), name  # `spotline runs --json` as anywhere else
    for name in DEPLOYED:
        options = {o for a in commands[name]._actions for o in a.option_strings}
        assert {"--stack", "--region", "--profile"} <= options, name
    (actions,) = [a for a in commands["teams"]._actions if isinstance(a, argparse._SubParsersAction)]
    assert tuple(actions.choices) == TEAM_ACTIONS
    for name, parser in actions.choices.items():
        options = {o for a in parser._actions for o in a.option_strings}
        assert {"--stack", "--region", "--profile", "--output", "--json"} <= options, name
        assert parser.epilog and parser.epilog.startswith(f"examples:\n  spotline teams {name}"), name
    for name, parser in commands.items():
        assert parser.epilog and parser.epilog.startswith("examples:\n  spotline " + name), name


def test_the_exit_codes_are_documented_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == EXIT_OK
    out = capsys.readouterr().out
    assert EXIT_CODES in out
    for code in ("0", "1", "2", "3", "4", "130", "141"):
        assert f"\n  {code} " in out


def test_validate_reads_standard_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(EXAMPLE_MANIFEST.read_bytes())))
    assert main(["validate", "-", "--now", NOW.isoformat(), "--output", "json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out) == [{"file": "-", "valid": True, "errors": [], "warnings": []}]
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


def test_validate_strict_fails_on_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A deadline that leaves no room for spot is a warning: exit 0, or 1 with --strict (for CI)."""
    late = "2026-11-29T16:30:00Z"  # 8h30m after NOW for 8h of work: no room for spot
    text = EXAMPLE_MANIFEST.read_text().replace('deadline: "2026-12-02T06:00:00Z"', f'deadline: "{late}"')
    path = tmp_path / "tight.yaml"
    path.write_text(text)
    assert main(["validate", str(path), "--now", NOW.isoformat()]) == EXIT_OK
    assert "warning:" in capsys.readouterr().out
    assert main(["validate", str(path), "--now", NOW.isoformat(), "--strict"]) == EXIT_INVALID
    assert main(["validate", str(EXAMPLE_MANIFEST), "--now", NOW.isoformat(), "--strict"]) == EXIT_OK


def test_render_output_json_is_the_request_as_sent(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", str(EXAMPLE_MANIFEST), "--now", NOW.isoformat(), "--output", "json"]) == EXIT_OK
    request = json.loads(capsys.readouterr().out)  # one JSON document
    assert request["serviceJobType"] == "SAGEMAKER_TRAINING"
    assert isinstance(request["serviceRequestPayload"], str)


def test_explain_takes_its_stack_from_spotline_stack(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPOTLINE_STACK", raising=False)
    assert main(["explain", "some-run"]) == EXIT_USAGE
    assert "set $SPOTLINE_STACK" in capsys.readouterr().err
    looked_up: list[str] = []

    def execution_arn_in_stack(name: str, stack: str, region: str | None) -> str:
        looked_up.append(stack)
        raise ValueError("stop here")

    monkeypatch.setenv("SPOTLINE_STACK", "from-the-environment")
    monkeypatch.setattr("spotline_dev.explain.execution_arn_in_stack", execution_arn_in_stack)
    main(["explain", "some-run", "--region", "us-east-1"])
    assert looked_up == ["from-the-environment"]
