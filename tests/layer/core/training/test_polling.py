"""When to look again: at the policy's own moment while spot is missing, else the safety net."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from spotline.core.training.polling import (
    MAX_SAFETY_SECONDS,
    MIN_SAFETY_SECONDS,
    MIN_SECONDS,
    next_check,
    safety_interval,
)
from spotline.core.training.status import TrainingStatus

BASE = TrainingStatus(
    state="training",
    reason_class=None,
    reason="",
    batch_status="RUNNING",
    secondary_status="Training",
    training_job_name="j",
    training_seconds=0,
    billable_seconds=0,
    interruptions=0,
    capacity_short=False,
    started_at=None,
    ended_at=None,
)
HOURS = 3600


def _check(
    state: str = "training",
    *,
    expected: int | None = 72 * HOURS,
    slack: float | None = None,
    may_switch: bool = True,
) -> int:
    status = replace(BASE, state=state)  # type: ignore[arg-type]
    return next_check(status, expected_duration=expected, slack_seconds=slack, may_switch=may_switch).seconds


def test_the_safety_interval_is_one_percent_of_the_work_within_bounds() -> None:
    assert safety_interval(72 * HOURS) == 2592
    assert safety_interval(2 * HOURS) == MIN_SAFETY_SECONDS
    assert safety_interval(28 * 24 * HOURS) == MAX_SAFETY_SECONDS
    assert safety_interval(None) == MAX_SAFETY_SECONDS


def test_the_check_comes_when_the_slack_would_run_out_without_progress() -> None:
    for state in ("queued", "starting", "interrupted", "training"):
        assert _check(state, slack=1234.2) == 1235
    assert _check("interrupted", slack=10) == MIN_SECONDS
    assert _check("interrupted", slack=-50) == MIN_SECONDS


def test_plenty_of_slack_or_no_switch_to_make_waits_for_events_and_the_safety_net() -> None:
    assert _check("interrupted", slack=10 * HOURS) == 2592  # the safety check comes first
    assert _check("interrupted", slack=None) == 2592  # no deadline
    assert _check("interrupted", slack=600, may_switch=False) == 2592  # on-demand, or spot-only


def test_the_reason_says_which_it_is() -> None:
    waiting = next_check(
        replace(BASE, state="interrupted"), expected_duration=HOURS, slack_seconds=300, may_switch=True
    )
    assert waiting.reason == "when the slack would run out while spot capacity is missing"
    training = next_check(BASE, expected_duration=HOURS, slack_seconds=300, may_switch=True)
    assert training.reason == "when the slack would run out if training made no progress"
    safe = next_check(BASE, expected_duration=HOURS, slack_seconds=HOURS, may_switch=True)
    assert "safety" in safe.reason


@given(
    state=st.sampled_from(["queued", "starting", "training", "interrupted"]),
    expected=st.one_of(st.none(), st.integers(60, 28 * 24 * HOURS)),
    slack=st.one_of(st.none(), st.floats(-1e6, 1e7)),
    may_switch=st.booleans(),
)
def test_always_within_bounds(state: str, expected: int | None, slack: float | None, may_switch: bool) -> None:
    seconds = _check(state, expected=expected, slack=slack, may_switch=may_switch)
    assert MIN_SECONDS <= seconds <= safety_interval(expected) <= MAX_SAFETY_SECONDS
