"""Normalizing Batch + SageMaker status into one state with a reason class."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from spotline.core.status import classify_failure, normalize, training_job_name_of

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-job/ranker-v2-1a2b3c4d-a1-spot"


def _batch(status: str, reason: str = "", with_attempt: bool = True) -> dict[str, Any]:
    job: dict[str, Any] = {"jobId": "j-1", "status": status, "statusReason": reason}
    if with_attempt:
        job["attempts"] = [{"serviceResourceId": {"name": "TrainingJobArn", "value": ARN}}]
    return job


def _training(status: str, secondary: str, **extra: Any) -> dict[str, Any]:
    return {
        "TrainingJobName": "ranker-v2-1a2b3c4d-a1-spot",
        "TrainingJobStatus": status,
        "SecondaryStatus": secondary,
        "SecondaryStatusTransitions": extra.pop("transitions", []),
        **extra,
    }


@pytest.mark.parametrize("batch_status", ["SUBMITTED", "PENDING", "RUNNABLE"])
def test_batch_queue_states_are_queued(batch_status: str) -> None:
    status = normalize(_batch(batch_status, with_attempt=False), None, NOW)
    assert (status.state, status.finished, status.training_job_name) == ("queued", False, None)


def test_insufficient_capacity_in_the_queue_is_flagged() -> None:
    status = normalize(_batch("RUNNABLE", "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"), None, NOW)
    assert status.state == "queued"
    assert status.capacity_short


def test_training_job_name_comes_from_the_latest_batch_attempt() -> None:
    assert training_job_name_of(_batch("RUNNING")) == "ranker-v2-1a2b3c4d-a1-spot"


@pytest.mark.parametrize(
    ("secondary", "state"),
    [
        ("Starting", "starting"),
        ("Downloading", "starting"),
        ("Training", "training"),
        ("Uploading", "training"),
        ("Interrupted", "interrupted"),
        ("Restarting", "interrupted"),
    ],
)
def test_running_jobs_follow_the_sagemaker_secondary_status(secondary: str, state: str) -> None:
    assert normalize(_batch("RUNNING"), _training("InProgress", secondary), NOW).state == state


def test_interruptions_are_counted_and_training_time_summed_while_running() -> None:
    start = NOW - timedelta(hours=5)
    transitions = [
        {"Status": "Starting", "StartTime": start, "EndTime": start + timedelta(minutes=5)},
        {"Status": "Training", "StartTime": start + timedelta(minutes=5), "EndTime": start + timedelta(hours=2)},
        {"Status": "Interrupted", "StartTime": start + timedelta(hours=2), "EndTime": start + timedelta(hours=3)},
        {"Status": "Training", "StartTime": start + timedelta(hours=3)},
    ]
    status = normalize(_batch("RUNNING"), _training("InProgress", "Training", transitions=transitions), NOW)
    assert status.interruptions == 1
    assert status.training_seconds == int(
        timedelta(hours=1, minutes=55).total_seconds() + timedelta(hours=2).total_seconds()
    )


def test_completed_job_reports_sagemaker_times() -> None:
    training = _training("Completed", "Completed", TrainingTimeInSeconds=7200, BillableTimeInSeconds=2160)
    status = normalize(_batch("SUCCEEDED"), training, NOW)
    assert (status.state, status.finished, status.training_seconds, status.billable_seconds) == (
        "completed",
        True,
        7200,
        2160,
    )


@pytest.mark.parametrize(
    ("training", "batch_reason", "reason_class"),
    [
        (_training("Failed", "Failed", FailureReason="AlgorithmError: loss is NaN"), "", "algorithm"),
        (_training("Failed", "Failed", FailureReason="ClientError: no such key"), "", "client"),
        (_training("Failed", "Failed", FailureReason="CapacityError: Unable to provision"), "", "capacity"),
        (_training("Failed", "Failed", FailureReason="InternalServerError: oops"), "", "internal"),
        (_training("Stopped", "MaxWaitTimeExceeded"), "", "spot-wait-exceeded"),
        (_training("Stopped", "MaxRuntimeExceeded"), "", "max-runtime-exceeded"),
        (_training("Stopped", "Stopped"), "Terminated: deadline at risk", "stopped"),
        (None, "Received status from SageMaker: ValidationException: bad name", "client"),
    ],
)
def test_failures_are_classified(training: dict[str, Any] | None, batch_reason: str, reason_class: str) -> None:
    status = normalize(_batch("FAILED", batch_reason), training, NOW)
    assert (status.state, status.reason_class) == ("failed", reason_class)
    assert status.reason


def test_classify_failure_reads_batch_prefixed_reasons() -> None:
    assert classify_failure("Received status from SageMaker: AlgorithmError: exit 1") == "algorithm"
    assert classify_failure("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY") == "capacity"
    assert classify_failure("something new") == "internal"
