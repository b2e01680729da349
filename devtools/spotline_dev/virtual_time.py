"""Virtual time for the local stack: the clock that moves only when the workflow waits, and
the hooks that put moto's Wait states, Retry back-off and task timeouts on it (moto internals,
hence the exact pin)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any
from unittest import mock

import botocore.endpoint
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.state.exec import execute_state
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (
    StateTaskServiceCallback,
)
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackOutcomeSuccess, CallbackOutcomeTimedOut

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
        self._sources: list[tuple[Callable[[datetime], datetime | None], Callable[[], None]]] = []
        self._holds = 0

    @contextmanager
    def holding_token_waits(self) -> Iterator[None]:
        """While held, a task token wait does not move the clock: it waits (in real time) for
        its token, so a test can play the world by hand. On release, waits run on as usual."""
        with self._lock:
            self._holds += 1
        try:
            yield
        finally:
            with self._lock:
                self._holds -= 1

    @property
    def token_waits_held(self) -> bool:
        with self._lock:
            return self._holds > 0

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

    def watch(self, next_moment: Callable[[datetime], datetime | None], action: Callable[[], None]) -> None:
        """Stop at every moment `next_moment(now)` names (strictly after `now`) and run `action`
        there: how the world's own changes (a training job ending) happen on time during a wait."""
        with self._lock:
            self._sources.append((next_moment, action))

    def advance(self, seconds: float, *, interrupted: Callable[[], bool] | None = None) -> None:
        """Move on by `seconds`, stopping at each due moment to run its action. When
        `interrupted()` turns true after an action (the waiting execution was stopped, or what
        it waited for came), the advance ends there: the rest of that wait never happens."""
        remaining = timedelta(seconds=max(0.0, seconds))
        while True:
            watched = self._next_watched(self.now())
            with self._lock:
                end = self._now + remaining
                timer = self._timers[0][0] if self._timers else None
                action: Callable[[], None]
                if watched is not None and watched <= end and (timer is None or watched < timer):
                    moment, action = watched, self._run_watchers
                elif timer is not None and timer <= end:
                    moment, _, action = self._timers.pop(0)
                else:
                    self._now = end
                    return
                if moment > self._now:
                    remaining -= moment - self._now
                    self._now = moment
            action()
            if interrupted is not None and interrupted():
                return

    def _next_watched(self, now: datetime) -> datetime | None:
        moments = [m for next_moment, _ in list(self._sources) if (m := next_moment(now)) is not None and m > now]
        return min(moments, default=None)

    def _run_watchers(self) -> None:
        for _, action in list(self._sources):
            action()

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


def _time_with_sleep(sleep: Callable[[float], None]) -> SimpleNamespace:
    """The `time` module, but for its sleep."""
    return SimpleNamespace(
        **{name: getattr(time, name) for name in dir(time) if not name.startswith("_")} | {"sleep": sleep}
    )


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
    # botocore's own retries inside a handler (throttling, 5xx) wait on the same clock
    # (botocore.endpoint uses `time` for nothing else).
    exits.enter_context(mock.patch.object(botocore.endpoint, "time", SimpleNamespace(sleep=clock.advance)))
    exits.enter_context(
        mock.patch.object(execute_state, "threading", SimpleNamespace(Event=lambda: VirtualTimeoutEvent(clock)))
    )
    original_token_wait = StateTaskServiceCallback._eval_wait_for_task_token

    def token_wait(self: Any, env: Any, timeout_seconds: int, callback_endpoint: Any, heartbeat_endpoint: Any) -> Any:
        """A task token wait is a Wait that ends early: the clock runs on to the timeout, stopping
        at every moment something happens, until the token is sent (or the execution stopped)."""
        if heartbeat_endpoint is not None:
            return original_token_wait(self, env, timeout_seconds, callback_endpoint, heartbeat_endpoint)

        def ended() -> bool:
            return callback_endpoint.get_outcome() is not None or not env.is_running()

        while clock.token_waits_held and not ended():
            time.sleep(0.005)
        if not ended():  # a token sent while the wait was registered needs no time at all
            clock.advance(timeout_seconds, interrupted=ended)
        outcome = callback_endpoint.get_outcome()
        if outcome is not None:
            return outcome
        if not env.is_running():
            # Stopped during the wait: end it quietly, as a Wait state ends; the execution is
            # ABORTED, not failed by a timeout that never happened.
            return CallbackOutcomeSuccess(callback_id=callback_endpoint.callback_id, output="{}")
        return CallbackOutcomeTimedOut(callback_id=callback_endpoint.callback_id)

    exits.enter_context(mock.patch.object(StateTaskServiceCallback, "_eval_wait_for_task_token", token_wait))
    spotline_clock.use(clock.now)
    exits.callback(spotline_clock.use, None)
