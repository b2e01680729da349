"""Deciding the outcome and its figures from the execution state."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spotline.core.manifest import validate_bytes
from spotline.core.outcome import RESOURCE_VALIDATION_FAILED, SUCCEEDED, TRAINING_FAILED, UNEXPECTED_ERROR, decide

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "manifests" / "ranker-v2.yaml"
NOW = datetime(2026, 11, 29, tzinfo=UTC)
REGION = "us-east-1"  # the price table's


def _state(**parts: Any) -> dict[str, Any]:
    spec = validate_bytes(EXAMPLE.read_bytes(), now=NOW).spec
    assert spec
    return {
        "bucket": "b",
        "key": "manifests/search-ranking/x.yaml",
        "manifest": {"valid": True, "spec": spec.to_dict()},
        **parts,
    }


def _status(state: str, **extra: Any) -> dict[str, Any]:
    return {"state": state, "trainingSeconds": 0, "billableSeconds": 0, "interruptions": 0, **extra}


def test_success_sums_figures_over_attempts_and_prices_them() -> None:
    earlier = {
        "attempt": 1,
        "finalStatus": _status(
            "failed", trainingSeconds=3600, billableSeconds=1080, interruptions=2, queueWaitSeconds=120
        ),
    }
    state = _state(
        training={"attempt": 2, "previousAttempts": [earlier]},
        status=_status("completed", trainingSeconds=7200, billableSeconds=2160, interruptions=1),
    )
    outcome = decide(state, NOW, region=REGION)
    assert outcome.name == SUCCEEDED and outcome.succeeded
    figures = outcome.figures
    assert (figures.attempts, figures.interruptions, figures.training_seconds, figures.billable_seconds) == (
        2,
        3,
        10800,
        3240,
    )
    assert figures.queue_wait_seconds == 120
    assert figures.spot_savings_percent == 70.0
    assert figures.cost_usd == round(1.515 * 3240 / 3600, 4)
    assert figures.on_demand_cost_usd == round(1.515 * 3, 4)


def test_training_failure_names_the_job_and_reason_class() -> None:
    state = _state(
        training={"attempt": 1},
        status=_status(
            "failed", reasonClass="algorithm", reason="AlgorithmError: NaN", trainingJobName="ranker-v2-1-a1-spot"
        ),
    )
    outcome = decide(state, NOW, region=REGION)
    assert outcome.name == TRAINING_FAILED
    assert outcome.cause == "ranker-v2-1-a1-spot failed (algorithm): AlgorithmError: NaN"
    assert "logs" in outcome.next_step


def test_resource_problems_and_unexpected_errors() -> None:
    invalid = decide(
        _state(resources={"valid": False, "summary": "1 error(s): spec.image: not found"}), NOW, region=REGION
    )
    assert (invalid.name, invalid.cause) == (RESOURCE_VALIDATION_FAILED, "1 error(s): spec.image: not found")
    crashed = decide(_state(failure={"Error": "States.Timeout", "Cause": "took too long"}), NOW, region=REGION)
    assert (crashed.name, crashed.cause) == (UNEXPECTED_ERROR, "States.Timeout: took too long")
