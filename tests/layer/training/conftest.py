"""Fixtures of the checkpoint helpers' tests."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest


@pytest.fixture
def sigterm_guard() -> Iterator[None]:
    """Whatever a test does, the process's SIGTERM handler is what it was before."""
    previous = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
