"""Faults injected into the local stack's functions: unexpected errors on chosen invocations,
as real code raises them (a bug, an unhandled botocore error), function timeouts, and AWS
throttling the calls a function makes, for the workflow to survive."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from botocore.awsrequest import AWSPreparedRequest, AWSResponse, HTTPHeaders
from botocore.loaders import create_loader

from spotline_dev.harness.local.permissions.checker import running_function
from spotline_dev.harness.standin.base.http_answers import ANSWERED_HOST, ApiError, RawBody, answer

KINDS = ("error", "timeout", "throttle")

# AWS Lambda, "Troubleshoot invocation issues": a function that runs out of time ends with the
# error type "Sandbox.Timedout"; Step Functions, "Handle Lambda service exceptions": "Unhandled
# errors in Lambda are reported as Lambda.Unknown ... These include out-of-memory errors and
# function timeouts. You can match on Lambda.Unknown, States.ALL, or States.TaskFailed".
TIMED_OUT = "Sandbox.Timedout"


class InjectedFault(RuntimeError):
    """An unexpected error injected into a function (`LocalStack.inject_fault`, a scenario's
    `faults:`). It is raised where the handler would run, so Lambda reports an unhandled
    exception (errorType InjectedFault) and Step Functions a TaskFailed with that error.
    A timeout (`after_work`) is reported once the handler has run: its work done, its answer lost."""

    def __init__(
        self, message: str, *, error_type: str = "InjectedFault", after_work: bool = False, refused: bool = False
    ) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.after_work = after_work
        self.refused = refused  # a throttle: the Lambda service refuses the invocation, nothing runs


@dataclass
class Fault:
    """`count` invocations of a function from `start` on raise InjectedFault (`kind` "error"),
    time out after doing their work (`kind` "timeout"), or are refused by the Lambda service
    (`kind` "throttle": TooManyRequestsException, Step Functions' Lambda.TooManyRequestsException)."""

    logical_id: str
    start: datetime
    count: int
    raised: int = 0
    raised_at: list[datetime] = field(default_factory=list)  # virtual time of each one raised
    kind: str = "error"


class Faults:
    """The faults of each function (by function name), on the stack's clock."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock
        self.by_function: dict[str, list[Fault]] = {}

    def add(self, function_name: str, fault: Fault) -> Fault:
        if fault.kind not in KINDS:
            raise ValueError(f"fault kind {fault.kind!r} is not one of {', '.join(KINDS)}")
        self.by_function.setdefault(function_name, []).append(fault)
        return fault

    def due(self, function_name: str) -> InjectedFault | None:
        """The error this invocation raises, if a fault of the function is due now."""
        now = self.clock()
        for fault in self.by_function.get(function_name, []):
            if fault.start <= now and fault.raised < fault.count:
                fault.raised += 1
                fault.raised_at.append(now)
                start = fault.start.isoformat().replace("+00:00", "Z")
                which = f"(injected fault {fault.raised} of {fault.count}, from {start})"
                if fault.kind == "timeout":
                    # The text Lambda reports for a timed-out invocation: "Task timed out after N seconds".
                    return InjectedFault(
                        f"{fault.logical_id}: Task timed out after 60.00 seconds {which}",
                        error_type=TIMED_OUT,
                        after_work=True,
                    )
                if fault.kind == "throttle":
                    return InjectedFault(f"{fault.logical_id} throttled {which}", refused=True)
                return InjectedFault(f"{fault.logical_id} failed unexpectedly {which}")
        return None


class CallThrottles:
    """AWS throttling the next calls one function makes (`LocalStack.throttle_calls`): each such
    call is answered as the service answers a throttle, below botocore (`before-send`), so
    botocore parses and retries it as it would AWS's, and neither moto nor the stand-in runs it."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock
        self.bursts: dict[str, list[list[Any]]] = {}  # function logical id -> [start, answers left, operations]
        self.given: dict[str, list[str]] = {}  # function logical id -> the operations throttled

    def add(self, logical_id: str, times: int, start: datetime, operations: tuple[str, ...] = ()) -> None:
        """`operations` ("sagemaker.DescribeTrainingJob", ...): only those calls; none given: every call."""
        self.bursts.setdefault(logical_id, []).append([start, times, operations])

    def _take(self, function: str, operation: str) -> bool:
        now = self.clock()
        for burst in self.bursts.get(function, []):
            if burst[0] <= now and burst[1] > 0 and (not burst[2] or operation in burst[2]):
                burst[1] -= 1
                return True
        return False

    def install(self, events: Any) -> None:
        """Ahead of every other `before-send` handler: botocore calls the handlers of the most
        specific event first (the stand-in's `before-send.batch` before moto's `before-send`) and
        takes the first answer; `before-send.*.*` (any service, any operation) is the most specific."""
        events.register_first("before-send.*.*", self.on_send)

    def on_send(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> AWSResponse | None:
        throttled_from = getattr(request, "_throttled_from", None)
        if throttled_from is not None:  # botocore retries the request this throttled: its own address again
            request.url = throttled_from
            del request._throttled_from  # type: ignore[attr-defined]
        function = running_function()
        _before, service, operation = event_name.split(".", 2)
        protocol = _protocol(service)
        if function is None or protocol not in ("json", "rest-json", "rest-xml", "query"):
            return None  # not a function's call, or a protocol this writes no answers for: it goes through
        if not self._take(function, f"{service}.{operation}"):
            return None
        self.given.setdefault(function, []).append(f"{service}.{operation}")
        request._throttled_from = request.url  # type: ignore[attr-defined]
        if protocol in ("json", "rest-json"):
            # AWS API references, Common Errors: "ThrottlingException: The request was denied due
            # to request throttling. HTTP Status Code: 400". (`answer` points the request elsewhere.)
            return answer(request, protocol, 0, ApiError("ThrottlingException", "Rate exceeded").raise_it)
        url = request.url
        request.url = urlsplit(url)._replace(netloc=ANSWERED_HOST).geturl()  # moto and the stand-in skip it
        if protocol == "rest-xml":
            # Amazon S3 API reference, Error codes: "SlowDown: Please reduce your request rate. 503 Slow Down".
            status, body = 503, b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>"
            body += b"</Error>"
        else:
            # Query APIs' Common Errors: "Throttling: The request was denied due to request throttling. 400".
            status, body = 400, b"<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code>"
            body += b"<Message>Rate exceeded</Message></Error><RequestId>throttled</RequestId></ErrorResponse>"
        headers = HTTPHeaders()
        headers["Content-Type"] = "text/xml"
        headers["Content-Length"] = str(len(body))
        return AWSResponse(url, status, headers, RawBody(body))


_PROTOCOLS: dict[str, str] = {}


def _protocol(service_id: str) -> str:
    """The wire protocol of a service, by the hyphenated service id the event names carry. The
    service named like its id is read first (s3, batch, sagemaker, dynamodb, sns); the others (sfn
    is stepfunctions' id) are found by reading the models in turn, each one read kept, so a process
    reads a model once, not once per service looked up."""
    if service_id not in _PROTOCOLS:
        loader = _loader()
        names = sorted(loader.list_available_services("service-2"), key=lambda name: name != service_id)
        for name in names:
            metadata = loader.load_service_model(name, "service-2")["metadata"]
            _PROTOCOLS.setdefault(metadata.get("serviceId", "").lower().replace(" ", "-"), metadata["protocol"])
            if service_id in _PROTOCOLS:
                break
        else:
            _PROTOCOLS[service_id] = ""
    return _PROTOCOLS[service_id]


@cache
def _loader() -> Any:
    return create_loader()
