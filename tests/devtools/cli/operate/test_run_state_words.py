"""How `spotline runs`/`status` put a run's state in words from its newest state document (pure:
`run_of`, no stack)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from state_samples import EXECUTION, dependencies_state, manifest_state, resources_state

from spotline_dev.cli.operate.runs import run_of

NOW = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
INPUT = {"bucket": "ingest", "key": "manifests/search-ranking/ranker.yaml", "versionId": "v1", "team": "search-ranking"}


def _state_of(document: dict[str, Any]) -> str:
    described = {"name": "ranker-v2-1", "executionArn": EXECUTION, "status": "RUNNING", "startDate": NOW}
    return str(run_of(described, {**INPUT, "receivedAt": "2026-12-01T06:00:00Z", **document}, {}, NOW).state)


def test_a_run_waiting_for_its_datasets_says_so() -> None:
    waiting = dependencies_state(ready=False, missing=["clicks"])
    assert _state_of({"manifest": manifest_state(), "dependencies": waiting}) == "waiting for datasets"


def test_a_run_whose_datasets_are_ready_or_that_waits_for_none_is_validating() -> None:
    assert _state_of({"manifest": manifest_state(), "dependencies": dependencies_state()}) == "validating"
    assert _state_of({"manifest": manifest_state()}) == "validating"


def test_a_run_past_its_resources_check_is_no_longer_waiting_for_datasets() -> None:
    waited = dependencies_state(ready=False, missing=["clicks"])
    document = {"manifest": manifest_state(), "dependencies": waited, "resources": resources_state()}
    assert _state_of(document) == "validating"
