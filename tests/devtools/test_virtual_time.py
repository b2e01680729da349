"""The virtual clock stops at the world's own changes, and task token waits ride on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from spotline_dev.virtual_time import VirtualClock

START = datetime(2026, 12, 1, tzinfo=UTC)
HOUR = 3600


def test_an_advance_stops_at_every_watched_moment_between_the_timers() -> None:
    clock, seen = VirtualClock(START), []
    changes = [START + timedelta(minutes=m) for m in (10, 50, 200)]

    def next_change(now: datetime) -> datetime | None:
        return next((c for c in changes if c > now), None)

    clock.watch(next_change, lambda: seen.append(("change", clock.now())))
    clock.at(START + timedelta(minutes=30), lambda: seen.append(("timer", clock.now())))
    clock.advance(HOUR)
    assert seen == [
        ("change", START + timedelta(minutes=10)),
        ("timer", START + timedelta(minutes=30)),
        ("change", START + timedelta(minutes=50)),
    ]
    assert clock.now() == START + timedelta(hours=1)


def test_a_wait_that_what_it_waits_for_ends_stops_at_that_change() -> None:
    clock, came = VirtualClock(START), []
    clock.watch(
        lambda now: START + timedelta(minutes=20) if now < START + timedelta(minutes=20) else None,
        lambda: came.append(True),
    )
    clock.advance(2 * HOUR, interrupted=lambda: bool(came))
    assert clock.now() == START + timedelta(minutes=20)


def test_a_moment_not_after_now_is_not_a_stop() -> None:
    clock, calls = VirtualClock(START), []
    clock.watch(lambda now: now, lambda: calls.append(True))
    clock.advance(HOUR)
    assert calls == [] and clock.now() == START + timedelta(hours=1)


def test_holding_token_waits_is_nested_and_released() -> None:
    clock = VirtualClock(START)
    with clock.holding_token_waits():
        with clock.holding_token_waits():
            assert clock.token_waits_held
        assert clock.token_waits_held
    assert not clock.token_waits_held
