"""The call's retry budget (botocore's standard mode) and what is left once it is spent: the
answers AWS gives, sent below botocore (its `before-send` hook) so botocore parses and retries
them as it would AWS's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from spotline.aws.common.clients import TransientAwsError, client, error_code, reset_clients

# S3 API reference, Error responses: "SlowDown ... Please reduce your request rate. 503 Slow Down".
SLOW_DOWN = (503, b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>")
NO_SUCH_KEY = (404, b"<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>")
# Batch (restJson1): a throttle answers HTTP 429 with the error type in x-amzn-errortype.
BATCH_THROTTLE = (429, b'{"message": "Too Many Requests"}')
OK_BODY = b'{"jobSummaryList": []}'


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, bytes, dict[str, str]]]]:
    """The answers the next calls get, in order (the last one again past them); botocore's
    sleeps between retries skipped (botocore.endpoint sleeps with time.sleep)."""
    credentials = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "us-east-1"}
    for name, value in credentials.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("botocore.endpoint.time.sleep", lambda _seconds: None)
    queued: list[tuple[int, bytes, dict[str, str]]] = []
    reset_clients()
    yield queued


def _hook(service: str, answers: list[Any]) -> list[str]:
    sent: list[str] = []
    made = client(service)

    def answer(request: Any, **_: Any) -> AWSResponse:
        sent.append(request.url)
        status, body, headers = answers.pop(0) if len(answers) > 1 else answers[0]
        return AWSResponse(request.url, status, headers, _Raw(body))

    made.meta.events.register("before-send", answer)
    return sent


def test_five_slow_downs_are_absorbed_by_the_call_budget(answers: list[Any]) -> None:
    answers.extend([(*SLOW_DOWN, {})] * 5 + [(200, b"", {})])
    sent = _hook("s3", answers)
    client("s3").head_object(Bucket="b", Key="k")
    assert len(sent) == 6  # max_attempts 5 retries after the first try


def test_slow_down_past_the_budget_is_a_transient_aws_error(answers: list[Any]) -> None:
    answers.append((*SLOW_DOWN, {}))
    sent = _hook("s3", answers)
    with pytest.raises(TransientAwsError) as raised:
        client("s3").get_object(Bucket="b", Key="k")
    assert len(sent) == 6
    assert error_code(raised.value) == "SlowDown"
    assert isinstance(raised.value, ClientError)  # callers that read the code keep working
    assert type(raised.value).__name__ == "TransientAwsError"  # the error name Step Functions retries


def test_a_batch_throttle_past_the_budget_is_a_transient_aws_error(answers: list[Any]) -> None:
    answers.append((*BATCH_THROTTLE, {"x-amzn-errortype": "TooManyRequestsException"}))
    sent = _hook("batch", answers)
    with pytest.raises(TransientAwsError):
        client("batch").list_service_jobs(jobQueue="q")
    assert len(sent) == 6


def test_a_batch_5xx_past_the_budget_is_a_transient_aws_error(answers: list[Any]) -> None:
    answers.append((500, b'{"message": "internal"}', {"x-amzn-errortype": "ServerException"}))
    _hook("batch", answers)
    with pytest.raises(TransientAwsError) as raised:
        client("batch").list_service_jobs(jobQueue="q")
    assert error_code(raised.value) == "ServerException"


def test_a_throttle_then_success_returns_the_answer(answers: list[Any]) -> None:
    answers.extend([(*BATCH_THROTTLE, {"x-amzn-errortype": "TooManyRequestsException"}), (200, OK_BODY, {})])
    sent = _hook("batch", answers)
    assert client("batch").list_service_jobs(jobQueue="q")["jobSummaryList"] == []
    assert len(sent) == 2


def test_an_error_botocore_does_not_retry_stays_a_client_error(answers: list[Any]) -> None:
    answers.append((*NO_SUCH_KEY, {}))
    sent = _hook("s3", answers)
    with pytest.raises(ClientError) as raised:
        client("s3").get_object(Bucket="b", Key="k")
    assert not isinstance(raised.value, TransientAwsError)
    assert error_code(raised.value) == "NoSuchKey"
    assert len(sent) == 1
