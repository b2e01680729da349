"""The server's clock at a speed: it follows wall time at that pace (a module of its own: one
local stack per process at a time, and test_server's stands still for its whole module)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from spotline_dev.harness.serve.server import LocalOptions, serving

START = datetime(2026, 12, 1, tzinfo=UTC)


def test_at_a_speed_the_clock_follows_wall_time_at_that_pace() -> None:
    """`--speed 600`: ten virtual minutes a second, never ahead of that pace (a bound is the behaviour)."""
    with serving(LocalOptions(port=0, speed=600), START) as server:
        clock = server.local.stack.clock
        began, real = clock.now(), time.monotonic()
        while (clock.now() - began).total_seconds() < 1800 and time.monotonic() - real < 60:
            time.sleep(0.1)
        elapsed = time.monotonic() - real
        moved = (clock.now() - began).total_seconds()
    assert moved >= 1800, "the clock stood still"
    assert moved <= 600 * elapsed + 600 * 0.5  # at most one tick ahead of wall time x speed


def test_a_delivery_that_fails_is_logged_and_the_clock_goes_on() -> None:
    with serving(LocalOptions(port=0, speed=600), START) as server:
        stack, keeper = server.local.stack, server.local.keeper
        deliver, failures = stack.deliver_events, [0]

        def failing_once(*args: object, **kwargs: object) -> list[object]:
            if failures[0] == 0:
                failures[0] += 1
                raise ValueError("a delivery that fails")
            return deliver(*args, **kwargs)  # type: ignore[arg-type]

        stack.deliver_events = failing_once  # type: ignore[method-assign]
        began, real = stack.clock.now(), time.monotonic()
        while (stack.clock.now() - began).total_seconds() < 1800 and time.monotonic() - real < 60:
            time.sleep(0.1)
        assert (stack.clock.now() - began).total_seconds() >= 1800, "the clock stopped with the failed delivery"
        assert failures[0] == 1 and any("a delivery that fails" in error for error in keeper.errors)
