"""What the tests build their jobs from, in one place: the example manifest CI validates
(examples/manifests/ranker-v2.yaml), changed where a test needs it, and validated as Intake
validates an upload. Pure: no stack, no AWS (conftest.py holds the fixtures that start one)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spotline.core.manifest.manifest import validate_bytes
from spotline.core.spec.model import JobSpec

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_MANIFEST = ROOT / "examples" / "manifests" / "ranker-v2.yaml"
EXAMPLE_KEY = "manifests/search-ranking/ranker-v2.yaml"
VALIDATED_AT = datetime(2026, 11, 29, tzinfo=UTC)
"""Before the example's deadline (2026-12-02T06:00Z) by more than its run: the example is valid."""


def spec_of(manifest: bytes | str | Mapping[str, Any], now: datetime = VALIDATED_AT) -> JobSpec:
    """The job a manifest (its bytes, its text, or the document as a mapping) describes; it must
    be valid at `now`."""
    if isinstance(manifest, Mapping):
        data = json.dumps(manifest).encode()
    else:
        data = manifest.encode() if isinstance(manifest, str) else manifest
    result = validate_bytes(data, now=now)
    assert result.spec is not None, result.errors
    return result.spec


def example_text(*changes: tuple[str, str]) -> str:
    """The example manifest with each `(old, new)` of `changes` replaced in turn (every `old`
    must be in the text by then: a change that no longer applies fails the test, not passes it)."""
    text = EXAMPLE_MANIFEST.read_text()
    for old, new in changes:
        assert old in text, f"{old!r} is not in {EXAMPLE_MANIFEST.name} (after the changes before it)"
        text = text.replace(old, new)
    return text


def example_with(old: str, new: str) -> bytes:
    """The example manifest's bytes with `old` replaced by `new`."""
    return example_text((old, new)).encode()


def example_spec(now: datetime = VALIDATED_AT) -> JobSpec:
    """The example manifest's job, validated at `now`."""
    return spec_of(EXAMPLE_MANIFEST.read_bytes(), now)
