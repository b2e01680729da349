"""boto3 clients for the handlers: one per service per process, with botocore's standard
retry mode absorbing throttling and transient errors inside a Lambda invocation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import Any

import boto3
from botocore.config import Config

RETRY_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30)


REGIONAL = frozenset({"batch", "sagemaker", "logs"})
"""The services an attempt is reached through in its own region (`in_region`); the rest stay home."""
_ATTEMPT_REGION: ContextVar[str | None] = ContextVar("attempt_region", default=None)


def client(service: str, region: str | None = None) -> Any:
    """The process's client of `service` in `region`; for Batch, SageMaker and Logs without a
    region, in the region of the attempt being handled (`in_region`), else the Lambda's."""
    if region is None and service in REGIONAL:
        region = _ATTEMPT_REGION.get()
    return _client(service, region)


@contextmanager
def in_region(region: str | None) -> Iterator[None]:
    """Batch, SageMaker and Logs calls inside go to `region` (None: the Lambda's own)."""
    token = _ATTEMPT_REGION.set(region)
    try:
        yield
    finally:
        _ATTEMPT_REGION.reset(token)


@cache
def _client(service: str, region: str | None) -> Any:
    return boto3.client(service, region_name=region, config=RETRY_CONFIG)  # type: ignore[call-overload]


@cache
def resource(service: str) -> Any:
    return boto3.resource(service, config=RETRY_CONFIG)  # type: ignore[call-overload]


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
