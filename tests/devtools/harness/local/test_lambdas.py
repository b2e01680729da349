"""The local stack's in-process Lambda runner when its stack ends: no handler of a stack that is
gone may still run when the next one starts (it would fill the layer's client cache from the
wrong session: a CI run once failed that way, ListQuotaShares answered by moto)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from spotline_dev.harness.local.lambdas import InProcessLambdas
from spotline_dev.harness.local.virtual_time import VirtualClock, is_parked

NOW = datetime(2026, 12, 1, tzinfo=UTC)
FUNCTION = SimpleNamespace(function_name="spotline-local-Check", function_arn="arn:aws:lambda:::function:check")


def _lambdas(handler: Any) -> InProcessLambdas:
    stack = SimpleNamespace(
        clock=VirtualClock(NOW), throttles={}, faults=None, invocations=[], logical_id=lambda _name: "CheckFunction"
    )
    lambdas = InProcessLambdas(stack)  # type: ignore[arg-type]
    lambdas.handlers[FUNCTION.function_name] = handler
    return lambdas


def _invoke_in_thread(lambdas: InProcessLambdas) -> threading.Thread:
    thread = threading.Thread(target=lambdas.invoke, args=(FUNCTION, {}), daemon=True)
    thread.start()
    return thread


def test_settle_waits_for_the_running_handler_to_return() -> None:
    started, release, returned = threading.Event(), threading.Event(), threading.Event()

    def handler(_event: Any, _context: Any) -> dict[str, Any]:
        started.set()
        release.wait(10)
        return {}

    lambdas = _lambdas(handler)
    _invoke_in_thread(lambdas)
    assert started.wait(5)
    settling = threading.Thread(target=lambda: (lambdas.settle(10), returned.set()), daemon=True)
    settling.start()

    assert not returned.wait(0.5), "settle returned while a handler still ran"
    release.set()
    assert returned.wait(5)


def test_after_settle_a_new_task_never_reaches_its_handler() -> None:
    calls: list[Any] = []
    lambdas = _lambdas(lambda event, _context: calls.append(event) or {})
    lambdas.settle(5)

    thread = _invoke_in_thread(lambdas)
    thread.join(0.5)

    assert thread.is_alive() and is_parked(thread.ident)
    assert calls == [] and lambdas.stack.invocations == []


def test_a_handler_stopped_for_good_in_a_wait_does_not_hold_settle_up() -> None:
    lambdas = _lambdas(lambda _event, _context: None)
    started = threading.Event()

    def waiting_handler(_event: Any, _context: Any) -> None:
        started.set()
        while True:  # a botocore retry back-off: once the clock is closed, it never ends
            lambdas.stack.clock.sleep(1.0, key=None)

    lambdas.handlers[FUNCTION.function_name] = waiting_handler
    thread = _invoke_in_thread(lambdas)
    assert started.wait(5)

    lambdas.settle(5)

    thread.join(0.2)
    assert is_parked(thread.ident)


def test_a_handler_that_never_returns_fails_the_stack_end_by_name() -> None:
    started, release = threading.Event(), threading.Event()

    def stuck(_event: Any, _context: Any) -> None:
        started.set()
        release.wait(30)

    lambdas = _lambdas(stuck)
    _invoke_in_thread(lambdas)
    assert started.wait(5)
    try:
        with pytest.raises(RuntimeError, match="still runs 0 s after its end"):
            lambdas.settle(0.3)
    finally:
        release.set()
