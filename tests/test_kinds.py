"""Each test is marked by its kind (tests/kinds.py, from conftest.py), so `pytest -m unit` runs
no test that starts the local stack or replays a scenario."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kinds import TESTS, kind_of
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.sandbox.replay import run_scenario

HERE = Path(__file__)


def _pure() -> int:
    return sum(range(3))


def _starts_a_stack() -> None:
    with start_local_stack():
        pass


@contextmanager
def _stack_around() -> Iterator[None]:
    _starts_a_stack()
    yield


def _through_a_helper() -> None:
    with _stack_around():
        _pure()


def _replays() -> None:
    run_scenario(None)  # type: ignore[arg-type]


def _runs_the_sandbox_command() -> None:
    print(["sandbox", "--scenario", "examples/scenarios/default.yaml"])


class _Rig:
    def start(self) -> None:
        _starts_a_stack()


def _with_a_rig() -> None:
    _Rig().start()


STACKS = {"plain": (_pure,), "with a stack": (_starts_a_stack,)}


def _from_a_table(kind: str) -> None:
    (run,) = STACKS[kind]
    run()


@pytest.mark.unit  # names stack starters, runs none: a test may say its own kind
def test_a_test_is_unit_unless_it_or_what_it_calls_starts_the_stack_or_replays() -> None:
    assert kind_of(HERE, [_pure]) == "unit"
    assert kind_of(HERE, [_pure, _starts_a_stack]) == "stack"  # a fixture of the test starts it
    assert kind_of(HERE, [_through_a_helper]) == "stack"  # through a @contextmanager helper
    assert kind_of(HERE, [_with_a_rig]) == "stack"  # through a class of the test tree
    assert kind_of(HERE, [_from_a_table]) == "stack"  # through a function a module's table holds
    assert kind_of(HERE, [_replays]) == "scenario"
    assert kind_of(HERE, [_runs_the_sandbox_command]) == "scenario"


@pytest.mark.unit  # names stack starters, runs none: a test may say its own kind
def test_the_contract_folders_are_contracts_whatever_they_run() -> None:
    assert kind_of(TESTS / "template" / "test_template.py", [_pure]) == "contract"
    assert kind_of(TESTS / "architecture" / "test_x.py", [_starts_a_stack]) == "contract"
    assert kind_of(TESTS / "layer" / "core" / "test_x.py", [_pure]) == "unit"


def test_conftest_marks_each_test_by_its_kind(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("unit")
    assert not request.node.get_closest_marker("stack")


@pytest.fixture
def would_start_a_stack() -> bool:
    """Names a stack starter on a path it never takes: the marking reads code, it runs nothing."""
    if HERE.name == "never.py":
        _starts_a_stack()
    return False


def test_conftest_marks_a_test_whose_fixture_starts_the_stack(
    request: pytest.FixtureRequest, would_start_a_stack: bool
) -> None:
    assert request.node.get_closest_marker("stack")
    assert not request.node.get_closest_marker("unit")
