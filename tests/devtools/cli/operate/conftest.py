"""The local stack standing in for a deployed one: the commands find it with DescribeStacks
(`spotline-local`), as they would a stack in an account. What the local stack does not do by
itself, EventBridge delivering an upload's event to Intake and an execution's end to
StopExecutionJobs, happens while a command waits."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from spotline_dev.cli.operate import deployment
from spotline_dev.harness.local.handles import LocalStack

DELIVERED_WHILE_WAITING = ("aws.s3", "aws.states")


def _as_deployed(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> LocalStack:
    def pause(_seconds: float) -> None:
        stack.deliver_events(sources=DELIVERED_WHILE_WAITING)
        time.sleep(0.01)  # the execution runs on in its own thread, on the virtual clock

    monkeypatch.setattr(deployment.SURROUNDINGS, "pause", pause)
    monkeypatch.setattr(deployment.SURROUNDINGS, "now", stack.clock.now)
    return stack


@pytest.fixture
def deployed(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    """The example's stack (two-hour training), as a deployed stack."""
    yield _as_deployed(stack, monkeypatch)


@pytest.fixture
def deployed_long(long_training: LocalStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    """The example's stack with an eight-hour training, as a deployed stack."""
    yield _as_deployed(long_training, monkeypatch)


@pytest.fixture
def deployed_scoring(scoring_stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    """The example scoring night's stack (tests/conftest.py), as a deployed stack."""
    yield _as_deployed(scoring_stack, monkeypatch)
