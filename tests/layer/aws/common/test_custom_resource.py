"""The custom resource protocol: exactly one answer to CloudFormation's ResponseURL per request,
SUCCESS with the work's id and data, FAILED with a readable reason on any error or when the
invocation is about to time out, in a body CloudFormation accepts."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from io import BytesIO
from typing import Any
from urllib.error import URLError
from urllib.request import Request

import pytest

from spotline.aws.common import custom_resource
from spotline.aws.common.custom_resource import CustomResourceError, Result

URL = "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/stack/resource?X-Amz-Signature=abc"
EVENT = {
    "RequestType": "Create",
    "ResponseURL": URL,
    "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/spotline/1",
    "RequestId": "request-1",
    "LogicalResourceId": "TeamQuotaShares",
    "ResourceType": "Custom::TeamQuotaShares",
    "ResourceProperties": {},
}


@dataclass
class Context:
    remaining_ms: int = 120_000
    log_stream_name: str = "2026/11/29/[$LATEST]abc"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@dataclass
class Put:
    url: str
    method: str
    headers: dict[str, str]
    body: dict[str, Any]
    size: int


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Put]]:
    sent: list[Put] = []

    def urlopen(request: Request, timeout: float | None = None) -> BytesIO:
        assert isinstance(request.data, bytes)
        sent.append(
            Put(
                request.full_url,
                request.get_method(),
                dict(request.header_items()),
                json.loads(request.data),
                len(request.data),
            )
        )
        return BytesIO(b"")

    monkeypatch.setattr(custom_resource, "urlopen", urlopen)
    yield sent


def test_success_answers_once_with_the_works_id_and_data(answers: list[Put]) -> None:
    status = custom_resource.run(EVENT, Context(), lambda event: Result("queue-arn", {"Created": "2"}))
    assert status == "SUCCESS"
    (put,) = answers
    assert (put.url, put.method) == (URL, "PUT")
    assert put.headers["Content-type"] == ""  # the presigned URL signs no content type
    assert put.body == {
        "Status": "SUCCESS",
        "PhysicalResourceId": "queue-arn",
        "StackId": EVENT["StackId"],
        "RequestId": "request-1",
        "LogicalResourceId": "TeamQuotaShares",
        "NoEcho": False,
        "Data": {"Created": "2"},
    }


def test_an_error_answers_failed_with_its_reason_and_where_to_read_more(answers: list[Put]) -> None:
    def broken(event: Mapping[str, Any]) -> Result:
        raise ValueError("teams.vision.quotaInstances: must be at least 1, got 0")

    assert custom_resource.run(EVENT, Context(), broken, failure_physical_id="queue-arn") == "FAILED"
    (put,) = answers
    assert put.body["Status"] == "FAILED"
    assert put.body["Reason"] == (
        "ValueError: teams.vision.quotaInstances: must be at least 1, got 0 (log stream 2026/11/29/[$LATEST]abc)"
    )
    assert put.body["PhysicalResourceId"] == "queue-arn"  # a failed Create: the rollback's Delete names it


def test_a_failed_update_or_delete_keeps_the_id_cloudformation_knows(answers: list[Put]) -> None:
    def broken(event: Mapping[str, Any]) -> Result:
        raise CustomResourceError("no")

    for request in ("Update", "Delete"):
        event = {**EVENT, "RequestType": request, "PhysicalResourceId": "old-queue-arn"}
        custom_resource.run(event, Context(), broken, failure_physical_id="new-queue-arn")
    assert [p.body["PhysicalResourceId"] for p in answers] == ["old-queue-arn", "old-queue-arn"]
    custom_resource.run(EVENT, Context(), broken)  # a Create that failed before knowing anything
    assert answers[-1].body["PhysicalResourceId"] == "TeamQuotaShares-not-created"


def test_a_long_reason_is_clipped_so_the_body_stays_under_4096_bytes(answers: list[Put]) -> None:
    def verbose(event: Mapping[str, Any]) -> Result:
        raise RuntimeError("x" * 10_000)

    custom_resource.run(EVENT, Context(), verbose)
    (put,) = answers
    assert put.size < 4096
    assert put.body["Reason"].endswith("...") and len(put.body["Reason"]) == custom_resource.MAX_REASON


def _outlasting_the_watchdog(patch: pytest.MonkeyPatch) -> Callable[[Mapping[str, Any]], Result]:
    """Work that finishes only once the watchdog has answered CloudFormation (too late)."""
    answered = threading.Event()
    original = custom_resource.put

    def put(url: str, body: bytes) -> None:
        original(url, body)
        answered.set()

    def slow(event: Mapping[str, Any]) -> Result:
        assert answered.wait(30), "the watchdog did not answer"
        return Result("queue-arn")

    patch.setattr(custom_resource, "put", put)
    return slow


def test_work_still_running_near_the_deadline_answers_failed_once(answers: list[Put]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        slow = _outlasting_the_watchdog(patch)
        status = custom_resource.run(EVENT, Context(remaining_ms=10_000), slow, margin_seconds=10)
    assert status == "FAILED"
    (only,) = answers
    assert only.body["Status"] == "FAILED"
    assert only.body["Reason"].startswith("timed out before the work finished")


def test_with_delete_succeeds_a_delete_never_answers_failed(answers: list[Put]) -> None:
    """A stack's deletion must not end in DELETE_FAILED over a clean-up that cannot finish."""
    delete = {**EVENT, "RequestType": "Delete", "PhysicalResourceId": "queue-arn"}

    def broken(event: Mapping[str, Any]) -> Result:
        raise CustomResourceError("Batch said no")

    assert custom_resource.run(delete, Context(), broken, delete_succeeds=True) == "SUCCESS"
    assert (answers[-1].body["Status"], answers[-1].body["PhysicalResourceId"]) == ("SUCCESS", "queue-arn")
    assert answers[-1].body["Reason"] == (
        "CustomResourceError: Batch said no; whatever it had not cleaned up is left in place, the stack's "
        "deletion goes on (log stream 2026/11/29/[$LATEST]abc)"
    )
    # Create and Update still fail: a stack must not be created or updated on a failed step.
    for request in ("Create", "Update"):
        assert custom_resource.run({**delete, "RequestType": request}, Context(), broken, delete_succeeds=True) == (
            "FAILED"
        )
    # A Result's reason goes with its SUCCESS (what a Delete left behind).
    left = Result("queue-arn", {"LeftInPlace": "vision"}, reason="vision left in place")
    assert custom_resource.run(delete, Context(), lambda event: left, delete_succeeds=True) == "SUCCESS"
    assert (answers[-1].body["Reason"], answers[-1].body["Data"]) == ("vision left in place", {"LeftInPlace": "vision"})


