"""Virtual time for the local stack: the clock that moves only when the workflow waits, and
the hooks that put moto's Wait states, Retry back-off and task timeouts on it (moto internals,
hence the exact pin)."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, NoReturn
from unittest import mock

import botocore.endpoint
from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
from moto.stepfunctions.parser.asl.component.state.exec import execute_state
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (
    StateTaskServiceCallback,
)
from moto.stepfunctions.parser.asl.component.state.wait.wait_function import timestamp as wait_timestamp
from moto.stepfunctions.parser.asl.eval.callback.callback import CallbackOutcomeSuccess, CallbackOutcomeTimedOut
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

from spotline.aws.common import clock as spotline_clock

TIMEOUT_GRACE_SECONDS = 10.0
"""Real time a task's thread gets, once its virtual timeout has come, to end on its own."""
POLL_SECONDS = 0.05
"""How often a blocked thread looks again without being notified (a safety net: every change
that can let one go on notifies)."""
SLEEPER_POLL_SECONDS = 1.0
"""How often a sleeper looks again without being notified: a safety net only (its wake-up and its
turn to move the clock are notified to it), kept rare because a thousand sleepers polling often
would cost more than their executions."""


class VirtualClock:
    """Time that moves only when the workflow waits, for any number of executions at once.

    A discrete-event clock: every running execution is a *participant* (`join`, `leave`), and its
    waits (Wait states, Retry back-off, task token waits) are `sleep`s. Time moves only when every
    participant is asleep, and then only to the earliest pending moment: a sleeper's wake-up, a
    timer (`at`) or a watched change of the world (`watch`), whose action runs with the clock
    standing at it, as if the world acted then. Sleepers are woken one at a time, in the order
    their executions joined, and the next one only once the first sleeps again or ends: the
    executions take turns, so a replay repeats itself. With one execution this is exactly "its
    waits move the clock".

    `advance` (no participant: a test, the sandbox's settling) moves the clock at once, as far as
    asked, stopping at each due moment on the way."""

    def __init__(self, start: datetime) -> None:
        self._now = start.astimezone(UTC)
        # One lock; threads that are not asleep (`advance`) wait on `_cv`, each sleeper on its own
        # condition of the same lock, so a change wakes only whom it concerns: with a thousand
        # executions asleep, waking all of them at every step costs more than the steps.
        self._lock = threading.RLock()
        self._cv = threading.Condition(self._lock)
        self._timers: list[tuple[datetime, int, Callable[[], None]]] = []
        self._serial = itertools.count()
        self._sources: list[tuple[Callable[[datetime], datetime | None], Callable[[], None]]] = []
        self._holds = 0
        self._participants: dict[str, int] = {}  # key -> the order it joined in
        self._joined = itertools.count()
        self._sleepers: list[_Sleeper] = []
        # Kept as each sleeper falls asleep or wakes, so "is every participant asleep?" costs
        # nothing however many executions run (every waiting thread asks it at each change).
        self._unwoken: dict[str, int] = {}  # key -> its sleepers not yet woken
        self._asleep = 0  # participants with a sleeper not yet woken
        self._deadlines: list[tuple[datetime, int, threading.Event]] = []  # heap: set when the clock passes
        self._mover: int | None = None  # the thread moving the clock (and running actions): one at a time
        self._closed = False

    @contextmanager
    def holding_token_waits(self) -> Iterator[None]:
        """While held, a task token wait does not move the clock: it waits (in real time) for
        its token, so a test can play the world by hand. On release, waits run on as usual."""
        with self._cv:
            self._holds += 1
        try:
            yield
        finally:
            with self._cv:
                self._holds -= 1

    @property
    def token_waits_held(self) -> bool:
        return self._holds > 0

    def now(self) -> datetime:
        return self._now  # one reference read: no lock (handlers read it while actions run)

    def at(self, moment: datetime, action: Callable[[], None]) -> None:
        """Run `action` when the clock reaches `moment` (on the next move if it already has).
        Actions due at the same moment run in the order they were registered."""
        with self._cv:
            self._timers.append((moment.astimezone(UTC), next(self._serial), action))
            self._timers.sort(key=lambda timer: (timer[0], timer[1]))
            self._cv.notify_all()

    def wake_at(self, moment: datetime, wake: threading.Event) -> None:
        """Set `wake` once the clock has reached `moment` (at once if it has): how a thread that
        waits in real time for something with a virtual deadline learns the deadline came, without
        looking at the clock again and again."""
        with self._cv:
            if self._now >= moment:
                wake.set()
            else:
                heapq.heappush(self._deadlines, (moment, next(self._serial), wake))

    def _passed(self) -> None:
        """The clock moved: set the wakes of the deadlines it reached."""
        while self._deadlines and self._deadlines[0][0] <= self._now:
            heapq.heappop(self._deadlines)[2].set()

    def watch(self, next_moment: Callable[[datetime], datetime | None], action: Callable[[], None]) -> None:
        """Stop at every moment `next_moment(now)` names (strictly after `now`) and run `action`
        there: how the world's own changes (a training job ending) happen on time during a wait."""
        with self._cv:
            self._sources.append((next_moment, action))

    # --- participants -------------------------------------------------------------------------

    def join(self, key: str) -> None:
        """`key` (an execution) now runs: time waits for it to sleep or leave."""
        with self._cv:
            if key not in self._participants:
                self._participants[key] = next(self._joined)
                self._asleep += self._unwoken.get(key, 0) > 0
            self._cv.notify_all()

    def leave(self, key: str) -> None:
        with self._cv:
            if self._participants.pop(key, None) is not None:
                self._asleep -= self._unwoken.get(key, 0) > 0
            self._cv.notify_all()
            self._nudge()

    @contextmanager
    def participating(self, key: str) -> Iterator[None]:
        """`key` (someone outside the workflow: an on-call engineer looking now and then) takes
        part while inside: time moves only when it sleeps too, so what it sees repeats itself."""
        self.join(key)
        try:
            yield
        finally:
            self.leave(key)

    def close(self) -> None:
        """The stack is gone: the threads of executions still running (a test that did not wait for
        its execution) stop for good where they sleep, neither polling nor running on against the
        next stack's clients."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
            for sleeper in self._sleepers:
                sleeper.turn.notify()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def participants(self) -> int:
        with self._cv:
            return len(self._participants)

    def sleep(self, seconds: float, *, key: str | None, interrupted: Callable[[], bool] | None = None) -> None:
        """Participant `key` waits `seconds`, or less if `interrupted()` turns true after an action
        (the execution was stopped, or what it waited for came). Without a key (a thread that is
        no participant: a test, a retry inside a handler) it is `advance`."""
        if self._closed:
            park()
        if key is None or key not in self._participants:
            self.advance(seconds, interrupted=interrupted)
            return
        with self._cv:
            until = self._now + timedelta(seconds=max(0.0, seconds))
            me = _Sleeper(until, self._participants[key], key, interrupted, threading.Condition(self._lock))
            self._sleepers.append(me)
            self._count_asleep(me, +1)
            self._cv.notify_all()
            try:
                while not me.woken:
                    if self._closed:
                        break
                    if self._mover is None and self._all_asleep():
                        self._move_once(None)
                    else:
                        me.turn.wait(SLEEPER_POLL_SECONDS)
            finally:
                self._sleepers.remove(me)
                if not me.woken:
                    self._count_asleep(me, -1)
                self._cv.notify_all()
                self._nudge()
        if not me.woken:
            park()  # closed while asleep

    def advance(self, seconds: float, *, interrupted: Callable[[], bool] | None = None) -> None:
        """Move on by `seconds` now (whoever else is busy), stopping at each due moment to run its
        action and wake the sleepers due. When `interrupted()` turns true after an action, the
        advance ends there: the rest of that wait never happens."""
        with self._cv:
            end = self._now + timedelta(seconds=max(0.0, seconds))
            while True:
                while self._mover not in (None, threading.get_ident()):  # an action may advance too
                    self._cv.wait(POLL_SECONDS)
                if self._move_once(end) is None:
                    return
                if interrupted is not None and interrupted():
                    return

    def set(self, moment: datetime) -> None:
        """Jump to `moment`: forward runs the actions due on the way; backward runs none."""
        moment = moment.astimezone(UTC)
        ahead = (moment - self._now).total_seconds()
        if ahead <= 0:
            self._now = moment
            return
        self.advance(ahead)

    # --- moving -------------------------------------------------------------------------------

    def _all_asleep(self) -> bool:
        return self._asleep == len(self._participants)

    def _count_asleep(self, sleeper: _Sleeper, change: int) -> None:
        """`sleeper` fell asleep (+1) or woke or left unwoken (-1)."""
        before = self._unwoken.get(sleeper.key, 0)
        after = before + change
        if after:
            self._unwoken[sleeper.key] = after
        else:
            self._unwoken.pop(sleeper.key, None)
        if sleeper.key in self._participants and (before > 0) != (after > 0):
            self._asleep += 1 if after > 0 else -1

    def _wake(self, sleeper: _Sleeper) -> None:
        sleeper.woken = True
        self._count_asleep(sleeper, -1)
        sleeper.turn.notify()

    def _nudge(self) -> None:
        """When every participant sleeps and no one moves the clock, wake one sleeper to move it."""
        if self._mover is None and self._all_asleep():
            sleeper = next((s for s in self._sleepers if not s.woken), None)
            if sleeper is not None:
                sleeper.turn.notify()

    def _move_once(self, end: datetime | None) -> datetime | None:
        """One step (called holding the condition): wake a sleeper whose wait was cut short, or
        move to the earliest of the next action and the next wake-up (not past `end`) and run or
        wake it. Returns the moment stepped to, None when nothing is due by `end`."""
        outer, self._mover = self._mover, threading.get_ident()
        try:
            pending = sorted((s for s in self._sleepers if not s.woken), key=lambda s: s.order)
            cut = next((s for s in pending if s.interrupted is not None and s.interrupted()), None)
            if cut is not None:
                self._wake(cut)
                return self._now
            wake_at = min((s.until for s in pending), default=end)
            limit = wake_at if end is None or (wake_at is not None and wake_at < end) else end
            assert limit is not None
            self._cv.release()  # the world (the stand-in) is asked without holding the clock
            try:
                watched = self._next_watched(self._now)
            finally:
                self._cv.acquire()
            timer = self._timers[0][0] if self._timers else None
            action: Callable[[], None]
            if watched is not None and watched <= limit and (timer is None or watched < timer):
                moment, action = watched, self._run_watchers
            elif timer is not None and timer <= limit:
                moment, _, action = self._timers.pop(0)
            else:
                self._now = max(self._now, limit)
                self._passed()
                due = next((s for s in pending if s.until <= self._now), None)
                if due is not None:
                    self._wake(due)
                    return self._now
                return None  # `end` reached
            self._now = max(self._now, moment)
            self._passed()
            self._cv.release()
            try:
                action()
            finally:
                self._cv.acquire()
            return self._now
        finally:
            self._mover = outer
            self._cv.notify_all()
            self._nudge()

    def _next_watched(self, now: datetime) -> datetime | None:
        moments = [m for next_moment, _ in list(self._sources) if (m := next_moment(now)) is not None and m > now]
        return min(moments, default=None)

    def _run_watchers(self) -> None:
        for _, action in list(self._sources):
            action()


_PARKED: set[int] = set()
"""Idents of the threads parked for good (their stack is gone)."""


def park() -> NoReturn:
    """Block this (daemon) thread for good: its stack is gone."""
    _PARKED.add(threading.get_ident())
    while True:
        threading.Event().wait()


def is_parked(ident: int | None) -> bool:
    return ident in _PARKED


@dataclass(eq=False)
class _Sleeper:
    until: datetime
    order: int  # its participant's joining order: who wakes first among those due together
    key: str
    interrupted: Callable[[], bool] | None
    turn: threading.Condition  # notified when woken, or when it may move the clock
    woken: bool = False


class VirtualTimeoutEvent:
    """threading.Event whose wait(timeout) times out on the virtual clock.

    moto runs every Task state in a thread and waits for it with a real-time timeout; a task
    token wait with a 24-hour timeout must time out when the *virtual* day has passed."""

    def __init__(self, clock: VirtualClock) -> None:
        self._event = threading.Event()
        self._wake = threading.Event()  # set with the event, or by the clock at the deadline
        self._clock = clock

    def set(self) -> None:
        self._event.set()
        self._wake.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is None:
            return self._event.wait()
        deadline = self._clock.now() + timedelta(seconds=timeout)
        self._wake.clear()
        self._clock.wake_at(deadline, self._wake)
        # Woken by the event or by the clock at the deadline; the rare look meanwhile is a safety
        # net (a thousand executions' task threads looking often would cost more than their work).
        while True:
            self._wake.wait(SLEEPER_POLL_SECONDS)  # the task thread ends a token wait at its timeout itself
            if self._event.is_set():
                return True
            if self._clock.closed:
                park()
            if self._clock.now() >= deadline:
                # The task's own thread is told of its deadline too (a token wait ends there): what it
                # makes of it comes first, or a token sent at that very moment would count twice.
                return self._event.wait(TIMEOUT_GRACE_SECONDS)
            self._wake.clear()  # an earlier wait's deadline: not this one's


def _time_with_sleep(sleep: Callable[[float], None]) -> SimpleNamespace:
    """The `time` module, but for its sleep."""
    return SimpleNamespace(
        **{name: getattr(time, name) for name in dir(time) if not name.startswith("_")} | {"sleep": sleep}
    )


def execution_of(env: Any) -> str | None:
    """The ARN of the execution a moto evaluation environment belongs to."""
    try:
        return str(env.states.context_object.context_object_data["Execution"]["Id"])
    except (AttributeError, KeyError, TypeError):
        return None


_retrying = threading.local()  # the execution whose Retry back-off this thread is in


def install_time_hooks(exits: ExitStack, clock: VirtualClock) -> None:
    """Wait states, Retry back-off, task timeouts and the handlers' clock all follow `clock`, as
    sleeps of their execution. A Wait state ends early when its execution is stopped during it
    (as in AWS). A new execution starts with a sleep of no time: it takes its turn."""
    exits.enter_context(
        mock.patch(
            "moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function.WaitFunction._wait_interval",
            lambda self, env, wait_seconds: clock.sleep(
                wait_seconds, key=execution_of(env), interrupted=lambda: not env.is_running()
            ),
        )
    )
    original_retry = retrier_decl.RetrierDecl._eval_body

    def retry(self: Any, env: Any) -> None:
        _retrying.key = execution_of(env)
        try:
            original_retry(self, env)
        finally:
            _retrying.key = None

    exits.enter_context(mock.patch.object(retrier_decl.RetrierDecl, "_eval_body", retry))
    exits.enter_context(
        mock.patch.object(
            retrier_decl,
            "time",
            SimpleNamespace(sleep=lambda seconds: clock.sleep(seconds, key=getattr(_retrying, "key", None))),
        )
    )
    # botocore's own retries inside a handler (throttling, 5xx) wait on the same clock
    # (botocore.endpoint uses `time` for nothing else).
    exits.enter_context(mock.patch.object(botocore.endpoint, "time", SimpleNamespace(sleep=clock.advance)))
    exits.enter_context(
        mock.patch.object(execute_state, "threading", SimpleNamespace(Event=lambda: VirtualTimeoutEvent(clock)))
    )
    original_logic = ExecutionWorker._execution_logic

    def execution_logic(worker: ExecutionWorker) -> None:
        clock.sleep(0, key=worker._evaluation_details.execution_details.arn)
        original_logic(worker)  # type: ignore[no-untyped-call]

    exits.enter_context(mock.patch.object(ExecutionWorker, "_execution_logic", execution_logic))

    class ClockDatetime(datetime):
        """A Wait state's Timestamp is compared with the virtual now (moto's uses the wall clock's
        naive local time: a timestamp passed on the virtual clock would wait for the real one)."""

        @classmethod
        def now(cls, tz: Any = None) -> Any:
            moment = clock.now()
            return moment.astimezone(tz) if tz else moment.astimezone(UTC).replace(tzinfo=None)

    exits.enter_context(mock.patch.object(wait_timestamp, "datetime", SimpleNamespace(datetime=ClockDatetime)))
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
            clock.sleep(timeout_seconds, key=execution_of(env), interrupted=ended)
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
