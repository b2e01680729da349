"""Virtual time for the local stack: the clock that moves only when the workflow waits, and
the hooks that put moto's Wait states, Retry back-off and task timeouts on it (moto internals,
hence the exact pin)."""

from __future__ import annotations

import threading
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from unittest import mock

from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.state.exec import execute_state

from spotline.aws import clock as spotline_clock


class VirtualClock:
    """Time that moves only when the workflow waits (Wait states, Retry back-off)."""

    def __init__(self, start: datetime) -> None:
        self._now = start.astimezone(UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += timedelta(seconds=max(0.0, seconds))

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment.astimezone(UTC)


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
    """Wait states, Retry back-off, task timeouts and the handlers' clock all follow `clock`."""
    exits.enter_context(
        mock.patch(
            "moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function.WaitFunction._wait_interval",
            lambda self, env, wait_seconds: clock.advance(wait_seconds),
        )
    )
    exits.enter_context(mock.patch.object(retrier_decl, "time", SimpleNamespace(sleep=clock.advance)))
    exits.enter_context(
        mock.patch.object(execute_state, "threading", SimpleNamespace(Event=lambda: VirtualTimeoutEvent(clock)))
    )
    spotline_clock.use(clock.now)
    exits.callback(spotline_clock.use, None)
