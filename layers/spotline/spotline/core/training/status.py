"""One normalized training status from what Batch and SageMaker report (pure).

Batch knows the queue; SageMaker knows the training. On-call reads `state`, `reason_class`
and `reason`; the workflow branches on `state` and `reason_class`.

Batch decides when a service job has ended, not the latest SageMaker attempt. AWS Batch retries
a service job itself, each retry a new SageMaker training job (a new entry of `attempts[]`):
"When a SageMaker Training job fails due to insufficient capacity, AWS Batch retries the job
automatically until capacity becomes available" (AWS Batch user guide, "Service job retry
strategies"; the job waits in RUNNABLE with statusReason CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY,
"Jobs stuck in RUNNABLE due to capacity"), and other failures are retried as the job's
retryStrategy says (Spotline's retries InternalServerError). Until Batch reports SUCCEEDED or
FAILED the job is queued, starting or training, whatever its latest attempt says, so nothing
acts on an attempt Batch is about to retry. Figures (training and billable time, spot
interruptions) add up every attempt of the service job.
"""

from __future__ import annotations

from collections.abc import Sequence
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
_SAGEMAKER_ENDED = {"Completed", "Failed", "Stopped"}
_TRAINING_SECONDARY = {"Training", "Uploading"}
_INTERRUPTED_SECONDARY = {"Interrupted", "Restarting"}
REPAIRING_CLUSTER = "Repairing training cluster"
"""How SageMaker's status message begins while it repairs a job's cluster after a GPU failure
("Repairing training cluster due to hardware failure", SageMaker developer guide, "Cluster repairs
for GPU errors"). The job keeps its instances: not a spot interruption, nothing for capacity to do."""
REPAIR_REASON = (
    "SageMaker is repairing the training cluster after a hardware failure (it reboots or replaces the "
    "instance, then restarts the job from its last checkpoint; the repair is not billed)"
)
_FAILURE_PREFIXES: tuple[tuple[str, ReasonClass], ...] = (
    ("MaxWaitTimeExceeded", "spot-wait-exceeded"),
    ("MaxRuntimeExceeded", "max-runtime-exceeded"),
    ("AlgorithmError", "algorithm"),
    ("ClientError", "client"),
    ("ValidationException", "client"),
    ("CapacityError", "capacity"),
    ("InsufficientCapacityError", "capacity"),  # a job pending 2 days for its training plan
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
    attempt_training_seconds: int = 0
    """Training time of the latest SageMaker attempt alone (`training_seconds` adds up every
    attempt of the service job: work an earlier attempt did is lost without a checkpoint)."""
    instance_type: str | None = None
    """The type the latest SageMaker attempt runs on: ResourceConfig.SelectedInstanceType for a
    request with InstancePreferences ("Returned by DescribeTrainingJob after an instance type is
    selected"), else its InstanceType; None before SageMaker shows the job."""
    preemptions: int = 0
    """Attempts Batch preempted to give capacity back to a quota share or a higher priority job
    (DescribeServiceJob preemptionSummary). Batch restarts the job itself, from its checkpoint:
    like a spot interruption, and never a spot attempt of Spotline's."""

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
    return _name_of(batch_job.get("latestAttempt") or (attempts[-1] if attempts else {}))


def _name_of(attempt: dict[str, Any]) -> str | None:
    arn = (attempt.get("serviceResourceId") or {}).get("value")
    return str(arn).rsplit("/", 1)[-1] if arn else None


def earlier_training_job_names(batch_job: dict[str, Any]) -> list[str]:
    """The SageMaker jobs of the Batch attempts before the latest that may have trained, oldest
    first. An attempt that failed for capacity never had instances (nothing trained or billed), and
    Batch deletes all but the latest of those on a best-effort basis, so it is left out."""
    names = []
    for attempt in (batch_job.get("attempts") or [])[:-1]:
        reason = str(attempt.get("statusReason") or "")
        name = _name_of(attempt)
        if name and not (reason and classify_failure(reason) == "capacity"):
            names.append(name)
    return names


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


def normalize(
    batch_job: dict[str, Any],
    training_job: dict[str, Any] | None,
    now: datetime,
    earlier: Sequence[dict[str, Any]] = (),
) -> TrainingStatus:
    """Combine DescribeServiceJob, DescribeTrainingJob of its latest attempt (when SageMaker shows
    it) and DescribeTrainingJob of the earlier attempts that trained (`earlier_training_job_names`)."""
    batch_status = str(batch_job["status"])
    batch_reason = str(batch_job.get("statusReason") or "")
    attempt_count = len(batch_job.get("attempts") or [])
    tj = training_job or {}
    secondary = tj.get("SecondaryStatus")
    transitions = tj.get("SecondaryStatusTransitions") or []
    attempt_seconds = int(tj.get("TrainingTimeInSeconds") or training_seconds_so_far(transitions, now))
    capacity_short = CAPACITY_REASON in batch_reason
    state: State
    reason_class: ReasonClass | None = None
    reason = ""
    if batch_status == "SUCCEEDED":
        state, reason = "completed", "training completed"
    elif batch_status == "FAILED":
        state = "failed"
        if secondary == "MaxWaitTimeExceeded":
            reason_class, reason = "spot-wait-exceeded", "spot capacity did not allow the job to finish within maxWait"
        elif secondary == "MaxRuntimeExceeded":
            reason_class, reason = "max-runtime-exceeded", "the job ran longer than maxRuntime"
        else:
            reason = str(tj.get("FailureReason") or batch_reason or "failed without a reason")
            reason_class = classify_failure(batch_reason if batch_reason.startswith("Terminated") else reason)
        if attempt_count > 1:
            reason = f"after {attempt_count} Batch attempts: {reason}"
    elif tj.get("TrainingJobStatus") in _SAGEMAKER_ENDED:
        # The latest attempt ended but Batch has not ended the service job: it retries it.
        ended = f"{tj.get('TrainingJobStatus')}: {tj.get('FailureReason') or secondary}"
        name = tj.get("TrainingJobName") or training_job_name_of(batch_job)
        if batch_status in _QUEUED and is_preemption(batch_reason):
            state = "queued"
            reason = (
                f"Batch preempted attempt {attempt_count} ({name}): {batch_reason}; it restarts from the "
                f"last checkpoint as attempt {attempt_count + 1} when the queue has room (no spot attempt used)"
            )
        elif batch_status in _QUEUED:
            capacity_short = capacity_short or classify_failure(ended) == "capacity"
            until = "capacity returns" if capacity_short else "its retry strategy schedules it"
            state = "queued"
            reason = (
                f"Batch requeued the job after attempt {attempt_count} ({name}) ended {ended}; "
                f"it starts attempt {attempt_count + 1} when {until}"
            )
        else:
            state = "starting"
            reason = f"attempt {attempt_count} ({name}) ended {ended}; Batch ({batch_status}) has not ended the job yet"
    else:
        state, reason = _in_progress(batch_status, batch_reason, training_job)
        if attempt_count > 1 and state != "queued":
            reason = f"Batch attempt {attempt_count}: {reason}"
    return TrainingStatus(
        state=state,
        reason_class=reason_class,
        reason=reason,
        batch_status=batch_status,
        secondary_status=secondary,
        training_job_name=tj.get("TrainingJobName") or training_job_name_of(batch_job),
        training_seconds=attempt_seconds + sum(_finished_seconds(e, "TrainingTimeInSeconds", now) for e in earlier),
        billable_seconds=int(tj.get("BillableTimeInSeconds") or 0)
        + sum(_finished_seconds(e, "BillableTimeInSeconds", now) for e in earlier),
        interruptions=sum(_interruptions(t) for t in (tj, *earlier)),
        capacity_short=capacity_short,
        started_at=_as_datetime(tj.get("TrainingStartTime")),
        ended_at=_as_datetime(tj.get("TrainingEndTime")),
        state_since=_as_datetime(transitions[-1].get("StartTime")) if transitions else None,
        attempt_training_seconds=attempt_seconds,
        preemptions=int((batch_job.get("preemptionSummary") or {}).get("preemptedAttemptCount") or 0),
        instance_type=instance_type_of(tj),
    )


def instance_type_of(training_job: dict[str, Any]) -> str | None:
    """The instance type a DescribeTrainingJob answer runs (or will run) on, if known yet."""
    resources = training_job.get("ResourceConfig") or {}
    return resources.get("SelectedInstanceType") or resources.get("InstanceType") or None


def is_preemption(status_reason: str) -> bool:
    """A Batch statusReason saying the job was (or is being) preempted: "Cross-share preemption
    triggered to reclaim borrowed capacity", "PREEMPTION_IN_PROGRESS: ..." (AWS Batch user guide,
    "Preemption" and "Service job preemption events")."""
    return "preemption" in status_reason.lower()


def _in_progress(batch_status: str, batch_reason: str, training_job: dict[str, Any] | None) -> tuple[State, str]:
    """A service job Batch is still running whose latest attempt has not ended."""
    if is_preemption(batch_reason) and batch_status not in _QUEUED:
        return "queued", f"Batch is preempting the job ({batch_reason}); it goes back to the queue"
    if batch_status in _QUEUED or not training_job:
        return ("queued" if batch_status in _QUEUED else "starting"), batch_reason or f"Batch job {batch_status}"
    secondary = training_job.get("SecondaryStatus")
    transitions = training_job.get("SecondaryStatusTransitions") or []
    message = transitions[-1].get("StatusMessage") if transitions else None
    if str(message or "").startswith(REPAIRING_CLUSTER):
        return "training", REPAIR_REASON
    if secondary in _INTERRUPTED_SECONDARY:
        return "interrupted", "spot capacity reclaimed; SageMaker is restarting from the last checkpoint"
    if secondary in _TRAINING_SECONDARY:
        return "training", str(secondary)
    return "starting", str(message or secondary or batch_status)


INSUFFICIENT_CAPACITY = "Insufficient capacity"
"""How SageMaker's status message begins while it waits for instances ("Insufficient capacity
error from EC2 while launching instances, retrying!")."""


def waits_for_capacity(state: str, reason: str) -> bool:
    return state in ("queued", "starting") and INSUFFICIENT_CAPACITY in reason  # "Batch attempt 2: Insufficient ..."


def _interruptions(training_job: dict[str, Any]) -> int:
    return sum(1 for t in training_job.get("SecondaryStatusTransitions") or [] if t.get("Status") == "Interrupted")


def _finished_seconds(training_job: dict[str, Any], key: str, now: datetime) -> int:
    """An earlier attempt's TrainingTimeInSeconds or BillableTimeInSeconds (it has ended)."""
    if training_job.get(key) is not None:
        return int(training_job[key])
    if key == "TrainingTimeInSeconds":
        return training_seconds_so_far(training_job.get("SecondaryStatusTransitions") or [], now)
    return 0
