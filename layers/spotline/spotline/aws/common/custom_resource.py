"""The CloudFormation custom resource protocol for a Lambda-backed resource: run the work for a
Create, Update or Delete request and answer the request's ResponseURL (a presigned S3 URL) with
one HTTPS PUT, whatever happens, so a stack never waits for an answer that does not come.

- Any exception answers FAILED with its message as the Reason (CloudFormation shows it in the
  stack events) plus the log stream to read.
- A watchdog answers FAILED shortly before the Lambda deadline if the work is still running
  (a timed-out invocation would otherwise leave the stack waiting for the resource's
  ServiceTimeout); whichever answer comes first is the only one sent.
- The body stays under CloudFormation's 4,096 bytes: the Reason is clipped.
- With `delete_succeeds`, a Delete is answered SUCCESS even when its work fails or times out
  (the Reason says so): a resource whose clean-up cannot finish must not block the stack's
  deletion (DELETE_FAILED); what was left is logged and named in the Reason.

The one network call is `urlopen` below (the local stack and the tests patch it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

from spotline.aws.common.observability import logger

MAX_REASON = 1500  # characters; the rest of the body (ids, Data) stays well within 4,096 bytes
WATCHDOG_MARGIN_SECONDS = 10.0
PUT_ATTEMPTS = 3
PUT_TIMEOUT_SECONDS = 10.0


class CustomResourceError(Exception):
    """A request that cannot be worked on as sent (the message becomes the FAILED Reason)."""


@dataclass(frozen=True, slots=True)
class Result:
    """What a successful Create/Update/Delete answers: the resource's id, and values for Fn::GetAtt."""

    physical_id: str
    data: Mapping[str, str] = field(default_factory=dict)
    reason: str | None = None  # sent with SUCCESS too (a Delete that left something behind says what)


Work = Callable[[Mapping[str, Any]], Result]


def fallback_physical_id(event: Mapping[str, Any]) -> str:
    """The id to answer a failure with: the one CloudFormation knows (Update, Delete), or one
    derived from the request (a failed Create), never empty."""
    return str(event.get("PhysicalResourceId") or f"{event.get('LogicalResourceId', 'resource')}-not-created")


def run(
    event: Mapping[str, Any],
    context: Any,
    work: Work,
    *,
    failure_physical_id: str | None = None,
    margin_seconds: float = WATCHDOG_MARGIN_SECONDS,
    delete_succeeds: bool = False,
) -> str:
    """Run `work(event)` and answer CloudFormation once: SUCCESS with its Result, FAILED on any
    exception or when the invocation is about to time out. A FAILED Create answers
    `failure_physical_id` (what the rollback's Delete then names), else `fallback_physical_id`.
    With `delete_succeeds`, a Delete answers SUCCESS in those cases too, with the reason and the
    id CloudFormation sent. Returns the Status sent."""
    answer = _Answer(event, failure_physical_id if event.get("RequestType") == "Create" else None)
    remaining = float(context.get_remaining_time_in_millis()) / 1000.0 if context is not None else 900.0
    log_stream = str(getattr(context, "log_stream_name", "") or "")
    seen = f" (log stream {log_stream})" if log_stream else ""
    lenient = delete_succeeds and event.get("RequestType") == "Delete"
    failed = "SUCCESS" if lenient else "FAILED"
    left = "; whatever it had not cleaned up is left in place, the stack's deletion goes on" if lenient else ""
    watchdog = threading.Timer(
        max(0.0, remaining - margin_seconds),
        lambda: answer.send(failed, f"timed out before the work finished{left}{seen}"),
    )
    watchdog.daemon = True
    watchdog.start()
    try:
        result = work(event)
    except Exception as exc:  # every failure must reach CloudFormation, never hang the stack
        logger.exception("Custom resource request failed", extra={"requestType": event.get("RequestType")})
        return answer.send(failed, f"{type(exc).__name__}: {exc}{left}{seen}")
    finally:
        watchdog.cancel()
        watchdog.join()  # a watchdog answer under way completes before the invocation returns
    return answer.send("SUCCESS", result.reason, physical_id=result.physical_id, data=result.data)


class _Answer:
    """The one response of a request (the first `send` wins; later ones are dropped)."""

    def __init__(self, event: Mapping[str, Any], failure_physical_id: str | None) -> None:
        self.event = event
        self.failure_physical_id = failure_physical_id or fallback_physical_id(event)
        self._lock = threading.Lock()
        self._sent: str | None = None

    def send(
        self,
        status: str,
        reason: str | None = None,
        *,
        physical_id: str | None = None,
        data: Mapping[str, str] | None = None,
    ) -> str:
        with self._lock:
            if self._sent is not None:
                logger.warning("Custom resource already answered", extra={"sent": self._sent, "dropped": status})
                return self._sent
            self._sent = status
        body: dict[str, Any] = {
            "Status": status,
            "PhysicalResourceId": physical_id or self.failure_physical_id,
            "StackId": self.event.get("StackId"),
            "RequestId": self.event.get("RequestId"),
            "LogicalResourceId": self.event.get("LogicalResourceId"),
            "NoEcho": False,
            "Data": dict(data or {}),
        }
        if reason:
            body["Reason"] = reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 3] + "..."
        put(str(self.event.get("ResponseURL") or ""), json.dumps(body).encode())
        logger.info("Custom resource answered", extra={"status": status, "reason": body.get("Reason")})
        return status


def put(url: str, body: bytes) -> None:
    """PUT the response to the presigned URL (HTTPS only). The Content-Type stays empty: the
    URL's signature covers no content type. Tries a few times; raises the last error."""
    if urlsplit(url).scheme != "https":
        raise CustomResourceError(f"ResponseURL is not an HTTPS URL: {urlsplit(url).scheme or 'none'}")
    error: Exception | None = None
    for _ in range(PUT_ATTEMPTS):
        request = Request(url, data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))})
        try:
            with urlopen(request, timeout=PUT_TIMEOUT_SECONDS) as response:  # https only: checked above
                response.read()
            return
        except OSError as exc:  # URLError, HTTPError and timeouts are OSErrors
            error = exc
            logger.warning("Answering CloudFormation failed, trying again", extra={"error": str(exc)})
    assert error is not None
    raise error
