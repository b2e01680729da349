"""The virtual clock stops at the world's own changes, and task token waits ride on it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from spotline_dev.harness.local.virtual_time import VirtualClock

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


# --- many executions on one clock ---------------------------------------------------------------


def _run(clock: VirtualClock, key: str, body: Callable[[], None]) -> threading.Thread:
    """A participant's thread: joined before it starts (as an execution is), gone when its body ends."""
    clock.join(key)
    return threading.Thread(target=_participant(clock, key, body), daemon=True)


def _start(threads: list[threading.Thread]) -> list[threading.Thread]:
    for thread in threads:
        thread.start()
    return threads


def _participant(clock: VirtualClock, key: str, body: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            body()
        finally:
            clock.leave(key)

    return run


def test_time_moves_only_when_every_participant_sleeps_and_only_to_the_next_wake_up() -> None:
    clock, woke = VirtualClock(START), []

    def sleeper(key: str, minutes: int) -> Callable[[], None]:
        def body() -> None:
            clock.sleep(minutes * 60, key=key)
            woke.append((key, clock.now()))

        return body

    threads = _start([_run(clock, "a", sleeper("a", 10)), _run(clock, "b", sleeper("b", 30))])
    for thread in threads:
        thread.join(10)
    assert woke == [("a", START + timedelta(minutes=10)), ("b", START + timedelta(minutes=30))]
    assert clock.now() == START + timedelta(minutes=30)  # the waits overlapped: 30 minutes, not 40


def test_a_busy_participant_holds_the_clock() -> None:
    clock, busy_done = VirtualClock(START), threading.Event()
    clock.join("busy")  # joined, never sleeping until told
    (sleeper,) = _start([_run(clock, "sleeper", lambda: clock.sleep(HOUR, key="sleeper"))])
    sleeper.join(0.3)
    assert sleeper.is_alive() and clock.now() == START  # an hour of waiting, and no time passed

    def finish() -> None:
        clock.leave("busy")
        busy_done.set()

    finish()
    sleeper.join(10)
    assert not sleeper.is_alive() and clock.now() == START + timedelta(hours=1)


def test_participants_due_together_take_turns_in_the_order_they_joined() -> None:
    clock, seen = VirtualClock(START), []

    def turn(key: str) -> Callable[[], None]:
        def body() -> None:
            clock.sleep(HOUR, key=key)
            seen.append(f"{key} woke")
            time.sleep(0.05)  # real work takes real time; the other must not run meanwhile
            seen.append(f"{key} done")

        return body

    threads = _start([_run(clock, key, turn(key)) for key in ("first", "second", "third")])
    for thread in threads:
        thread.join(10)
    assert seen == ["first woke", "first done", "second woke", "second done", "third woke", "third done"]


def test_an_action_that_ends_what_a_sleeper_waits_for_wakes_it_then() -> None:
    clock, came, woke = VirtualClock(START), threading.Event(), []
    clock.at(START + timedelta(minutes=20), came.set)

    def body() -> None:
        clock.sleep(2 * HOUR, key="waiting", interrupted=came.is_set)
        woke.append(clock.now())

    def other() -> None:
        clock.sleep(3 * HOUR, key="other")

    threads = _start([_run(clock, "waiting", body), _run(clock, "other", other)])
    for thread in threads:
        thread.join(10)
    assert woke == [START + timedelta(minutes=20)]
    assert clock.now() == START + timedelta(hours=3)


def test_a_sleep_of_no_participant_is_an_advance() -> None:
    clock = VirtualClock(START)
    clock.sleep(HOUR, key="never-joined")
    assert clock.now() == START + timedelta(hours=1)


def test_someone_participating_holds_time_until_they_sleep_too() -> None:
    clock = VirtualClock(START)
    seen: list[datetime] = []

    def execution() -> None:
        clock.sleep(HOUR, key="execution")
        seen.append(clock.now())

    with clock.participating("on-call"):
        thread = _start([_run(clock, "execution", execution)])[0]
        time.sleep(0.2)  # the execution sleeps, on-call does not: time stands still
        assert clock.now() == START and seen == []
        clock.sleep(2 * HOUR, key="on-call")
        thread.join(5)
        assert seen == [START + timedelta(hours=1)] and clock.now() == START + timedelta(hours=2)
    assert clock.participants == 0
