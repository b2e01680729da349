"""The README shows what its commands print, on any date: the quick commands are run and
compared exactly (scripts/readme_commands.py), and the sandbox excerpt is a piece of a real run."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

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
        run_here = name.startswith(COMMANDS.QUICK + COMMANDS.SLOW)  # type: ignore[attr-defined]
        assert run_here or any(p in example.command for p in COMMANDS.CHECKED_ELSEWHERE), example  # type: ignore[attr-defined]


def test_the_sandbox_excerpt_is_a_piece_of_a_real_run() -> None:
    """`make sandbox` as a user runs it, in a process of its own: the stacks of one process draw
    their ids (hence execution names) from seeds that follow one another (local_aws.py)."""
    excerpt = re.search(r"```\n(== search-ranking-urgent-retrain.*?)```", README.read_text(), re.S)
    assert excerpt, "the Quick start excerpt moved"
    done = subprocess.run(
        [sys.executable, "-m", "spotline_dev.cli", "sandbox"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert excerpt.group(1) in done.stdout


def test_the_operating_a_stack_block_is_what_its_commands_print() -> None:
    """scripts/operate_demo.py runs the commands against a local stack, the on-call side taking
    part in the virtual clock: the block must come out exactly, run after run."""
    done = subprocess.run(
        [sys.executable, "scripts/operate_demo.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_benchmarks_figures_are_compared_all_but_its_timings() -> None:
    shown = '{"status": "SUCCEEDED", "historyEvents": 1361, "wallSeconds": 17.9}'
    example = COMMANDS.Example(1, ".venv/bin/python benchmarks/lifecycle_72h.py", shown)  # type: ignore[attr-defined]
    assert COMMANDS.shows(example, shown.replace("17.9", "24.6"))  # type: ignore[attr-defined]
    assert not COMMANDS.shows(example, shown.replace("1361", "1362"))  # type: ignore[attr-defined]
    figures = '{"cost_usd": 12.5, "importMillisecondsMedianOf5": {"intake": 268.5}}'
    masked = COMMANDS.without_timings(figures)  # type: ignore[attr-defined]
    assert masked == '{"cost_usd": 12.5, "importMillisecondsMedianOf5": {"intake": #}}'
