"""boto3 clients for the handlers: one per service per process, with botocore's standard
retry mode absorbing throttling and transient errors inside a Lambda invocation."""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from botocore.config import Config

RETRY_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=30)


@cache
def client(service: str, region: str | None = None) -> Any:
    return boto3.client(service, region_name=region, config=RETRY_CONFIG)  # type: ignore[call-overload]


@cache
def resource(service: str) -> Any:
    return boto3.resource(service, config=RETRY_CONFIG)  # type: ignore[call-overload]


def reset_clients() -> None:
    """Forget cached clients (tests and the sandbox call this after changing the session)."""
    client.cache_clear()
    resource.cache_clear()


def error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def split_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/a/b` -> (`bucket`, `a/b`)."""
    rest = uri.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    return bucket, prefix
