"""One normalized training status from what Batch and SageMaker report (pure).

Batch knows the queue; SageMaker knows the training. On-call reads `state`, `reason_class`
and `reason`; the workflow branches on `state` and `reason_class`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

State = Literal["queued", "starting", "training", "interrupted", "completed", "failed"]
ReasonClass = Literal[
    "algorithm", "client", "capacity", "spot-wait-exceeded", "max-runtime-exceeded", "internal", "stopped"
]

SAGEMAKER_PREFIX = "Received status from SageMaker:"
CAPACITY_REASON = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
_QUEUED = {"SUBMITTED", "PENDING", "RUNNABLE"}
_TRAINING_SECONDARY = {"Training", "Uploading"}
_INTERRUPTED_SECONDARY = {"Interrupted", "Restarting"}
_FAILURE_PREFIXES: tuple[tuple[str, ReasonClass], ...] = (
    ("MaxWaitTimeExceeded", "spot-wait-exceeded"),
    ("MaxRuntimeExceeded", "max-runtime-exceeded"),
    ("AlgorithmError", "algorithm"),
    ("ClientError", "client"),
    ("ValidationException", "client"),
    ("CapacityError", "capacity"),
    ("InternalServerError", "internal"),
)


@dataclass(frozen=True, slots=True)
class TrainingStatus:
    state: State
    reason_class: ReasonClass | None
    reason: str
    batch_status: str
    secondary_status: str | None
    training_job_name: str | None
    training_seconds: int
    billable_seconds: int
    interruptions: int
    capacity_short: bool
    started_at: datetime | None
    ended_at: datetime | None
    state_since: datetime | None = None
    """When SageMaker entered its current secondary status (how long the job has been waiting)."""

    @property
    def finished(self) -> bool:
        return self.state in ("completed", "failed")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("started_at", "ended_at", "state_since"):
            data[key] = data[key].isoformat() if data[key] else None
        return data


def training_job_name_of(batch_job: dict[str, Any]) -> str | None:
    """The SageMaker job of the latest Batch attempt (ARN .../training-job/<name>)."""
    attempts = batch_job.get("attempts") or []
    arn = (
        (batch_job.get("latestAttempt") or (attempts[-1] if attempts else {})).get("serviceResourceId", {}).get("value")
    )
    return arn.rsplit("/", 1)[-1] if arn else None


def classify_failure(text: str) -> ReasonClass:
    """Reason class of a SageMaker FailureReason or Batch statusReason."""
    body = text.removeprefix(SAGEMAKER_PREFIX).strip()
    if CAPACITY_REASON in body:
        return "capacity"
    if body.startswith("Terminated"):
        return "stopped"
    for prefix, reason_class in _FAILURE_PREFIXES:
        if body.startswith(prefix) or f" {prefix}" in body[:80]:
            return reason_class
    return "internal"


def _as_datetime(value: Any) -> datetime | None:
    return value if isinstance(value, datetime) else None


def training_seconds_so_far(transitions: list[dict[str, Any]], now: datetime) -> int:
    """Time spent Downloading, Training or Uploading so far; SageMaker reports
    TrainingTimeInSeconds only once a job has ended."""
    total = 0.0
    for transition in transitions:
        if transition.get("Status") in ("Downloading", "Training", "Uploading") and transition.get("StartTime"):
            end = transition.get("EndTime") or now
            total += max(0.0, (end - transition["StartTime"]).total_seconds())
    return int(total)


def normalize(batch_job: dict[str, Any], training_job: dict[str, Any] | None, now: datetime) -> TrainingStatus:
    """Combine DescribeServiceJob and (when a SageMaker job exists) DescribeTrainingJob."""
    batch_status = str(batch_job["status"])
    batch_reason = str(batch_job.get("statusReason") or "")
    tj = training_job or {}
    secondary = tj.get("SecondaryStatus")
    transitions = tj.get("SecondaryStatusTransitions") or []
    interruptions = sum(1 for t in transitions if t.get("Status") == "Interrupted")
    state: State
    reason_class: ReasonClass | None = None
    reason = ""
    if batch_status == "SUCCEEDED" or tj.get("TrainingJobStatus") == "Completed":
        state, reason = "completed", "training completed"
    elif batch_status == "FAILED" or tj.get("TrainingJobStatus") in ("Failed", "Stopped"):
        state = "failed"
        if secondary == "MaxWaitTimeExceeded":
            reason_class, reason = "spot-wait-exceeded", "spot capacity did not allow the job to finish within maxWait"
        elif secondary == "MaxRuntimeExceeded":
            reason_class, reason = "max-runtime-exceeded", "the job ran longer than maxRuntime"
        else:
            reason = str(tj.get("FailureReason") or batch_reason or "failed without a reason")
            reason_class = classify_failure(batch_reason if batch_reason.startswith("Terminated") else reason)
    elif batch_status in _QUEUED or not training_job:
        state = "queued" if batch_status in _QUEUED else "starting"
        reason = batch_reason or f"Batch job {batch_status}"
    elif secondary in _INTERRUPTED_SECONDARY:
        state, reason = "interrupted", "spot capacity reclaimed; SageMaker is restarting from the last checkpoint"
    elif secondary in _TRAINING_SECONDARY:
        state, reason = "training", str(secondary)
    else:
        state, reason = "starting", str(secondary or batch_status)
    return TrainingStatus(
        state=state,
        reason_class=reason_class,
        reason=reason,
        batch_status=batch_status,
        secondary_status=secondary,
        training_job_name=tj.get("TrainingJobName") or training_job_name_of(batch_job),
        training_seconds=int(tj.get("TrainingTimeInSeconds") or training_seconds_so_far(transitions, now)),
        billable_seconds=int(tj.get("BillableTimeInSeconds") or 0),
        interruptions=interruptions,
        capacity_short=CAPACITY_REASON in batch_reason,
        started_at=_as_datetime(tj.get("TrainingStartTime")),
        ended_at=_as_datetime(tj.get("TrainingEndTime")),
        state_since=_as_datetime(transitions[-1].get("StartTime")) if transitions else None,
    )
