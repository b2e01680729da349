"""Adaptive poll interval: bounded, short where things change, long in the middle."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from spotline.core.polling import MAX_SECONDS, MIN_SECONDS, next_poll_seconds
from spotline.core.status import TrainingStatus

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


def _poll(
    state: str = "training",
    trained: int = 0,
    expected: int | None = 72 * HOURS,
    since: float = 0,
    slack: float | None = None,
) -> int:
    status = replace(BASE, state=state, training_seconds=trained)  # type: ignore[arg-type]
    return next_poll_seconds(status, seconds_since_submit=since, expected_duration=expected, deadline_slack=slack)


def test_short_while_waiting_then_backing_off_and_short_early_in_training() -> None:
    assert _poll("queued", since=30) == 60
    assert _poll("queued", since=600) == 300
    assert _poll("queued", since=3600) == 900
    assert _poll("starting") == 60
    status = replace(BASE, state="interrupted")
    assert (
        next_poll_seconds(status, seconds_since_submit=50 * HOURS, expected_duration=None, seconds_in_state=240) == 120
    )
    assert _poll("training", trained=60) == 300


def test_long_in_the_middle_of_a_long_run_and_shorter_near_the_end() -> None:
    assert _poll(trained=10 * HOURS) == MAX_SECONDS
    near_end = _poll(trained=71 * HOURS)
    assert near_end == 900
    assert _poll(trained=72 * HOURS - 600) == 300


def test_a_tight_deadline_shortens_the_interval() -> None:
    assert _poll(trained=10 * HOURS, slack=2 * HOURS) == 1800
    assert _poll(trained=10 * HOURS, slack=60) == MIN_SECONDS


@given(
    state=st.sampled_from(["queued", "starting", "training", "interrupted"]),
    trained=st.integers(0, 200 * HOURS),
    expected=st.one_of(st.none(), st.integers(60, 100 * HOURS)),
    since=st.floats(0, 1e7),
    slack=st.one_of(st.none(), st.floats(-1e6, 1e7)),
)
def test_always_within_bounds(
    state: str, trained: int, expected: int | None, since: float, slack: float | None
) -> None:
    assert MIN_SECONDS <= _poll(state, trained, expected, since, slack) <= MAX_SECONDS
