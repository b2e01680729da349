"""boto3 clients for the handlers: one per service per process, with botocore's standard
retry mode absorbing throttling and transient errors inside a Lambda invocation.

The budget at the call: 6 attempts, the first try and 5 retries (botocore's Config: `max_attempts`
is "the maximum number of retry attempts", the initial request not counted), each retry after
`random(0, 1) * min(2 ** (attempt - 1), 20)` seconds (botocore's ExponentialBackoff, full jitter),
for the codes botocore's standard mode retries: throttles (`Throttling`, `ThrottlingException`,
`TooManyRequestsException`, S3's `SlowDown`, ...: `ThrottledRetryableChecker`), 500/502/503/504
and `RequestTimeout` (`TransientRetryableChecker`), and the errors a service model marks
retryable. An answer still of that kind once the attempts are spent is raised as
`TransientAwsError`, an error name the state machines retry at the task (a second, longer budget
with back-off and jitter); any other error stays botocore's `ClientError`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.retries.standard import (
    ModeledRetryableChecker,
    OrRetryChecker,
    RetryContext,
    ThrottledRetryableChecker,
    TransientRetryableChecker,
)

from spotline.core.common.errors import SpotlineError

RETRY_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30)
_RETRYABLE = OrRetryChecker([TransientRetryableChecker(), ThrottledRetryableChecker(), ModeledRetryableChecker()])
"""What botocore's standard mode retries (its own checkers, not a copy of their code lists)."""


class TransientAwsError(ClientError, SpotlineError):
    """An AWS answer botocore retries (throttle, 5xx, SlowDown) still failing after the call's
    budget. Still a ClientError (`error_code` reads it); its class name is the error name Step
    Functions sees, which every Lambda task of the state machines retries."""


REGIONAL = frozenset({"batch", "sagemaker", "logs"})
"""The services an attempt is reached through in its own region (`in_region`); the rest stay home."""
_ATTEMPT_REGION: ContextVar[str | None] = ContextVar("attempt_region", default=None)


def client(service: str, region: str | None = None, *, config: Config = RETRY_CONFIG) -> Any:
    """The process's client of `service` in `region`; for Batch, SageMaker and Logs without a
    region, in the region of the attempt being handled (`in_region`), else the Lambda's.
    `config`: another retry budget, for a call whose failure has a fallback (a module constant:
    clients are cached per config)."""
    if region is None and service in REGIONAL:
        region = _ATTEMPT_REGION.get()
    return _client(service, region, config)


@contextmanager
def in_region(region: str | None) -> Iterator[None]:
    """Batch, SageMaker and Logs calls inside go to `region` (None: the Lambda's own)."""
    token = _ATTEMPT_REGION.set(region)
    try:
        yield
    finally:
        _ATTEMPT_REGION.reset(token)


@cache
def _client(service: str, region: str | None, config: Config = RETRY_CONFIG) -> Any:
    made = boto3.client(service, region_name=region, config=config)  # type: ignore[call-overload]
    made.meta.events.register("after-call", raise_transient)
    return made


def raise_transient(http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
    """botocore's `after-call` hook, which runs once its retries are done: an error answer of a
    kind botocore retries is raised as TransientAwsError (botocore would raise ClientError)."""
    if http_response is None or http_response.status_code < 300:
        return
    context = RetryContext(attempt_number=1, operation_model=model, parsed_response=parsed, http_response=http_response)
    if _RETRYABLE.is_retryable(context):
        raise TransientAwsError(parsed, model.name)  # type: ignore[arg-type]


@cache
def resource(service: str) -> Any:
    made = boto3.resource(service, config=RETRY_CONFIG)  # type: ignore[call-overload]
    made.meta.client.meta.events.register("after-call", raise_transient)
    return made


def reset_clients() -> None:
    """Forget cached clients (tests and the sandbox call this after changing the session)."""
    _client.cache_clear()
    resource.cache_clear()


def error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def split_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/a/b` -> (`bucket`, `a/b`)."""
    rest = uri.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    return bucket, prefix
