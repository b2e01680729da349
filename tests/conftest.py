"""Shared fixtures: the local stack (moto + real handlers + real state machine) on a fixed clock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from spotline_dev.local_aws import LocalStack, start_local_stack

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_MANIFEST = ROOT / "examples" / "manifests" / "ranker-v2.yaml"
NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


@pytest.fixture
def stack() -> Iterator[LocalStack]:
    with start_local_stack(NOW) as local:
        yield local


@pytest.fixture
def example_manifest() -> bytes:
    return EXAMPLE_MANIFEST.read_bytes()


def sample_event(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "events" / name).read_text())  # type: ignore[no-any-return]


def upload(stack: LocalStack, key: str, body: bytes) -> str:
    """Put a manifest into the ingest bucket; returns its version id."""
    return stack.client("s3").put_object(Bucket=stack.bucket, Key=key, Body=body)["VersionId"]  # type: ignore[no-any-return]
