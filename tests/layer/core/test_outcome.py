"""Deciding the outcome and its figures from the execution state."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spotline.core.billing import JobBill, RunBill
from spotline.core.manifest import validate_bytes
from spotline.core.outcome import (
    RESOURCE_VALIDATION_FAILED,
    SUCCEEDED,
    TRAINING_FAILED,
    UNEXPECTED_ERROR,
    Figures,
    decide,
    unknown_until_billed,
)

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
    assert figures.cost_usd == round(1.515 * 3240 / 3600, 4)
    # Without the bills (the jobs read after they ended) there is no baseline and no saving yet.
    assert (figures.on_demand_cost_usd, figures.savings_percent, figures.billing_settled) == (None, None, False)


def _bill(*jobs: dict[str, Any], kept: float) -> RunBill:
    base = {"name": "j", "ended": True, "completed": False, "last_stretch_seconds": 0, "upload_seconds": 60}
    return RunBill(tuple(JobBill(**(base | job)) for job in jobs), checkpointed=True, kept_work_seconds=kept)


def test_the_figures_of_a_run_come_from_its_bills_when_they_are_read() -> None:
    state = _state(
        training={"attempt": 2, "capacity": "on-demand", "previousAttempts": [{"attempt": 1, "capacity": "spot"}]},
        status=_status("completed", trainingSeconds=7260, billableSeconds=7260),
    )
    spot = {"training_seconds": 5460, "billable_seconds": 1638, "in_training_seconds": 5400, "download_seconds": 60}
    on_demand = {
        "completed": True,
        "training_seconds": 3720,
        "billable_seconds": 3720,
        "in_training_seconds": 3600,
        "download_seconds": 60,
        "interruptions": 0,
    }
    figures = decide(state, NOW, region=REGION, bill=_bill(spot, on_demand, kept=7200)).figures

    assert figures.billable_seconds == 1638 + 3720  # the stopped spot attempt is billed too
    assert figures.cost_usd == round(1.515 * 5358 / 3600, 4)
    assert figures.on_demand_seconds == 7200 + 60 + 60
    assert figures.on_demand_cost_usd == round(1.515 * 7320 / 3600, 4)
    assert figures.savings_percent == round(100 * (1 - 5358 / 7320), 2)
    assert (figures.lost_work_seconds, figures.on_demand_fallback, figures.billing_settled) == (1800, True, True)


def test_a_run_stopped_after_its_spot_job_was_stopped_for_on_demand_counts_as_a_fallback() -> None:
    state = _state(
        training={"attempt": 1, "capacity": "spot"},
        status=_status("training"),
        fallback={"jobId": "j-1", "terminated": True},
    )
    assert decide(state, NOW, region=REGION).figures.on_demand_fallback is True


def test_a_run_that_finished_late_still_reports_its_saving() -> None:
    state = _state(
        training={"attempt": 1, "capacity": "spot"},
        status=_status("completed", endedAt="2026-12-03T00:00:00+00:00"),
    )
    job = {"completed": True, "training_seconds": 7320, "billable_seconds": 2196, "in_training_seconds": 7200}
    outcome = decide(state, NOW, region=REGION, bill=_bill(job | {"download_seconds": 60}, kept=7200))

    assert outcome.name == "DeadlineMissed"
    assert outcome.figures.savings_percent == 70.0


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


def test_an_ended_run_read_before_its_job_has_ended_costs_unknown_not_zero() -> None:
    """SageMaker fills BillableTimeInSeconds once a job has ended: until then its bill is 0 seconds."""
    job = {"training_seconds": 10800, "billable_seconds": 0, "in_training_seconds": 10700, "download_seconds": 60}
    training = _bill(job | {"name": "AWSBatchranker-v2-a1-spot", "ended": False}, kept=10500)
    numbers = unknown_until_billed(Figures(training_seconds=10800, cost_usd=0.0), training)
    assert numbers.cost_usd is None and numbers.training_seconds == 10800
    assert numbers.cost_unknown == (
        "training job(s) AWSBatchranker-v2-a1-spot had not ended yet: SageMaker bills a training job once it has ended"
    )
    ended = _bill(job | {"billable_seconds": 3240}, kept=10500)
    known = Figures(cost_usd=1.3635)
    assert unknown_until_billed(known, ended) is known  # every job ended: the bill is final
    assert unknown_until_billed(known, None) is known  # a run under way: its cost so far
