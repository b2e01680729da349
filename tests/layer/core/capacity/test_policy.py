"""The deadline policy: spot prices, on-demand deadlines.

`decide` keeps a job on spot while on-demand could still finish it in time and moves it to
on-demand at the last safe moment, whether spot capacity is there or not (moving earlier never
makes the rest cheaper); an on-demand job goes back to spot only when the fleet sees spot capacity
and its slack covers a spot start-up. `uniform_progress_line` is the even schedule, for
reports. `backoff_seconds` spreads spot resubmissions with full jitter.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from builders import example_spec
from spotline.core.capacity.policy import (
    DEFAULT_RESTART_OVERHEAD_SECONDS,
    FIRST_CHECKPOINT_GUARD_SECONDS,
    MAX_BACKOFF_SECONDS,
    MEASURED_MARGIN_FRACTION,
    MIN_FIRST_CHECKPOINT_SECONDS,
    MIN_MEASURED_MARGIN_FRACTION,
    MIN_MEASURED_MARGIN_SECONDS,
    MIN_RETURN_WORK_SECONDS,
    MIN_SAFETY_MARGIN_SECONDS,
    SAFETY_MARGIN_FRACTION,
    SPOT_START_SECONDS,
    START_UP_ALLOWANCE_SECONDS,
    Decision,
    JobClock,
    backoff_seconds,
    decide,
    first_checkpoint_for,
    first_checkpoint_minutes,
    first_checkpoint_seconds,
    margin_of,
    measured_margin_fraction,
    measured_work_seconds,
    no_option_left,
    on_demand_needs,
    out_of_reach,
    remaining_work,
    return_slack,
    safety_margin,
    uniform_progress_line,
)

VALIDATED_AT = datetime(2026, 11, 29, tzinfo=UTC)
MINUTE = 60
HOUR = 3600
DAY = 24 * HOUR


SPEC = example_spec(VALIDATED_AT)
START = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
DEADLINE = SPEC.deadline_at
assert DEADLINE is not None
WORK = float(SPEC.expected_duration_seconds or SPEC.max_runtime_seconds)


def _clock(
    *,
    now: datetime = START,
    deadline: datetime | None = DEADLINE,
    work: float = WORK,
    progress: float = 0.0,
    capacity: str = "spot",
    spot_missing: bool = False,
    overhead: float = DEFAULT_RESTART_OVERHEAD_SECONDS,
    started_at: datetime = START,
) -> JobClock:
    assert capacity in ("spot", "on-demand")
    return JobClock(
        now=now,
        started_at=started_at,
        deadline=deadline,
        total_work_seconds=work,
        progress=progress,
        capacity="spot" if capacity == "spot" else "on-demand",
        spot_missing=spot_missing,
        restart_overhead_seconds=overhead,
    )


def _time_left(job: JobClock) -> float:
    assert job.deadline is not None
    return (job.deadline - job.now).total_seconds()


@st.composite
def spot_jobs(draw: st.DrawFn, *, spot_missing: bool | None = None) -> JobClock:
    """A job on spot with a deadline; offsets in whole seconds so datetimes stay exact."""
    elapsed = draw(st.integers(min_value=0, max_value=20 * DAY))
    left = draw(st.integers(min_value=-DAY, max_value=20 * DAY))
    now = START + timedelta(seconds=elapsed)
    return _clock(
        now=now,
        deadline=now + timedelta(seconds=left),
        work=float(draw(st.integers(min_value=60, max_value=28 * DAY))),
        progress=draw(st.floats(min_value=0.0, max_value=1.0, allow_nan=False)),
        spot_missing=draw(st.booleans()) if spot_missing is None else spot_missing,
        overhead=float(draw(st.integers(min_value=0, max_value=2 * DAY))),
    )


@st.composite
def feasible_spot_jobs(draw: st.DrawFn, *, spot_missing: bool | None = None) -> JobClock:
    """A job on spot that on-demand could still finish in time: slack of 1s up to 10 days."""
    job = draw(spot_jobs(spot_missing=spot_missing))
    extra = draw(st.one_of(st.integers(min_value=1, max_value=600), st.integers(min_value=1, max_value=10 * DAY)))
    left = math.ceil(on_demand_needs(job)) + extra
    return replace(job, deadline=job.now + timedelta(seconds=left))


# --- the building blocks -------------------------------------------------------------------


def test_example_manifest_is_what_the_policy_sees() -> None:
    assert SPEC.strategy == "spot-first"
    assert WORK == 8 * HOUR
    assert SPEC.deadline == "2026-12-02T06:00:00Z"


@pytest.mark.parametrize(
    ("work", "margin"),
    [(0.0, 600.0), (HOUR, 600.0), (12_000.0, 600.0), (8 * HOUR, 1440.0), (28 * DAY, 0.05 * 28 * DAY)],
)
def test_safety_margin_is_five_percent_of_the_work_but_at_least_ten_minutes(work: float, margin: float) -> None:
    assert safety_margin(work) == pytest.approx(margin)


@given(st.floats(min_value=0, max_value=28 * DAY, allow_nan=False))
def test_safety_margin_never_below_the_minimum(work: float) -> None:
    margin = safety_margin(work)
    assert margin >= MIN_SAFETY_MARGIN_SECONDS
    assert margin >= SAFETY_MARGIN_FRACTION * work


@pytest.mark.parametrize(
    ("progress", "remaining"),
    [(0.0, 8 * HOUR), (0.25, 6 * HOUR), (1.0, 0.0), (-0.5, 8 * HOUR), (1.5, 0.0)],
)
def test_remaining_work_is_the_undone_fraction_clamped(progress: float, remaining: float) -> None:
    assert remaining_work(_clock(progress=progress)) == pytest.approx(remaining)


def test_on_demand_needs_remaining_work_plus_overhead_plus_margin() -> None:
    job = _clock(progress=0.75, overhead=1200)
    assert on_demand_needs(job) == pytest.approx(2 * HOUR + 1200 + 1440)


# --- on-demand and no deadline ---------------------------------------------------------------


@given(spot_jobs(), st.booleans())
def test_on_demand_continues_unless_asked_whether_spot_is_back(job: JobClock, training: bool) -> None:
    decision = decide(replace(job, capacity="on-demand", on_demand_training=training))
    assert decision.verdict == "continue"
    assert decision.reason == "on on-demand capacity"
    assert decision.slack_seconds == pytest.approx(_time_left(job) - on_demand_needs(job))


@given(spot_jobs(), st.booleans(), st.booleans())
def test_on_demand_returns_to_spot_only_when_seen_training_and_the_slack_covers_a_spot_start(
    job: JobClock, seen: bool, training: bool
) -> None:
    job = replace(job, capacity="on-demand", spot_seen=seen, on_demand_training=training)
    decision = decide(job)
    room = return_slack(job)
    assert room is not None
    returns = seen and training and room >= 0 and remaining_work(job) >= MIN_RETURN_WORK_SECONDS
    assert (decision.verdict == "return-to-spot") == returns
    assert decision.verdict != "switch-to-on-demand"
    if returns:  # the return leaves the last safe moment ahead: a spot start-up fits in the slack
        assert _time_left(job) >= on_demand_needs(job) + SPOT_START_SECONDS
        assert "spot capacity is back" in decision.reason


def test_a_return_to_spot_says_what_it_saw_and_what_slack_pays_for_it() -> None:
    job = replace(
        _clock(capacity="on-demand", work=8 * HOUR, progress=0.5),
        deadline=START + timedelta(hours=6),
        spot_seen=True,
        on_demand_training=True,
    )  # 6h left, on-demand needs 4h + 20m restart + 24m margin: 1h16m of slack
    decision = decide(job)
    assert decision.verdict == "return-to-spot"
    assert decision.reason == (
        "spot capacity is back (the fleet just saw it) and 1h16m of slack covers a 20m spot start-up with 56m to "
        "spare: back to spot from the last checkpoint, on-demand again at the last safe moment"
    )
    # The same job a few minutes of slack short, with spot unseen, or with little work left, stays.
    tight = replace(job, deadline=START + timedelta(hours=4, minutes=44 + 19))
    assert decide(tight).verdict == "continue"
    assert decide(tight).reason == "on on-demand capacity; too little slack or work left for a return to spot"
    assert decide(replace(job, spot_seen=False)).reason == "on on-demand capacity; no spot capacity seen here just now"
    assert decide(replace(job, on_demand_training=False)).reason == (
        "on on-demand capacity; a return to spot waits until the on-demand attempt trains (its start-up is paid)"
    )
    assert decide(replace(job, progress=0.96)).verdict == "continue"  # 19m12s of work left


@given(spot_jobs(), st.sampled_from(["spot", "on-demand"]))
def test_without_a_deadline_always_continues(job: JobClock, capacity: str) -> None:
    decision = decide(replace(job, deadline=None, capacity="spot" if capacity == "spot" else "on-demand"))
    assert decision.verdict == "continue"
    assert decision.slack_seconds is None


def test_without_a_deadline_the_reason_says_so() -> None:
    decision = decide(_clock(deadline=None, progress=0.0, spot_missing=True, now=START + timedelta(days=30)))
    assert decision == Decision("continue", "no deadline: spot for as long as it takes", None)


# --- last safe moment ----------------------------------------------------------------------


@given(spot_jobs())
def test_slack_is_time_left_minus_what_on_demand_needs(job: JobClock) -> None:
    decision = decide(job)
    assert decision.slack_seconds is not None
    assert decision.slack_seconds == pytest.approx(_time_left(job) - on_demand_needs(job), abs=1e-6)


@given(spot_jobs())
def test_switches_whenever_slack_is_not_positive_unless_it_is_already_too_late(job: JobClock) -> None:
    decision = decide(job)
    assert decision.slack_seconds is not None
    if decision.slack_seconds <= 0 and not out_of_reach(job):
        assert decision.verdict == "switch-to-on-demand"
        assert decision.reason.startswith("deadline at risk")


@given(spot_jobs(spot_missing=False))
def test_with_spot_available_switches_exactly_when_slack_is_not_positive(job: JobClock) -> None:
    decision = decide(job)
    assert decision.slack_seconds is not None
    expected = decision.slack_seconds <= 0 and not out_of_reach(job)
    assert (decision.verdict == "switch-to-on-demand") == expected


@given(spot_jobs())
def test_never_switches_when_on_demand_could_not_make_the_deadline_either(job: JobClock) -> None:
    decision = decide(job)
    left = _time_left(job)
    best = remaining_work(job) + max(0.0, job.restart_overhead_seconds - job.queue_wait_seconds)
    if left < best:
        assert decision.verdict == "continue"
        assert decision.reason.startswith("deadline out of reach: ")
    if decision.verdict == "switch-to-on-demand":  # a switch always leaves on-demand enough time
        assert left >= best


@pytest.mark.parametrize("spot_missing", [False, True])
def test_last_safe_moment_boundary_to_the_second(spot_missing: bool) -> None:
    # 75% done of 8h: 2h of work + 20m restart + 24m margin = 2h44m, with or without spot capacity.
    needs = 2 * HOUR + 20 * MINUTE + 24 * MINUTE
    started = DEADLINE - timedelta(seconds=needs + 2 * HOUR)
    at_boundary = _clock(
        now=DEADLINE - timedelta(seconds=needs),
        started_at=started,
        progress=0.75,
        overhead=1200,
        spot_missing=spot_missing,
    )
    assert on_demand_needs(at_boundary) == needs
    assert decide(at_boundary).verdict == "switch-to-on-demand"
    assert decide(at_boundary).slack_seconds == 0
    one_second_earlier = replace(at_boundary, now=at_boundary.now - timedelta(seconds=1))
    assert uniform_progress_line(one_second_earlier) < 0.75
    assert decide(one_second_earlier).verdict == "continue"
    assert decide(one_second_earlier).slack_seconds == 1


def test_deadline_at_risk_reason_names_the_numbers() -> None:
    job = _clock(now=DEADLINE - timedelta(hours=2, minutes=30), progress=0.75, overhead=1200)
    decision = decide(job)
    assert decision.verdict == "switch-to-on-demand"
    assert decision.slack_seconds == pytest.approx(-14 * MINUTE)
    assert decision.reason == (
        "deadline at risk: 2h30m left, on-demand needs 2h44m (2h of work + 20m restart + 24m margin)"
    )


def test_a_deadline_already_passed_is_out_of_reach_and_the_job_stays_on_spot() -> None:
    decision = decide(_clock(now=DEADLINE + timedelta(hours=1), progress=0.5))
    assert decision.verdict == "continue"
    assert decision.reason.startswith("deadline out of reach: 0s left, less than on-demand's 4h20m")
    assert decision.slack_seconds is not None and decision.slack_seconds < -HOUR


def test_between_the_last_safe_moment_and_out_of_reach_it_switches() -> None:
    # 2h of work left, a 20m restart, a 24m margin: at 2h30m left on-demand still makes it.
    decision = decide(_clock(now=DEADLINE - timedelta(hours=2, minutes=30), progress=0.75))
    assert decision.verdict == "switch-to-on-demand"
    assert decision.reason.startswith("deadline at risk: 2h30m left")


def test_on_track_reason_names_the_slack() -> None:
    # The example at submission: 2d22h to the deadline, 8h of work + 20m + 24m margin.
    decision = decide(_clock())
    assert decision.verdict == "continue"
    assert decision.slack_seconds == pytest.approx((DEADLINE - START).total_seconds() - 8 * HOUR - 1200 - 1440)
    assert decision.reason == "on track: 61h16m of slack on-demand would not need"


# --- monotonicity --------------------------------------------------------------------------


@given(spot_jobs(), st.integers(min_value=0, max_value=10 * DAY))
def test_later_checks_never_turn_a_switch_into_a_continue(job: JobClock, later_by: int) -> None:
    later = replace(job, now=job.now + timedelta(seconds=later_by))
    if decide(job).verdict == "switch-to-on-demand" and not out_of_reach(later):
        assert decide(later).verdict == "switch-to-on-demand"


@given(spot_jobs(), st.integers(min_value=0, max_value=10 * DAY))
def test_earlier_deadlines_never_turn_a_switch_into_a_continue(job: JobClock, earlier_by: int) -> None:
    assert job.deadline is not None
    earlier = replace(job, deadline=job.deadline - timedelta(seconds=earlier_by))
    if decide(job).verdict == "switch-to-on-demand" and not out_of_reach(earlier):
        assert decide(earlier).verdict == "switch-to-on-demand"


@given(spot_jobs(), st.floats(min_value=0.0, max_value=1.0, allow_nan=False))
def test_less_progress_never_turns_a_switch_into_a_continue(job: JobClock, less: float) -> None:
    behind = replace(job, progress=job.progress * less)
    if decide(job).verdict == "switch-to-on-demand" and not out_of_reach(behind):
        assert decide(behind).verdict == "switch-to-on-demand"


@given(spot_jobs(), st.integers(min_value=0, max_value=2 * DAY))
def test_larger_overhead_never_turns_a_switch_into_a_continue(job: JobClock, extra: int) -> None:
    slower = replace(job, restart_overhead_seconds=job.restart_overhead_seconds + extra)
    if decide(job).verdict == "switch-to-on-demand" and not out_of_reach(slower):
        assert decide(slower).verdict == "switch-to-on-demand"


@given(spot_jobs(), st.booleans())
def test_spot_capacity_alone_never_changes_the_verdict(job: JobClock, missing: bool) -> None:
    """Waiting for spot costs nothing; only the last safe moment moves a job."""
    assert decide(replace(job, spot_missing=missing)).verdict == decide(job).verdict


# --- safety: never "continue" when switching now would already be too late -----------------


@given(spot_jobs())
def test_continue_means_on_demand_started_now_still_makes_the_deadline(job: JobClock) -> None:
    decision = decide(job)
    if decision.verdict == "continue" and not out_of_reach(job):
        assert decision.slack_seconds is not None and decision.slack_seconds > 0
        assert _time_left(job) >= remaining_work(job) + job.restart_overhead_seconds + safety_margin(
            job.total_work_seconds
        )


@st.composite
def check_then_stalled_recheck(draw: st.DrawFn) -> tuple[JobClock, JobClock]:
    """A feasible job checked now, then re-checked later with no progress at all in between.

    The delay is drawn either anywhere up to the deadline or within seconds of the moment
    slack reaches zero (the last safe moment), where a bug would show."""
    job = draw(feasible_spot_jobs())
    first = decide(job)
    assume(first.verdict == "continue")
    assert first.slack_seconds is not None and first.slack_seconds > 0
    left = int(_time_left(job))
    to_last_safe_moment = int(first.slack_seconds)
    delay = draw(
        st.one_of(
            st.integers(min_value=0, max_value=left),
            st.integers(min_value=-120, max_value=120).map(lambda d: min(left, max(0, to_last_safe_moment + d))),
        )
    )
    return job, replace(job, now=job.now + timedelta(seconds=delay))


@given(check_then_stalled_recheck())
def test_a_stalled_job_that_still_gets_continue_can_always_switch_in_time(pair: tuple[JobClock, JobClock]) -> None:
    job, later = pair
    assert remaining_work(later) == remaining_work(job)  # no progress at all
    if decide(later).verdict == "continue" and not out_of_reach(later):
        assert later.deadline is not None
        assert later.now + timedelta(seconds=remaining_work(later) + later.restart_overhead_seconds) <= later.deadline
        assert _time_left(later) - remaining_work(later) - later.restart_overhead_seconds >= safety_margin(
            later.total_work_seconds
        )


@given(feasible_spot_jobs())
def test_the_last_continue_leaves_the_whole_margin(job: JobClock) -> None:
    """Walk a stalled job second by second around its last safe moment."""
    first = decide(job)
    assume(first.verdict == "continue")
    assert first.slack_seconds is not None
    last = int(first.slack_seconds)
    for offset in (last - 1, last, last + 1):
        if offset < 0:
            continue
        later = replace(job, now=job.now + timedelta(seconds=offset))
        decision = decide(later)
        if decision.verdict == "continue":
            assert _time_left(later) > on_demand_needs(later)
        else:
            assert decision.slack_seconds is not None and decision.slack_seconds <= 0


# --- uniform progress ----------------------------------------------------------------------


def test_uniform_line_without_a_deadline_is_zero() -> None:
    assert uniform_progress_line(_clock(deadline=None, now=START + timedelta(days=9))) == 0.0


@given(
    st.integers(min_value=0, max_value=2 * DAY),
    st.integers(min_value=1, max_value=20 * DAY),
    st.integers(min_value=0, max_value=3 * DAY),
)
def test_uniform_line_is_zero_until_start_plus_the_start_up_allowance(overhead: int, window: int, before: int) -> None:
    job = _clock(
        deadline=START + timedelta(seconds=START_UP_ALLOWANCE_SECONDS + window),
        now=START + timedelta(seconds=START_UP_ALLOWANCE_SECONDS - before),
        overhead=overhead,
    )
    assert uniform_progress_line(job) == 0.0


@given(spot_jobs(), st.integers(min_value=0, max_value=2 * DAY))
def test_uniform_line_does_not_depend_on_the_measured_overhead(job: JobClock, overhead: int) -> None:
    assert uniform_progress_line(replace(job, restart_overhead_seconds=overhead)) == uniform_progress_line(job)


@given(st.integers(min_value=0, max_value=2 * DAY), st.integers(min_value=1, max_value=20 * DAY))
def test_uniform_line_is_one_at_the_deadline(overhead: int, window: int) -> None:
    deadline = START + timedelta(seconds=START_UP_ALLOWANCE_SECONDS + window)
    assert uniform_progress_line(_clock(deadline=deadline, now=deadline, overhead=overhead)) == 1.0
    assert uniform_progress_line(_clock(deadline=deadline, now=deadline + timedelta(hours=5), overhead=overhead)) == 1.0


def test_uniform_line_is_one_when_the_start_up_allowance_eats_the_whole_window() -> None:
    job = _clock(deadline=START + timedelta(seconds=START_UP_ALLOWANCE_SECONDS / 2), now=START)
    assert uniform_progress_line(job) == 1.0


def test_uniform_line_halfway() -> None:
    deadline = START + timedelta(seconds=START_UP_ALLOWANCE_SECONDS + 100 * HOUR)
    job = _clock(deadline=deadline, now=START + timedelta(seconds=START_UP_ALLOWANCE_SECONDS + 50 * HOUR), overhead=7)
    assert uniform_progress_line(job) == pytest.approx(0.5)


@given(spot_jobs(), st.integers(min_value=0, max_value=10 * DAY))
def test_uniform_line_is_clamped_and_monotone_in_time(job: JobClock, later_by: int) -> None:
    line = uniform_progress_line(job)
    later = uniform_progress_line(replace(job, now=job.now + timedelta(seconds=later_by)))
    assert 0.0 <= line <= later <= 1.0


@given(feasible_spot_jobs(spot_missing=True))
def test_with_spot_missing_a_feasible_job_keeps_waiting_even_when_behind_the_line(job: JobClock) -> None:
    decision = decide(job)
    assert decision.slack_seconds is not None and decision.slack_seconds > 0
    assert decision.verdict == "continue"
    assert decision.reason.startswith("on track: ")


@given(feasible_spot_jobs(spot_missing=False))
def test_with_spot_available_being_behind_never_switches(job: JobClock) -> None:
    decision = decide(job)
    assert decision.slack_seconds is not None and decision.slack_seconds > 0
    assert decision.verdict == "continue"
    assert "behind schedule" not in decision.reason


def test_behind_the_line_without_spot_waits_until_the_last_safe_moment() -> None:
    # 25% done of 10h halfway to a deadline 100h away, no spot capacity: 50% was due on an even
    # schedule, but on-demand still fits with days to spare, and moving now would cost the same
    # on-demand hours as moving later while giving up any spot capacity that comes back.
    deadline = START + timedelta(seconds=1200 + 100 * HOUR)
    job = _clock(
        deadline=deadline,
        now=START + timedelta(seconds=1200 + 50 * HOUR),
        work=10 * HOUR,
        progress=0.25,
        spot_missing=True,
        overhead=1200,
    )
    assert uniform_progress_line(job) == pytest.approx(0.5)
    decision = decide(job)
    assert decision.verdict == "continue"
    assert decision.reason == "on track: 41h40m of slack on-demand would not need"
    at_last_moment = replace(job, now=deadline - timedelta(seconds=on_demand_needs(job)))
    assert decide(at_last_moment).verdict == "switch-to-on-demand"
    assert decide(at_last_moment).reason.startswith("deadline at risk")


def test_ahead_of_the_line_keeps_waiting_for_spot() -> None:
    deadline = START + timedelta(seconds=1200 + 100 * HOUR)
    job = _clock(
        deadline=deadline,
        now=START + timedelta(seconds=1200 + 50 * HOUR),
        work=10 * HOUR,
        progress=0.5,
        spot_missing=True,
        overhead=1200,
    )
    assert decide(job).verdict == "continue"


# --- back-off ------------------------------------------------------------------------------


def _ceiling(base: float, attempt: int, cap: float = MAX_BACKOFF_SECONDS) -> float:
    return min(cap, base * 2 ** (attempt - 1))


@given(
    st.integers(min_value=1, max_value=3600),
    st.integers(min_value=1, max_value=40),
    st.text(max_size=80),
    st.integers(min_value=1, max_value=4 * 3600),
)
def test_backoff_is_deterministic_and_within_full_jitter_bounds(base: int, attempt: int, seed: str, cap: int) -> None:
    wait = backoff_seconds(base, attempt, seed, cap)
    assert isinstance(wait, int)
    assert wait == backoff_seconds(base, attempt, seed, cap)
    assert 1 <= wait <= _ceiling(base, attempt, cap)


def test_backoff_spreads_across_seeds() -> None:
    waits = [backoff_seconds(120, 4, f"arn:aws:states:us-east-1:123456789012:execution:x:{n}:4") for n in range(100)]
    assert len(set(waits)) >= 60
    assert min(waits) < 0.2 * 960 and max(waits) > 0.8 * 960


@pytest.mark.parametrize("attempt", [1, 2, 3, 4, 5])
def test_backoff_ceiling_doubles_per_attempt(attempt: int) -> None:
    ceiling = _ceiling(120, attempt)
    waits = [backoff_seconds(120, attempt, f"seed-{n}") for n in range(300)]
    assert max(waits) <= ceiling
    assert max(waits) >= 0.9 * ceiling
    assert sum(waits) / len(waits) == pytest.approx(ceiling / 2, rel=0.2)


@pytest.mark.parametrize("attempt", [6, 10, 50, 2000])
def test_backoff_is_capped(attempt: int) -> None:
    waits = [backoff_seconds(120, attempt, f"seed-{n}") for n in range(300)]
    assert max(waits) <= MAX_BACKOFF_SECONDS
    assert max(waits) >= 0.9 * MAX_BACKOFF_SECONDS


def test_backoff_respects_a_custom_cap() -> None:
    assert all(backoff_seconds(120, 8, f"seed-{n}", cap_seconds=300) <= 300 for n in range(200))


def test_backoff_for_the_example_retry_settings() -> None:
    # retry: {maxAttempts: 3, backoff: 2m} -> waits of up to 2m, then 4m.
    for attempt, ceiling in ((1, 120), (2, 240)):
        wait = backoff_seconds(SPEC.retry_backoff_seconds, attempt, "exec:1")
        assert 1 <= wait <= ceiling


def test_backoff_never_exceeds_a_fractional_ceiling() -> None:
    assert backoff_seconds(10.9, 1, "seed-75") <= 10.9


# --- the measured work and the margin for what is still uncertain (issue 14) ----------------------


@pytest.mark.parametrize(
    ("fraction", "trained", "expected"),
    [(0.0, None, None), (0.0, 600.0, None), (0.25, None, None), (0.25, 0.0, None), (0.25, 2 * HOUR, 8 * HOUR)],
)
def test_the_work_is_measured_once_a_checkpoint_records_its_training_seconds(
    fraction: float, trained: float | None, expected: float | None
) -> None:
    assert measured_work_seconds(fraction, trained) == expected


def test_the_margin_covers_the_declared_work_until_measured_then_the_work_left() -> None:
    declared = _clock(work=20 * HOUR, progress=0.5)
    measured = replace(declared, work_measured=True, pace_measured_seconds=15 * MINUTE)

    assert margin_of(declared) == pytest.approx(SAFETY_MARGIN_FRACTION * 20 * HOUR)  # 1 h
    assert margin_of(measured) == pytest.approx(max(MIN_MEASURED_MARGIN_SECONDS, MEASURED_MARGIN_FRACTION * 10 * HOUR))
    assert margin_of(replace(measured, progress=0.999)) == MIN_MEASURED_MARGIN_SECONDS
    needs = 10 * HOUR + DEFAULT_RESTART_OVERHEAD_SECONDS + margin_of(measured)
    assert on_demand_needs(measured) == pytest.approx(needs)


@pytest.mark.parametrize(
    ("pace", "share"),
    [
        (0.0, SAFETY_MARGIN_FRACTION),  # a pace of unknown footing: the declared share
        (60.0, SAFETY_MARGIN_FRACTION),  # one minute of training: capped at the declared share
        (5 * MINUTE, 0.02 * math.sqrt(3)),
        (15 * MINUTE, MEASURED_MARGIN_FRACTION),
        (HOUR, 0.01),
        (4 * HOUR, MIN_MEASURED_MARGIN_FRACTION),
        (40 * HOUR, MIN_MEASURED_MARGIN_FRACTION),
    ],
)
def test_the_measured_margin_shrinks_with_the_training_the_pace_rests_on(pace: float, share: float) -> None:
    job = replace(_clock(work=20 * HOUR), work_measured=True, pace_measured_seconds=pace)
    assert measured_margin_fraction(job) == pytest.approx(share)
    assert margin_of(job) == pytest.approx(max(MIN_MEASURED_MARGIN_SECONDS, share * 20 * HOUR))


@given(
    st.floats(min_value=1.0, max_value=100 * HOUR, allow_nan=False),
    st.floats(min_value=1.0, max_value=100 * HOUR, allow_nan=False),
)
def test_more_training_measured_never_widens_the_margin(pace: float, more: float) -> None:
    job = replace(_clock(work=20 * HOUR, progress=0.3), work_measured=True, pace_measured_seconds=pace)
    longer = replace(job, pace_measured_seconds=pace + more)
    assert margin_of(longer) <= margin_of(job)
    assert MIN_MEASURED_MARGIN_SECONDS <= margin_of(longer) <= safety_margin(20 * HOUR)


def test_the_switch_reason_says_what_the_measured_margin_rests_on() -> None:
    # 75 % of 8 h done at a pace measured over 1 h: 2 h left, 1 % of it is 1m12s, under the 2-minute floor.
    job = replace(
        _clock(work=8 * HOUR, progress=0.75, now=DEADLINE - timedelta(hours=2, minutes=20)),
        work_measured=True,
        pace_measured_seconds=HOUR,
    )
    assert decide(job).reason == (
        "deadline at risk: 2h20m left, on-demand needs 2h22m (2h of work + 20m restart "
        "+ 2m margin: 1.0 % of the work left, the pace measured over 1h of training)"
    )


@given(feasible_spot_jobs(), st.floats(min_value=1.0, max_value=40 * HOUR, allow_nan=False))
def test_a_measured_job_switched_at_its_last_safe_moment_is_never_paged(job: JobClock, pace: float) -> None:
    """The smaller margin moves the switch later, never past the point where DeadlineAtRisk fires:
    at the last safe moment on-demand still makes it, so no capacity tier is out of options."""
    measured = replace(job, work_measured=True, pace_measured_seconds=pace)
    assert measured.deadline is not None
    last = measured.deadline - timedelta(seconds=math.ceil(on_demand_needs(measured)))
    at_switch = replace(measured, now=max(measured.now, last))
    assert not no_option_left(at_switch, running=False)
    assert not no_option_left(at_switch, running=True)


# --- an early first checkpoint (issue 48, proposal A) ---------------------------------------------


@pytest.mark.parametrize(
    ("work_hours", "slack", "first"),
    [
        (16, 0.10, 6 * MINUTE),  # 96m slack - 20m restart - 48m margin - 20m start-up - 2m guard
        (8, 0.20, None),  # 30m of room: the 15-minute interval comes in time
        (4, 0.10, None),  # no room at all: the job goes to on-demand anyway
        (8, 0.16, 648.0),  # 76m48s slack - 20m - 24m - 20m - 2m
        (8, 0.145, 216.0),  # 3m36s of room: under the 5-minute floor
    ],
)
def test_the_first_checkpoint_is_sized_to_the_slack_only_where_the_interval_comes_too_late(
    work_hours: int, slack: float, first: float | None
) -> None:
    found = first_checkpoint_for(
        work_seconds=work_hours * HOUR,
        deadline_seconds=work_hours * (1 + slack) * HOUR,
        restart_seconds=DEFAULT_RESTART_OVERHEAD_SECONDS,
        interval_seconds=15 * MINUTE,
    )
    if first is None or first < MIN_FIRST_CHECKPOINT_SECONDS:
        assert found is None
    else:
        assert found == pytest.approx(first)


@given(spot_jobs())
def test_an_early_first_checkpoint_measures_the_work_before_the_margin_would_switch(job: JobClock) -> None:
    first = first_checkpoint_seconds(job)
    if first is None:
        return
    assert MIN_FIRST_CHECKPOINT_SECONDS <= first < job.checkpoint_interval_seconds
    # Started at once, the attempt saves after its start-up and `first`: nothing was measured or
    # done yet, and the declared margin still leaves the guard.
    saved_at = replace(job, now=job.now + timedelta(seconds=job.restart_overhead_seconds + first))
    decision = decide(saved_at)
    assert decision.verdict == "continue"
    assert decision.slack_seconds is not None and decision.slack_seconds >= FIRST_CHECKPOINT_GUARD_SECONDS - 1e-6
    assert first_checkpoint_seconds(replace(job, work_measured=True)) is None


def test_the_first_checkpoint_in_minutes_from_the_manifest() -> None:
    spec = replace(SPEC, expected_duration_seconds=8 * HOUR)
    assert DEADLINE is not None
    tight = DEADLINE - timedelta(hours=8, minutes=75)  # 75m of slack: 9m of room
    assert first_checkpoint_minutes(spec, tight) == 9
    assert first_checkpoint_minutes(spec, DEADLINE - timedelta(hours=9, minutes=30)) is None  # the interval will do
    assert first_checkpoint_minutes(spec, tight, work_measured=True) is None
    assert first_checkpoint_minutes(replace(spec, checkpoint_s3_uri=None), tight) is None
    assert first_checkpoint_minutes(replace(spec, deadline=None), tight) is None