def test_with_delete_succeeds_a_delete_running_out_of_time_answers_success_once(answers: list[Put]) -> None:
    delete = {**EVENT, "RequestType": "Delete", "PhysicalResourceId": "queue-arn"}
    with pytest.MonkeyPatch.context() as patch:
        slow = _outlasting_the_watchdog(patch)
        status = custom_resource.run(
            delete, Context(remaining_ms=10_000), slow, margin_seconds=10, delete_succeeds=True
        )
    assert status == "SUCCESS"
    (only,) = answers
    assert (only.body["Status"], only.body["PhysicalResourceId"]) == ("SUCCESS", "queue-arn")
    assert only.body["Reason"].startswith("timed out before the work finished; whatever it had not cleaned up")


def test_the_answer_goes_only_to_an_https_url(answers: list[Put]) -> None:
    with pytest.raises(CustomResourceError, match="not an HTTPS URL"):
        custom_resource.run({**EVENT, "ResponseURL": "http://169.254.169.254/latest"}, Context(), lambda e: Result("x"))
    assert answers == []


def test_a_failed_put_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def flaky(request: Request, timeout: float | None = None) -> BytesIO:
        calls.append(request.full_url)
        if len(calls) < 3:
            raise URLError("connection reset")
        return BytesIO(b"")

    monkeypatch.setattr(custom_resource, "urlopen", flaky)
    assert custom_resource.run(EVENT, Context(), lambda e: Result("x")) == "SUCCESS"
    assert len(calls) == 3


def test_an_answer_that_cannot_be_sent_fails_the_invocation_for_lambda_to_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def down(request: Request, timeout: float | None = None) -> BytesIO:
        raise URLError("network down")

    monkeypatch.setattr(custom_resource, "urlopen", down)
    with pytest.raises(URLError, match="network down"):
        custom_resource.run(EVENT, Context(), lambda e: Result("x"))
