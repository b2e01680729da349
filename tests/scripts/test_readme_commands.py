"""The README shows what its commands print, on any date: the quick commands are run and
compared exactly (scripts/readme_commands.py), and the sandbox excerpt is a piece of a real run."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from spotline_dev.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _script() -> object:
    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / "scripts" / "readme_commands.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_commands"] = module
    spec.loader.exec_module(module)
    return module


COMMANDS = _script()


@pytest.mark.parametrize("example", COMMANDS.quick_examples(), ids=lambda e: f"README.md:{e.line}")  # type: ignore[attr-defined]
def test_each_quick_readme_command_prints_what_the_readme_shows(example: object) -> None:
    assert COMMANDS.run(example.command) == example.shown  # type: ignore[attr-defined]


def test_the_readme_shows_commands_of_every_kind_and_says_how_each_is_checked() -> None:
    found = COMMANDS.examples(README.read_text())  # type: ignore[attr-defined]
    assert len(COMMANDS.quick_examples()) >= 3  # type: ignore[attr-defined]
    for example in found:
        name = COMMANDS.program(example.command)  # type: ignore[attr-defined]
        quick = name.startswith(COMMANDS.QUICK)  # type: ignore[attr-defined]
        assert quick or any(p in example.command for p in COMMANDS.CHECKED_ELSEWHERE), example  # type: ignore[attr-defined]


def test_the_sandbox_excerpt_is_a_piece_of_a_real_run(capsys: pytest.CaptureFixture[str]) -> None:
    excerpt = re.search(r"```\n(== search-ranking-urgent-retrain.*?)```", README.read_text(), re.S)
    assert excerpt, "the Quick start excerpt moved"
    assert cli_main(["sandbox"]) == 0
    assert excerpt.group(1) in capsys.readouterr().out
