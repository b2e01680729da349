"""The permission check covers every function: a run of the whole suite fails when some function of
the template never had a call checked against its role (spotline_dev.harness.local.permissions). Each
xdist worker writes the functions it saw; the controller adds them up at the end."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from spotline_dev.harness.local.permissions import checker
from spotline_dev.harness.local.template import load_template, resources_of_type

TESTS = Path(__file__).resolve().parent
_KEY = "permission_coverage_dir"


def _whole_suite(config: pytest.Config) -> bool:
    option = config.option
    if option.keyword or option.markexpr or getattr(option, "lf", False) or getattr(option, "deselect", None):
        return False
    return all(Path(str(arg).split("::")[0]).resolve() == TESTS for arg in config.args)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        config.stash[_DIR] = tempfile.mkdtemp(prefix="spotline-permissions-")


_DIR = pytest.StashKey[str]()
_MISSING = pytest.StashKey[list[str]]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput[_KEY] = node.config.stash[_DIR]


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        Path(workerinput[_KEY], f"{workerinput['workerid']}.json").write_text(json.dumps(sorted(checker.CHECKED)))
        return
    if not _whole_suite(config) or session.exitstatus != 0:
        return
    seen = set(checker.CHECKED)
    for written in Path(config.stash[_DIR]).glob("*.json"):
        seen |= set(json.loads(written.read_text()))
    functions = set(resources_of_type(load_template(), "AWS::Serverless::Function"))
    missing = sorted(functions - seen)
    if missing:
        config.stash[_MISSING] = missing
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    missing = config.stash.get(_MISSING, [])
    if missing:
        terminalreporter.write_line(
            f"permission check: no call of {', '.join(missing)} was checked against its role in the whole suite",
            red=True,
        )
