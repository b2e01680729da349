"""Issue 46: DeadlineAtRisk's record in the state and its metric say how sure the work left is.
(The sandbox scenarios in tests/devtools/harness/sandbox/test_deadline_at_risk.py replay the page itself.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from state_samples import training_state

from spotline.aws.capacity.checking import deadline_at_risk
from spotline.aws.capacity.queue_state import QueueSettings
from spotline.aws.common.observability import metrics
from spotline.core.capacity.policy import JobClock
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.training.status import TrainingStatus

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "manifests" / "urgent-retrain.yaml"
NOW = datetime(2026, 12, 1, 6, 31, tzinfo=UTC)
TRAINING = TrainingStatus(
    state="training",
    reason_class=None,
    reason="training",
    batch_status="RUNNING",
    secondary_status="Training",
    training_job_name="AWSBatchranker0123",
    training_seconds=1410,
    billable_seconds=1410,
    interruptions=0,
    capacity_short=False,
    started_at=NOW - timedelta(seconds=1410),
    ended_at=None,
    instance_type="ml.g5.2xlarge",
)


def _clock(deadline: datetime) -> JobClock:
    """6 h of measured work, step 20 of 360 kept (20 m of training over one 20-minute interval),
    2m30s trained since."""
    return JobClock(
        now=NOW,
        started_at=NOW - timedelta(minutes=31),
        deadline=deadline,
        total_work_seconds=6 * 3600.0,
        progress=20 / 360,
        capacity="on-demand",
        spot_missing=False,
        work_measured=True,
        trained_since_checkpoint=150 / 21600,
        since_checkpoint_seconds=150.0,
        pace_measured_seconds=1200.0,
        checkpoint_interval_seconds=1200.0,
    )


def _notice(clock: JobClock, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any] | None, list[str]]:
    validated = validate_bytes(EXAMPLE.read_bytes(), now=datetime(2026, 11, 29, tzinfo=UTC))
    assert validated.spec is not None
    training = training_state(capacity="on-demand", instanceType="ml.g5.2xlarge", previousAttempts=[])
    state = {"training": training}  # no check before this one
    notices: list[dict[str, Any] | None] = []

    @metrics.log_metrics
    def handler(event: dict[str, Any], context: object) -> None:
        settings = QueueSettings(job_queue=None, alert_topic_arn=None)
        notices.append(deadline_at_risk(validated.spec, state, clock, TRAINING, settings=settings, links_={}))

    handler({}, None)
    return notices[0], [line for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]


def test_a_page_keeps_and_counts_the_work_left_with_its_spread(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(metrics, "namespace", "Spotline")
    # 21600 - 1200 - 150 = 20250 s left, 10 % spread (one interval measured) = 2025 s; the
    # deadline 4h51m away is short of even 20250 - 2025 = 18225 s (5h3m45s).
    notice, (line,) = _notice(_clock(NOW + timedelta(hours=4, minutes=51)), capsys)
    assert notice is not None
    assert (notice["workLeftSeconds"], notice["workLeftSpreadSeconds"], notice["workLeftEstimated"]) == (
        20250,
        2025,
        True,
    )
    assert notice["cause"].startswith("4h51m left before the deadline; about 5h37m30s of work left (estimated")
    document = json.loads(line)
    assert document["DeadlinesAtRisk"] == [1.0] and document["team"] == "search-ranking"
    assert (document["workLeftSeconds"], document["workLeftSpreadSeconds"], document["workLeftEstimated"]) == (
        20250,
        2025,
        True,
    )


def test_no_page_while_the_optimistic_end_of_the_estimate_fits(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(metrics, "namespace", "Spotline")
    # 5h4m left: more than 5h3m45s, the estimate's optimistic end. No notice, no metric.
    notice, lines = _notice(_clock(NOW + timedelta(hours=5, minutes=4)), capsys)
    assert notice is None and lines == []
