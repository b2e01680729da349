"""The stack's Lambda functions run in-process: moto's Docker-based runner replaced by a direct
call of the real handler, one at a time, with Lambda's own answers for errors, throttles and a
runtime killed mid-invocation."""

from __future__ import annotations

import json
import threading
import time
import traceback
from typing import Any

from moto.awslambda.exceptions import LambdaClientError

from spotline_dev.harness.local.handles import Handler, Invocation, LocalStack, RuntimeKilled
from spotline_dev.harness.local.lambda_context import LocalLambdaContext
from spotline_dev.harness.local.permissions.checker import running
from spotline_dev.harness.local.virtual_time import POLL_SECONDS, is_parked, park


class InProcessLambdas:
    """Replaces moto's Docker-based Lambda runner with a direct call of the real handler."""

    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.handlers: dict[str, Handler] = {}
        # One invocation at a time (Powertools metrics are process-wide); re-entrant so a handler can
        # trigger another function in-process, as an event it causes would.
        self.lock = threading.RLock()
        self._invoking: int | None = None  # the thread running a handler

    def settle(self, timeout: float) -> None:
        """The stack is ending: executions a test left running stop at their next wait (the clock
        closes) or at their next Lambda task, and this returns once no handler runs (or the one
        that does is stopped for good in a wait). A handler still running could otherwise put a
        client from whatever session is current into the layer's cache, and the next stack's
        handlers would use it: their calls would miss that stack's stand-in."""
        self.stack.clock.close()
        deadline = time.monotonic() + timeout
        while not is_parked(self._invoking):
            if self.lock.acquire(timeout=POLL_SECONDS):
                self.lock.release()
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(f"a Lambda handler of the local stack still runs {timeout:.0f} s after its end")

    def invoke(self, function: Any, event: Any = None) -> tuple[str, bool, str]:
        fault = self.stack.faults.due(function.function_name) if self.stack.faults else None
        if fault is not None and fault.refused:
            raise LambdaClientError("TooManyRequestsException", "Rate Exceeded.")
        if self.stack.throttles.get(function.function_name, 0) > 0:
            self.stack.throttles[function.function_name] -= 1
            raise LambdaClientError("TooManyRequestsException", "Rate Exceeded.")
        handler = self.handlers[function.function_name]
        payload = event if event is not None else {}
        context = LocalLambdaContext(function_name=function.function_name, invoked_function_arn=function.function_arn)
        record = Invocation(function.function_name, payload, at=self.stack.clock.now())
        with self.lock:
            if self.stack.clock.closed:
                park()  # the stack is gone: no more tasks
            outer, self._invoking = self._invoking, threading.get_ident()
            self.stack.invocations.append(record)
            try:
                if fault is not None and not fault.after_work:
                    raise fault
                with running(self.stack.logical_id(function.function_name)):
                    result = handler(payload, context)
                if fault is not None:
                    raise fault  # a timeout: the work done, the answer lost
            except Exception as exc:
                record.error = "Runtime.ExitError" if isinstance(exc, RuntimeKilled) else type(exc).__name__
                record.error = getattr(exc, "error_type", record.error)
                error = {
                    "errorMessage": str(exc),
                    "errorType": record.error,
                    "stackTrace": traceback.format_exception(exc)[-3:],
                }
                return json.dumps(error), True, ""
            finally:
                self._invoking = outer
        record.result = result
        return json.dumps(result), False, ""
