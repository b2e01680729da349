"""Deciding the outcome and its figures from the execution state."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from state_samples import (
    checkpoint_copy_state,
    fallback_state,
    final_status_state,
    input_state,
    manifest_state,
    previous_attempt_state,
    resources_state,
    status_state,
    training_state,
)

from builders import example_spec
from spotline.core.billing import outcome
from spotline.core.billing.billing import JobBill, RunBill
from spotline.core.billing.outcome import (
    RESOURCE_VALIDATION_FAILED,
    SUCCEEDED,
    TRAINING_FAILED,
    UNEXPECTED_ERROR,
    Figures,
    decide,
    unknown_until_billed,
)
from spotline.core.state import AttemptRecord, JobSummary

NOW = datetime(2026, 11, 29, tzinfo=UTC)
REGION = "us-east-1"  # the price table's


def _state(**parts: Any) -> dict[str, Any]:
    return input_state(key="manifests/search-ranking/x.yaml", manifest=manifest_state(example_spec(NOW))) | parts


def _status(state: str, **extra: Any) -> dict[str, Any]:
    counts = {"trainingSeconds": 0, "billableSeconds": 0, "interruptions": 0, "queueWaitSeconds": None}
    return status_state(state=state, **(counts | {"reasonClass": None, "reason": ""} | extra))


def _training(**changes: Any) -> dict[str, Any]:
    """An attempt at home, with no checkpoint copy (priced in the price table's region)."""
    home = {"region": REGION, "checkpointCopy": None, "previousAttempts": []}
    return training_state(**(home | changes))


def _earlier(**changes: Any) -> dict[str, Any]:
    return previous_attempt_state(**({"region": REGION} | changes))


def _attempts(*attempts: dict[str, Any]) -> list[AttemptRecord]:
    return [AttemptRecord.from_state(a) for a in attempts]


def test_success_sums_figures_over_attempts_and_prices_them() -> None:
    earlier = _earlier(
        attempt=1,
        finalStatus=final_status_state(
            state="failed", trainingSeconds=3600, billableSeconds=1080, interruptions=2, queueWaitSeconds=120
        ),
    )
    state = _state(
        training=_training(attempt=2, previousAttempts=[earlier]),
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


_BASE: dict[str, Any] = {
    "name": "j",
    "ended": True,
    "completed": False,
    "last_stretch_seconds": 0,
    "upload_seconds": 60,
}


def _bill(*jobs: dict[str, Any], kept: float) -> RunBill:
    return RunBill(tuple(JobBill(**(_BASE | job)) for job in jobs), checkpointed=True, kept_work_seconds=kept)


def test_the_figures_of_a_run_come_from_its_bills_when_they_are_read() -> None:
    state = _state(
        training=_training(attempt=2, capacity="on-demand", previousAttempts=[_earlier(attempt=1, capacity="spot")]),
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
        training=_training(attempt=1, capacity="spot"),
        status=_status("training"),
        fallback=fallback_state(jobId="j-1", terminated=True),
    )
    assert decide(state, NOW, region=REGION).figures.on_demand_fallback is True


def test_a_run_that_finished_late_still_reports_its_saving() -> None:
    state = _state(
        training=_training(attempt=1, capacity="spot"),
        status=_status("completed", endedAt="2026-12-03T00:00:00+00:00"),
    )
    job = {"completed": True, "training_seconds": 7320, "billable_seconds": 2196, "in_training_seconds": 7200}
    outcome = decide(state, NOW, region=REGION, bill=_bill(job | {"download_seconds": 60}, kept=7200))

    assert outcome.name == "DeadlineMissed"
    assert outcome.figures.savings_percent == 70.0


def test_training_failure_names_the_job_and_reason_class() -> None:
    state = _state(
        training=_training(attempt=1),
        status=_status(
            "failed", reasonClass="algorithm", reason="AlgorithmError: NaN", trainingJobName="ranker-v2-1-a1-spot"
        ),
    )
    outcome = decide(state, NOW, region=REGION)
    assert outcome.name == TRAINING_FAILED
    assert outcome.cause == "ranker-v2-1-a1-spot failed (algorithm): AlgorithmError: NaN"
    assert "logs" in outcome.next_step


def test_resource_problems_and_unexpected_errors() -> None:
    problems = [{"path": "spec.image", "message": "not found"}]
    resources = resources_state(valid=False, problems=problems, summary="1 error(s): spec.image: not found")
    invalid = decide(_state(resources=resources), NOW, region=REGION)
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


def _two_regions(west_price: float | None, monkeypatch: pytest.MonkeyPatch) -> Figures:
    """Issue 46: 1179 s billed on spot ml.g5.2xlarge in us-east-1, then 8694 s in us-west-2 that completes
    the job (28800 s of work kept, 60 s download, 60 s upload: a baseline of 28920 s)."""
    priced = outcome.cost_usd

    def cost_usd(instance: str, count: int, seconds: float, *, region: str) -> float | None:
        if region != "us-west-2":
            return priced(instance, count, seconds, region=region)
        return None if west_price is None else round(west_price * count * seconds / 3600, 4)

    monkeypatch.setattr(outcome, "cost_usd", cost_usd)
    g5 = {"instance_type": "ml.g5.2xlarge", "instance_count": 1, "download_seconds": 60}
    east = g5 | {
        "name": "east",
        "training_seconds": 3930,
        "billable_seconds": 1179,
        "in_training_seconds": 3870,
        "region": "us-east-1",
    }
    west = g5 | {
        "name": "west",
        "completed": True,
        "training_seconds": 28980,
        "billable_seconds": 8694,
        "in_training_seconds": 25200,
    }
    bill = _bill(east, west | {"region": "us-west-2"}, kept=28800)
    copy = checkpoint_copy_state(bytes=2**30, seconds=12.5, fromRegion="us-east-1", toRegion="us-west-2")
    attempts = _attempts(
        _earlier(attempt=1, region="us-east-1"), _earlier(attempt=2, region="us-west-2", checkpointCopy=copy)
    )
    return outcome.figures(None, attempts, region=REGION, bill=bill)


def test_a_region_without_a_price_keeps_the_known_part_and_claims_no_saving(monkeypatch: pytest.MonkeyPatch) -> None:
    numbers = _two_regions(None, monkeypatch)
    # us-east-1: 1179 s x $1.515/h / 3600 = $0.49616, plus the copy out of it: 1 GiB x $0.02 = $0.02.
    assert numbers.cost_by_region == {"us-east-1": 0.5162, "us-west-2": None}
    assert numbers.cost_usd is None
    assert numbers.cost_unknown == "no price for ml.g5.2xlarge in us-west-2: training job(s) west"
    # The baseline at home, 28920 s x 1.515 / 3600 = $12.1705; no saving without us-west-2's part.
    assert (numbers.on_demand_cost_usd, numbers.savings_percent) == (12.1705, None)


def test_a_region_with_its_own_price_is_priced_with_it_not_with_the_home_regions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    numbers = _two_regions(1.6, monkeypatch)  # a made-up us-west-2 price, unlike us-east-1's $1.515/h
    # us-west-2: 8694 s x $1.6/h / 3600 = $3.864; total 0.5162 + 3.864 = $4.3802.
    assert numbers.cost_by_region == {"us-east-1": 0.5162, "us-west-2": 3.864}
    assert (numbers.cost_usd, numbers.cost_unknown) == (4.3802, None)
    # 1 - 4.3802 / 12.1705 = 64.01 %, where billed seconds against the baseline's (us-west-2 priced as
    # us-east-1) would say 1 - (1179 + 8694) / 28920 = 65.86 %.
    assert numbers.savings_percent == 64.01


def test_a_run_at_the_baselines_rate_keeps_its_billed_time_saving() -> None:
    g5 = {"instance_type": "ml.g5.2xlarge", "instance_count": 1, "download_seconds": 60}
    bill = _bill(
        g5 | {"training_seconds": 3930, "billable_seconds": 1179, "in_training_seconds": 3870},
        g5 | {"completed": True, "training_seconds": 28980, "billable_seconds": 8694, "in_training_seconds": 25200},
        kept=28800,
    )
    numbers = outcome.figures(None, _attempts(_earlier(attempt=1), _earlier(attempt=2)), region=REGION, bill=bill)
    # (1179 + 8694) s x 1.515 / 3600 = $4.1549; 1 - 9873 / 28920 = 65.86 %.
    assert (numbers.cost_by_region, numbers.cost_usd, numbers.savings_percent) == ({REGION: 4.1549}, 4.1549, 65.86)


def test_the_baseline_is_priced_on_the_manifests_primary_type_not_the_one_the_run_ended_on() -> None:
    """Issue 50: a run that ended on ml.g6.2xlarge (declared 0.8 as fast as the primary
    ml.g5.2xlarge) is compared with the job on ml.g5.2xlarge: 28800 s of its work (3600 s kept on
    g5, 31500 s on g6 x 0.8), one download and the upload, at g5's $1.515 an hour."""
    g5 = {"instance_type": "ml.g5.2xlarge", "instance_count": 1, "download_seconds": 60}
    g6 = {"instance_type": "ml.g6.2xlarge", "instance_count": 1, "download_seconds": 60}
    bill = RunBill(
        (
            JobBill(**(g5 | _BASE | {"training_seconds": 3930, "billable_seconds": 1179, "in_training_seconds": 3870})),
            JobBill(
                **(g6 | _BASE)
                | {"completed": True, "training_seconds": 31620, "billable_seconds": 9486, "in_training_seconds": 31500}
            ),
        ),
        checkpointed=True,
        kept_work_seconds=36000,
        kept_by_type={"ml.g5.2xlarge": 3600.0, "ml.g6.2xlarge": 31500.0},
        speeds={"ml.g5.2xlarge": 1.0, "ml.g6.2xlarge": 0.8},
    )
    job = JobSummary.of(example_spec(NOW))
    assert job.instance_type == "ml.g5.2xlarge"
    numbers = outcome.figures(job, _attempts(_earlier(attempt=1), _earlier(attempt=2)), region=REGION, bill=bill)

    assert numbers.on_demand_seconds == 28800 + 60 + 60
    assert (numbers.on_demand_cost_usd, numbers.on_demand_instance_type) == (
        round(1.515 * 28920 / 3600, 4),
        "ml.g5.2xlarge",
    )
