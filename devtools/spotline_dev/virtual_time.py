"""Virtual time for the local stack: the clock that moves only when the workflow waits, and
the hooks that put moto's Wait states, Retry back-off and task timeouts on it (moto internals,
hence the exact pin)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from unittest import mock

from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.state.exec import execute_state

from spotline.aws import clock as spotline_clock


class VirtualClock:
    """Time that moves only when the workflow waits (Wait states, Retry back-off).

    Something can be made to happen at a virtual moment (`at`): the action runs when an advance
    reaches that moment, with the clock standing at it, as if the world acted then."""

    def __init__(self, start: datetime) -> None:
        self._now = start.astimezone(UTC)
        self._lock = threading.Lock()
        self._timers: list[tuple[datetime, int, Callable[[], None]]] = []
        self._serial = 0

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def at(self, moment: datetime, action: Callable[[], None]) -> None:
        """Run `action` when the clock reaches `moment` (on the next advance if it already has).
        Actions due at the same moment run in the order they were registered."""
        with self._lock:
            self._serial += 1
            self._timers.append((moment.astimezone(UTC), self._serial, action))
            self._timers.sort(key=lambda timer: (timer[0], timer[1]))

    def advance(self, seconds: float, *, interrupted: Callable[[], bool] | None = None) -> None:
        """Move on by `seconds`, stopping at each due moment to run its action. When
        `interrupted()` turns true after an action (the waiting execution was stopped), the
        advance ends there: the rest of that wait never happens."""
        remaining = timedelta(seconds=max(0.0, seconds))
        while True:
            with self._lock:
                if not self._timers or self._timers[0][0] > self._now + remaining:
                    self._now += remaining
                    return
                moment, _, action = self._timers.pop(0)
                if moment > self._now:
                    remaining -= moment - self._now
                    self._now = moment
            action()
            if interrupted is not None and interrupted():
                return

    def set(self, moment: datetime) -> None:
        """Jump to `moment`: forward runs the actions due on the way; backward runs none."""
        moment = moment.astimezone(UTC)
        with self._lock:
            ahead = (moment - self._now).total_seconds()
            if ahead <= 0:
                self._now = moment
                return
        self.advance(ahead)


class VirtualTimeoutEvent:
    """threading.Event whose wait(timeout) times out on the virtual clock.

    moto runs every Task state in a thread and waits for it with a real-time timeout; a task
    token wait with a 24-hour timeout must time out when the *virtual* day has passed."""

    def __init__(self, clock: VirtualClock) -> None:
        self._event = threading.Event()
        self._clock = clock

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is None:
            return self._event.wait()
        deadline = self._clock.now() + timedelta(seconds=timeout)
        while not self._event.wait(0.002):
            if self._clock.now() >= deadline:
                return False
        return True


def install_time_hooks(exits: ExitStack, clock: VirtualClock) -> None:
    """Wait states, Retry back-off, task timeouts and the handlers' clock all follow `clock`. A
    Wait state ends early when its execution is stopped during it (as in AWS)."""
    exits.enter_context(
        mock.patch(
            "moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function.WaitFunction._wait_interval",
            lambda self, env, wait_seconds: clock.advance(wait_seconds, interrupted=lambda: not env.is_running()),
        )
    )
    exits.enter_context(mock.patch.object(retrier_decl, "time", SimpleNamespace(sleep=clock.advance)))
    exits.enter_context(
        mock.patch.object(execute_state, "threading", SimpleNamespace(Event=lambda: VirtualTimeoutEvent(clock)))
    )
    spotline_clock.use(clock.now)
    exits.callback(spotline_clock.use, None)
