"""A deadline that leaves no room for spot is a warning at validation, not a surprise bill."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from spotline.core.capacity.policy import JobClock, decide
from spotline.core.manifest.advice import warnings_of
from spotline.core.spec.model import InputChannel, JobSpec

NOW = datetime(2026, 12, 1, tzinfo=UTC)
HOUR = 3600
SPEC = JobSpec(
    team="vision",
    name="resnet",
    image="123456789012.dkr.ecr.us-east-1.amazonaws.com/resnet:1.0",
    role_arn="arn:aws:iam::123456789012:role/spotline/vision-training",
    instance_type="ml.g5.2xlarge",
    inputs=(InputChannel("train", "s3://vision-data/train/"),),
    output_s3_uri="s3://vision-models/resnet/",
    checkpoint_s3_uri="s3://vision-checkpoints/resnet/",
    max_runtime_seconds=40 * HOUR,
    expected_duration_seconds=30 * HOUR,
)


def _due_in(hours: float) -> JobSpec:
    return replace(SPEC, deadline=(NOW + timedelta(hours=hours)).isoformat().replace("+00:00", "Z"))


def test_a_deadline_without_room_for_spot_is_a_warning_naming_the_figures() -> None:
    (warning,) = warnings_of(_due_in(30.5), NOW)
    assert warning.path == "spec.capacity.deadline"
    assert warning.message.startswith(
        "leaves no room for spot: 30h30m left, and on-demand alone needs 31h50m "
        "(30h of work + 20m start-up + 1h30m margin)"
    )


def test_the_warning_agrees_with_the_policy_at_the_first_check() -> None:
    for hours in (30.2, 30.5, 31.5, 31.8, 31.9, 32.0, 40.0):
        spec = _due_in(hours)
        job = JobClock(NOW, NOW, spec.deadline_at, 30.0 * HOUR, 0.0, "spot", False)
        stays_on_spot_with_room = decide(job).verdict == "continue" and (decide(job).slack_seconds or 0) > 0
        assert bool(warnings_of(spec, NOW)) != stays_on_spot_with_room, hours


def test_no_room_warning_on_demand_or_spot_only() -> None:
    """Only spot-first moves a job to on-demand; spot-only never does."""
    assert warnings_of(replace(_due_in(30.5), strategy="on-demand", checkpoint_s3_uri=None), NOW) == []
    assert warnings_of(replace(_due_in(30.5), strategy="spot-only"), NOW) == []


def test_a_spot_job_without_a_deadline_is_told_how_long_spot_may_take() -> None:
    """No deadline: the policy keeps the job on spot however long spot takes; only maxWait per
    attempt and retry.maxAttempts bound it (issue 50: a sandbox run waited 43 hours unwarned)."""
    spec = replace(SPEC, max_wait_seconds=48 * HOUR)
    (warning,) = warnings_of(spec, NOW)
    assert warning.path == "spec.capacity.deadline"
    assert warning.message.startswith(
        "is not set: the job stays on spot for as long as spot takes; Spotline never moves it to on-demand to "
        "finish in time. Each of up to 3 spot attempts (retry.maxAttempts) may last maxWait 48h (waiting for spot "
        "plus training): up to 6d on spot, plus back-offs and time in the queue, before it continues on on-demand."
    )
    (spot_only,) = warnings_of(replace(spec, strategy="spot-only", retry_max_attempts=1), NOW)
    assert "up to 48h on spot, plus back-offs and time in the queue, before the run ends" in spot_only.message
    job = JobClock(NOW, NOW, None, 30.0 * HOUR, 0.0, "spot", True)  # spot missing, and still no switch
    assert decide(job).verdict == "continue"
    assert warnings_of(replace(SPEC, strategy="on-demand", checkpoint_s3_uri=None), NOW) == []


def test_a_deadline_out_of_reach_even_on_demand_says_so() -> None:
    (warning,) = warnings_of(_due_in(30.2), NOW)  # 30h of work + 20m start-up do not fit in 30h12m
    assert warning.message.startswith("is out of reach: 30h12m left, and even on-demand from now needs 30h20m")
