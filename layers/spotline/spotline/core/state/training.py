"""`$.training`: the run's current attempt, as SubmitTrainingJob wrote it, and its earlier ones (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from spotline.core.state.fields import MAX_REASON, StateRecord, clip, key
from spotline.core.state.status import PlanRef, RunStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointCopy(StateRecord):
    """The checkpoint copied to the attempt's region before it was submitted there."""

    SECTION: ClassVar[str] = "$.training.checkpointCopy"
    source: str = key("from", "where the checkpoint was (an S3 prefix)")
    target: str = key("to", "where the attempt resumes from")
    source_region: str = key("fromRegion", "the region of the last attempt (home for a run's first)")
    target_region: str = key("toRegion", "the attempt's region")
    objects: int = key("objects", "objects copied")
    bytes: int = key("bytes", "bytes copied")
    seconds: float = key("seconds", "how long the copy took")


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalStatus(StateRecord):
    """How the last status check of an earlier attempt saw it (a few of `$.status`'s keys)."""

    SECTION: ClassVar[str] = "$.training.previousAttempts[].finalStatus"
    state: str = key("state", "as in `$.status.state`")
    reason_class: str | None = key("reasonClass", "as in `$.status.reasonClass`")
    training_seconds: int | None = key("trainingSeconds", "SageMaker's training time of the attempt")
    billable_seconds: int | None = key("billableSeconds", "what SageMaker billed")
    interruptions: int | None = key("interruptions", "spot interruptions inside the attempt's SageMaker job")
    queue_wait_seconds: int | None = key("queueWaitSeconds", "from submission to the start of training")
    ended_at: str | None = key("endedAt", "when it ended (RFC 3339)")
    instance_type: str | None = key("instanceType", "the type it ran on")
    reason: str = key("reason", "the reason behind `reasonClass` (at most 1,024 characters)")

    @classmethod
    def of(cls, status: RunStatus) -> FinalStatus:
        return cls(
            state=status.state,
            reason_class=status.reason_class,
            training_seconds=status.training_seconds,
            billable_seconds=status.billable_seconds,
            interruptions=status.interruptions,
            queue_wait_seconds=status.queue_wait_seconds,
            ended_at=status.ended_at,
            instance_type=status.instance_type,
            reason=clip(status.reason or "", MAX_REASON),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptRecord(StateRecord):
    """One earlier attempt, as `$.training.previousAttempts[]` and the outcome report keep it: which
    job it was and how its last status check saw it (not a copy of that status: the state stays small)."""

    SECTION: ClassVar[str] = "$.training.previousAttempts[]"
    attempt: int = key("attempt", "its number, from 1")
    capacity: str = key("capacity", "`spot`, `on-demand` or `training-plan`")
    instance_type: str | None = key("instanceType", "the type it ran on (null: an on-demand one never selected)")
    job_id: str = key("jobId", "its Batch service job")
    training_job_name: str | None = key(
        "trainingJobName", "the name Batch gave its SageMaker job, as the last check read it"
    )
    submitted_at: str = key("submittedAt", "when it was submitted (RFC 3339)")
    final_status: FinalStatus | None = key(
        "finalStatus", "its last status check (null: never checked)", record=FinalStatus
    )
    region: str | None = key("region", "where it ran (at home when absent)", omit_none=True)
    zone: str | None = key("zone", "the one zone it ran in (absent: any of the stack's subnets)", omit_none=True)
    checkpoint_copy: CheckpointCopy | None = key(
        "checkpointCopy", "the copy before it", record=CheckpointCopy, omit_none=True
    )

    @classmethod
    def of(cls, training: Training, status: RunStatus | None) -> AttemptRecord:
        """The attempt `training` with `status`, its last check (None if it was never checked)."""
        final = FinalStatus.of(status) if status and looked_at(status, training) else None
        return cls(
            attempt=training.attempt,
            capacity=training.capacity,
            instance_type=(final.instance_type if final else None) or training.instance_type,
            job_id=training.job_id,
            training_job_name=status.training_job_name if final is not None and status else None,
            submitted_at=training.submitted_at,
            final_status=final,
            region=training.region or None,
            zone=training.zone,
            checkpoint_copy=training.checkpoint_copy,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Training(StateRecord):
    """`$.training`: the current attempt, written by SubmitTrainingJob."""

    SECTION: ClassVar[str] = "$.training"
    attempt: int = key("attempt", "its number, from 1")
    capacity: str = key("capacity", "`spot`, `on-demand` or `training-plan`")
    instance_type: str | None = key(
        "instanceType", "a spot attempt moved to an alternative, or the plan's type (null: the primary, or on-demand)"
    )
    training_plan: PlanRef | None = key(
        "trainingPlan",
        "the plan a training-plan attempt runs on (`usableUntil`: when it starts terminating its instances)",
        record=PlanRef,
        optional="an attempt submitted before training plans has none",
    )
    job_id: str = key("jobId", "the Batch service job")
    job_arn: str | None = key("jobArn", "its ARN")
    job_name: str = key("jobName", "its name")
    region: str | None = key(
        "region", "where the attempt runs", optional="an attempt submitted before regions ran at home"
    )
    region_choice: str | None = key(
        "regionChoice",
        "why there, for a first spot attempt placed by the fleet's record",
        optional="an attempt submitted before regions has none",
    )
    zone: str | None = key(
        "zone",
        "the one zone an attempt of many instances runs in (null: any of the stack's subnets)",
        optional="an attempt submitted before zones has none",
    )
    zone_choice: str | None = key(
        "zoneChoice", "why that zone, in a sentence", optional="an attempt submitted before zones has none"
    )
    checkpoint_copy: CheckpointCopy | None = key(
        "checkpointCopy",
        "the copy before an attempt in another region",
        record=CheckpointCopy,
        optional="an attempt submitted before regions copied nothing",
    )
    submitted_at: str = key("submittedAt", "when it was submitted (RFC 3339)")
    first_poll_seconds: int = key("firstPollSeconds", "the wait before its first status check")
    links: dict[str, str] = key("links", "console links (`execution`, `batchJob`)")
    previous_attempts: tuple[AttemptRecord, ...] = key(
        "previousAttempts", "the earlier attempts, oldest first", record=AttemptRecord, many=True
    )

    def history(self, status: RunStatus | None) -> tuple[AttemptRecord, ...]:
        """Every attempt so far, oldest first: the earlier ones as recorded, then this one with
        `status`, its last check."""
        return (*self.previous_attempts, AttemptRecord.of(self, status))


def looked_at(status: RunStatus, training: Training) -> bool:
    """Whether the check `status` looked at `training`'s attempt: right after a resubmission the
    state still holds the previous attempt's last check, which must not count twice."""
    if status.job_id is not None:
        return status.job_id == training.job_id
    return status.checked_at >= training.submitted_at


def history_of(training: Training | None, status: RunStatus | None) -> tuple[AttemptRecord, ...]:
    """Every attempt of a run (none before its first submission)."""
    return training.history(status) if training else ()


def as_state(record: StateRecord | None) -> dict[str, Any] | None:
    """A record's state, or None."""
    return record.to_state() if record is not None else None
