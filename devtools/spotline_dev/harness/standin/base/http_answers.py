"""How the stand-in answers at botocore's `before-send` hook: the request body it reads, the
response (or error) it hands back for botocore to parse, and the service models' shapes."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from functools import cache
from io import BytesIO
from typing import Any
from urllib.parse import urlsplit

import botocore.session
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.compat import HTTPHeaders

ANSWERED_HOST = "answered-by-spotline-standin.invalid"


class ApiError(Exception):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status

    def raise_it(self) -> dict[str, Any]:
        """The operation of an answer that is this error (`answer(..., error.raise_it)`)."""
        raise self


class RawBody(BytesIO):
    """What botocore reads a response body from (moto's MockRawResponse does the same)."""

    def stream(self, **_: Any) -> Any:
        contents = self.read()
        while contents:
            yield contents
            contents = self.read()


@cache
def _service_model(service: str) -> Any:
    """One model per service per process: a session and its model load cost a tenth of a second."""
    return botocore.session.get_session().get_service_model(service)


@cache
def shape(service: str, operation: str, which: str) -> Any:
    model = _service_model(service).operation_model(operation)
    return model.input_shape if which == "input" else model.output_shape


def shape_problems(value: Any, shape: Any, path: str = "") -> list[str]:
    """Where an answer breaks botocore's output shape: a key the shape does not have, a wire type
    botocore does not expect, an enum value it does not list, a required member missing. botocore's
    parser silently drops unknown keys and never checks required members, so a lenient answer would
    pass every test unseen; the stand-in checks each of its answers with this."""
    if shape is None:  # an operation without output (StopTrainingJob): an empty body
        return [] if value == {} else [f"{path}: the operation has no output"]
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            return [f"{path}: not a structure"]
        problems = [f"{path}.{k}: required by {shape.name}" for k in shape.required_members if k not in value]
        for key, item in value.items():
            if key not in shape.members:
                problems.append(f"{path}.{key}: not a member of {shape.name}")
            else:
                problems += shape_problems(item, shape.members[key], f"{path}.{key}")
        return problems
    if kind == "list":
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        return [p for i, item in enumerate(value) for p in shape_problems(item, shape.member, f"{path}[{i}]")]
    if kind == "map":
        if not isinstance(value, dict):
            return [f"{path}: not a map"]
        return [p for key, item in value.items() for p in shape_problems(item, shape.value, f"{path}[{key}]")]
    wire_types: dict[str, tuple[type, ...]] = {
        "integer": (int,),
        "long": (int,),
        "timestamp": (int, float),
        "boolean": (bool,),
        "double": (int, float),
        "float": (int, float),
    }
    expected = wire_types.get(kind, (str,))
    if not isinstance(value, expected) or (isinstance(value, bool) and kind != "boolean"):
        return [f"{path}: {type(value).__name__} where {kind} is expected"]
    if kind == "string" and "enum" in shape.metadata and value not in shape.metadata["enum"]:
        return [f"{path}: {value!r} is not one of {shape.name}"]
    return []


def request_problems(value: Any, shape: Any, path: str = "") -> list[str]:
    """Where a request breaks what the service validates from its model beyond botocore's own
    client-side checks (required members, types, minimums): enum values, maximum lengths and
    sizes, string patterns and numeric ranges, as the API references list them under each
    member's "Length Constraints", "Pattern", "Valid Values" and "Valid Range"."""
    if shape is None or value is None:
        return []
    kind, meta = shape.type_name, shape.metadata
    if kind == "structure" and isinstance(value, dict):
        problems = [f"{path}.{k}: is required" for k in shape.required_members if k not in value]
        for key, item in value.items():
            if key in shape.members:
                problems += request_problems(item, shape.members[key], f"{path}.{key}" if path else key)
        return problems
    if kind == "list" and isinstance(value, list):
        problems = _size_problems(len(value), meta, path, "items")
        return problems + [
            p for i, item in enumerate(value) for p in request_problems(item, shape.member, f"{path}[{i}]")
        ]
    if kind == "map" and isinstance(value, dict):
        problems = _size_problems(len(value), meta, path, "entries")
        return problems + [
            p for key, item in value.items() for p in request_problems(item, shape.value, f"{path}.{key}")
        ]
    if kind == "string" and isinstance(value, str):
        if "enum" in meta and value not in meta["enum"]:
            return [f"{path}: {value!r} is not one of {', '.join(meta['enum'])}"]
        problems = _size_problems(len(value), meta, path, "characters")
        pattern = meta.get("pattern")
        if pattern and not _matches(pattern, value):
            problems.append(f"{path}: {value[:80]!r} does not match {pattern}")
        return problems
    if kind in ("integer", "long", "double", "float") and isinstance(value, (int, float)):
        low, high = meta.get("min"), meta.get("max")
        if (low is not None and value < low) or (high is not None and value > high):
            return [f"{path}: {value} is outside {low}..{high}"]
    return []


def _size_problems(size: int, meta: dict[str, Any], path: str, unit: str) -> list[str]:
    low, high = meta.get("min"), meta.get("max")
    if low is not None and size < low:
        return [f"{path}: at least {low} {unit}, got {size}"]
    if high is not None and size > high:
        return [f"{path}: at most {high} {unit}, got {size}"]
    return []


@cache
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:  # a Java-only construct: left to the service, as botocore leaves it
        return None


def _matches(pattern: str, value: str) -> bool:
    compiled = _compiled(pattern)
    return compiled is None or compiled.search(value) is not None


class StandInAnswerInvalid(AssertionError):
    """An answer of the stand-in that botocore's output shape refuses: a bug in the stand-in."""


def target_of(request: AWSPreparedRequest) -> str:
    """A JSON-protocol request's X-Amz-Target (`Prefix.Operation`; botocore may hold it as bytes)."""
    target = request.headers.get("X-Amz-Target", "")
    return target.decode() if isinstance(target, bytes) else str(target)


def json_body(request: AWSPreparedRequest) -> dict[str, Any]:
    body = request.body
    if body is None or body in (b"", ""):
        return {}
    if hasattr(body, "read"):
        return {}  # streaming bodies belong to no operation the stand-in serves
    parsed = json.loads(body.decode() if isinstance(body, bytes) else str(body))
    return parsed if isinstance(parsed, dict) else {}


def answer(request: AWSPreparedRequest, protocol: str, serial: int, run: Callable[[], dict[str, Any]]) -> AWSResponse:
    """Run the operation and serialize its result or error the way botocore parses them.

    botocore still calls every later `before-send` handler (it takes the first response,
    but emits to all), and moto's stubber, registered on every session, would then serve
    the same request again (and raise NotImplementedError for StopTrainingJob). Pointing
    the answered request at a host that nothing stubs makes it a no-op for them.
    """
    url = request.url
    parts = urlsplit(url)
    request.url = parts._replace(netloc=ANSWERED_HOST).geturl()
    headers = HTTPHeaders()
    headers["x-amzn-RequestId"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"standin/request/{serial}"))
    headers["Content-Type"] = "application/json" if protocol == "rest-json" else "application/x-amz-json-1.1"
    try:
        status, payload = 200, run()
    except ApiError as error:
        status = error.status
        if protocol == "rest-json":
            headers["x-amzn-ErrorType"] = error.code
            payload = {"message": error.message}
        else:
            payload = {"__type": error.code, "message": error.message}
    raw = json.dumps(payload).encode()
    headers["Content-Length"] = str(len(raw))
    return AWSResponse(url, status, headers, RawBody(raw))
