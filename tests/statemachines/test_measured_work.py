"""The deadline policy plans with the job's real work, measured from the training seconds the
checkpoint helper records in progress.json, once there is a checkpoint (issue 14)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from conftest import NOW, example_spec, run_upload, team_policy_for
from spotline.core.capacity.policy import (
    MARGIN_REFERENCE_SECONDS,
    MEASURED_MARGIN_FRACTION,
    MIN_MEASURED_MARGIN_FRACTION,
    MIN_MEASURED_MARGIN_SECONDS,
    SAFETY_MARGIN_FRACTION,
)
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.standin import TrainingBehaviour

DECLARED, REAL = 8 * 3600, 10 * 3600  # the example declares 8 h; this job really trains 10 h


@pytest.fixture
def longer_than_declared() -> Iterator[LocalStack]:
    spec = example_spec()
    assert spec.expected_duration_seconds == DECLARED
    with start_local_stack(
        NOW,
        team_policy=team_policy_for(spec),
        behaviour=lambda _request: TrainingBehaviour(duration=REAL),
    ) as local:
        prepare_account(local.client, spec)
        yield local


def _checks(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        json.loads(e["stateExitedEventDetails"]["output"])["status"]
        for e in history
        if e.get("stateExitedEventDetails", {}).get("name") == "CheckTrainingStatus"
    ]


def test_after_the_first_checkpoint_the_slack_is_figured_on_the_measured_work(
    longer_than_declared: LocalStack, example_manifest: bytes
) -> None:
    execution, history = run_upload(longer_than_declared, example_manifest)

    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    checks = _checks(history)
    before = [c for c in checks if c["progress"]["source"] != "progress.json"]
    measured = [c for c in checks if c["progress"]["source"] == "progress.json" and c["progress"]["fraction"] < 1]
    assert before and measured
    assert all(c["progress"]["estimatedWorkSeconds"] is None for c in before)
    deadline = datetime.fromisoformat(example_spec().deadline or "")
    for check in measured:
        progress, decision = check["progress"], check["decision"]
        assert progress["estimatedWorkSeconds"] == pytest.approx(REAL, rel=0.01)
        left = (deadline - datetime.fromisoformat(check["checkedAt"])).total_seconds()
        remaining = REAL * (1 - progress["fraction"])
        # The work is measured: the margin's share shrinks with the training the pace rests on.
        share = MEASURED_MARGIN_FRACTION * math.sqrt(MARGIN_REFERENCE_SECONDS / progress["trainingSeconds"])
        margin = max(
            MIN_MEASURED_MARGIN_SECONDS,
            min(SAFETY_MARGIN_FRACTION, max(MIN_MEASURED_MARGIN_FRACTION, share)) * remaining,
        )
        needs = remaining + decision["restartOverheadSeconds"] + margin
        assert decision["slackSeconds"] == pytest.approx(left - needs, abs=60)
