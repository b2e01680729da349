"""The Retry and Catch profiles of spotline_dev.asl.profiles are the only ones the state machines
use, and what they promise holds."""

from __future__ import annotations

from typing import Any

import pytest

from spotline_dev.asl import profiles
from spotline_dev.asl.build import MACHINES
from spotline_dev.asl.builder import Retrier

NAMED = {name: value for name, value in vars(profiles).items() if isinstance(value, Retrier)}


def _tasks() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{machine}.{name}", state)
        for machine, build in MACHINES.items()
        for name, state in build().to_asl()["States"].items()
        if state["Type"] == "Task"
    ]


def _named(retrier: dict[str, Any]) -> bool:
    if retrier["MaxAttempts"] == 0:
        return set(retrier) == {"ErrorEquals", "MaxAttempts"}  # never(...)
    candidates = [*NAMED.values(), *(profiles.waiting_for_a_token(named) for named in NAMED.values())]
    return retrier in [candidate.to_asl() for candidate in candidates]


@pytest.mark.parametrize(("task", "state"), _tasks(), ids=[task for task, _ in _tasks()])
def test_every_retrier_of_every_task_is_a_named_one(task: str, state: dict[str, Any]) -> None:
    assert state["Retry"], f"{task} has no Retry"
    assert all(_named(retrier) for retrier in state["Retry"]), f"{task} spells a retrier of its own"


def test_every_lambda_task_tries_its_transient_failures_first_and_catches_the_rest() -> None:
    for task, state in _tasks():
        if state["Resource"].startswith("arn:aws:states:::lambda:"):
            transient = profiles.TRANSIENT_LAMBDA.to_asl()
            assert transient in state["Retry"][:2], task  # after CheckpointCopyIncomplete on SubmitTrainingJob
            assert state["Catch"][-1]["ErrorEquals"] == ["States.ALL"], task


def test_step_faileds_cap_never_shortens_one_of_its_waits() -> None:
    """STEP_FAILED stands for two variants that differed only by MaxDelaySeconds 60
    (ContinueInNewExecution and StopSpotJob had none): its longest wait is under the cap, so the
    cap changes no wait and the two behave the same."""
    retrier = profiles.STEP_FAILED
    assert retrier.interval is not None and retrier.backoff is not None and retrier.max_delay is not None
    assert retrier.interval * retrier.backoff ** (retrier.attempts - 1) < retrier.max_delay


def test_a_token_wait_never_retries_its_timeout() -> None:
    for task, state in _tasks():
        if "TimeoutSecondsPath" in state:
            retried = {error for retrier in state["Retry"] for error in retrier["ErrorEquals"]}
            assert "States.Timeout" not in retried, task
            assert state["Catch"][0]["ErrorEquals"] == ["States.Timeout"], task


def test_waiting_for_a_token_drops_the_timeout_only() -> None:
    waiting = profiles.waiting_for_a_token(profiles.STEP_FAILED)
    assert waiting.errors == ("States.TaskFailed",)
    assert waiting.to_asl() | {"ErrorEquals": None} == profiles.STEP_FAILED.to_asl() | {"ErrorEquals": None}


def test_never_retries_nothing_and_says_so_in_two_fields() -> None:
    assert profiles.never("ManifestUnreadable").to_asl() == {"ErrorEquals": ["ManifestUnreadable"], "MaxAttempts": 0}
