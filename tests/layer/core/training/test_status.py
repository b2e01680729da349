"""Normalizing Batch + SageMaker status into one state with a reason class."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from spotline.core.training.status import classify_failure, earlier_training_job_names, normalize, training_job_name_of

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


def test_a_cluster_repair_after_a_gpu_failure_is_not_a_spot_interruption() -> None:
    """SageMaker guide, "Cluster repairs for GPU errors": the job keeps its instances and shows
    "Repairing training cluster due to hardware failure"; capacity has nothing to do with it, so
    the policy must not read it as spot reclaimed (no move, no on-demand switch for it)."""
    start = NOW - timedelta(hours=2)
    transitions = [
        {"Status": "Starting", "StartTime": start, "EndTime": start + timedelta(minutes=5)},
        {"Status": "Training", "StartTime": start + timedelta(minutes=5), "EndTime": start + timedelta(hours=1)},
        {
            "Status": "Restarting",
            "StartTime": start + timedelta(hours=1),
            "StatusMessage": "Repairing training cluster due to hardware failure",
        },
    ]
    status = normalize(_batch("RUNNING"), _training("InProgress", "Restarting", transitions=transitions), NOW)
    assert (status.state, status.interruptions) == ("training", 0)
    assert "repairing the training cluster after a hardware failure" in status.reason


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


# --- Batch decides the end: its own retries are not the job's end -----------------------------

CAPACITY_ERROR = "CapacityError: Unable to provision requested ML compute capacity."
INTERNAL_ERROR = "InternalServerError: We encountered an internal error. Please try again."


def _attempt(name: str, reason: str | None = None) -> dict[str, Any]:
    attempt: dict[str, Any] = {
        "serviceResourceId": {"name": "TrainingJobArn", "value": f"{ARN[: ARN.rindex('/')]}/{name}"}
    }
    if reason is not None:
        attempt["statusReason"] = reason
    return attempt


def _retried(status: str, reason: str, *attempts: dict[str, Any]) -> dict[str, Any]:
    return {
        "jobId": "j-1",
        "status": status,
        "statusReason": reason,
        "attempts": list(attempts),
        "latestAttempt": {"serviceResourceId": attempts[-1]["serviceResourceId"]},
    }


def _ended(failure: str, **extra: Any) -> dict[str, Any]:
    return _training("Failed", "Failed", FailureReason=failure, TrainingTimeInSeconds=0, **extra)


def test_a_capacity_failure_batch_requeues_is_queued_short_of_capacity() -> None:
    batch = _retried(
        "RUNNABLE",
        "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Unable to provision requested compute resources",
        _attempt("ranker-v2-1a2b3c4d-a1-spot", f"Received status from SageMaker: {CAPACITY_ERROR}"),
    )
    status = normalize(batch, _ended(CAPACITY_ERROR), NOW)
    assert (status.state, status.finished, status.reason_class, status.capacity_short) == ("queued", False, None, True)
    assert status.reason == (
        f"Batch requeued the job after attempt 1 (ranker-v2-1a2b3c4d-a1-spot) ended Failed: {CAPACITY_ERROR}; "
        "it starts attempt 2 when capacity returns"
    )


def test_an_attempt_batch_retries_by_its_retry_strategy_is_queued() -> None:
    batch = _retried(
        "RUNNABLE", "", _attempt("ranker-v2-1a2b3c4d-a1-spot", f"Received status from SageMaker: {INTERNAL_ERROR}")
    )
    status = normalize(batch, _ended(INTERNAL_ERROR), NOW)
    assert (status.state, status.finished, status.capacity_short) == ("queued", False, False)
    assert status.reason.endswith("it starts attempt 2 when its retry strategy schedules it")
    assert INTERNAL_ERROR in status.reason


@pytest.mark.parametrize("batch_status", ["SCHEDULED", "STARTING", "RUNNING"])
@pytest.mark.parametrize(
    "training",
    [
        _ended(INTERNAL_ERROR),
        _training("Completed", "Completed", TrainingTimeInSeconds=7200),
        _training("Stopped", "Stopped"),
    ],
)
def test_an_ended_attempt_is_not_the_end_until_batch_says_so(batch_status: str, training: dict[str, Any]) -> None:
    status = normalize(_retried(batch_status, "", _attempt("ranker-v2-1a2b3c4d-a1-spot")), training, NOW)
    assert (status.state, status.finished, status.reason_class) == ("starting", False, None)
    assert status.reason.endswith(f"Batch ({batch_status}) has not ended the job yet")


def test_the_next_attempt_is_read_from_batch_and_its_own_training_job() -> None:
    batch = _retried(
        "RUNNING",
        "",
        _attempt("ranker-v2-1a2b3c4d-a1-spot", f"Received status from SageMaker: {INTERNAL_ERROR}"),
        _attempt("ranker-v2-1a2b3c4d-a1-spot-2"),
    )
    training = {**_training("InProgress", "Training"), "TrainingJobName": "ranker-v2-1a2b3c4d-a1-spot-2"}
    status = normalize(batch, training, NOW)
    assert (status.state, status.reason, status.training_job_name) == (
        "training",
        "Batch attempt 2: Training",
        "ranker-v2-1a2b3c4d-a1-spot-2",
    )


def test_a_job_batch_failed_after_its_retries_names_the_attempts() -> None:
    batch = _retried(
        "FAILED",
        f"Received status from SageMaker: {INTERNAL_ERROR}",
        *(_attempt(f"ranker-v2-1a2b3c4d-a1-spot{suffix}") for suffix in ("", "-2", "-3")),
    )
    status = normalize(batch, _ended(INTERNAL_ERROR), NOW)
    assert (status.state, status.reason_class) == ("failed", "internal")
    assert status.reason == f"after 3 Batch attempts: {INTERNAL_ERROR}"


def test_figures_add_up_every_attempt_of_the_service_job() -> None:
    start = NOW - timedelta(hours=3)
    first = _training(
        "Failed",
        "Failed",
        FailureReason=INTERNAL_ERROR,
        TrainingTimeInSeconds=3600,
        BillableTimeInSeconds=1080,
        transitions=[{"Status": "Training", "StartTime": start}, {"Status": "Interrupted", "StartTime": start}],
    )
    current = _training(
        "InProgress",
        "Training",
        transitions=[
            {"Status": "Interrupted", "StartTime": NOW - timedelta(hours=1), "EndTime": NOW - timedelta(minutes=50)},
            {"Status": "Training", "StartTime": NOW - timedelta(minutes=30)},
        ],
    )
    batch = _retried("RUNNING", "", _attempt("ranker-v2-1a2b3c4d-a1-spot"), _attempt("ranker-v2-1a2b3c4d-a1-spot-2"))
    status = normalize(batch, current, NOW, [first])
    assert (status.training_seconds, status.attempt_training_seconds) == (3600 + 1800, 1800)
    assert (status.billable_seconds, status.interruptions) == (1080, 2)


def test_earlier_attempts_worth_describing_leave_out_capacity_failures_and_the_latest() -> None:
    batch = _retried(
        "RUNNING",
        "",
        _attempt("a1-spot", f"Received status from SageMaker: {CAPACITY_ERROR}"),
        _attempt("a1-spot-2", f"Received status from SageMaker: {INTERNAL_ERROR}"),
        _attempt("a1-spot-3", "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"),
        _attempt("a1-spot-4"),
    )
    assert earlier_training_job_names(batch) == ["a1-spot-2"]
    assert earlier_training_job_names(_batch("RUNNING")) == []


def test_a_preempted_job_back_in_the_queue_is_queued_and_counted_not_failed() -> None:
    reason = "Cross-share preemption triggered to reclaim borrowed capacity"
    batch = _batch("RUNNABLE", reason) | {"preemptionSummary": {"preemptedAttemptCount": 1}}
    status = normalize(batch, _training("Stopped", "Stopped"), NOW)
    assert (status.state, status.preemptions, status.reason_class) == ("queued", 1, None)
    assert status.reason.startswith("Batch preempted attempt 1 (ranker-v2-1a2b3c4d-a1-spot): Cross-share preemption")
    assert "restarts from the last checkpoint" in status.reason and "no spot attempt used" in status.reason


def test_a_job_being_preempted_is_on_its_way_back_to_the_queue() -> None:
    reason = "PREEMPTION_IN_PROGRESS: Cross-share preemption triggered to reclaim borrowed capacity"
    status = normalize(_batch("RUNNING", reason), _training("Stopping", "Stopping"), NOW)
    assert status.state == "queued" and "Batch is preempting the job" in status.reason
