"""`$.status`: what the last CheckTrainingStatus saw of the current attempt and decided (pure).

The state machine routes on `action`; SubmitTrainingJob reads the next attempt from the `next*`
keys; StopSpotJob tells on-call where the job goes. Datetimes are RFC 3339 strings, as in the state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from spotline.core.state.fields import StateRecord, key


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanRef(StateRecord):
    """A training plan an attempt runs on (`$.training.trainingPlan`) or moves to (`$.status.nextTrainingPlan`)."""

    SECTION: ClassVar[str] = "$.status.nextTrainingPlan"
    arn: str = key("arn", "the plan's ARN")
    name: str = key("name", "its name")
    region: str = key("region", "its region")
    instance_type: str = key("instanceType", "the type it reserves")
    usable_until: str | None = key("usableUntil", "when it starts terminating its instances (RFC 3339)")
    zone: str | None = key(
        "zone", "its reserved capacity's Availability Zone", optional="a plan read before zones has none"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Speed(StateRecord):
    """One instance type's speed relative to the primary type."""

    SECTION: ClassVar[str] = "$.status.progress.speeds[]"
    instance_type: str = key("instanceType", "the type")
    speed: float = key("speed", "relative to the primary type (0.5: half as fast)")
    source: str = key("source", "`measured` or `declared`")


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress(StateRecord):
    """How far the attempt's training has come."""

    SECTION: ClassVar[str] = "$.status.progress"
    fraction: float = key("fraction", "what the last checkpoint keeps (a restart resumes there)")
    step: int | None = key("step", "the checkpoint's step (progress.json)")
    total_steps: int | None = key("totalSteps", "the job's steps (progress.json)")
    source: str = key(
        "source",
        "`progress.json` when the training code writes it; `training time (no progress.json yet)`: "
        "guessed from training time, so deadline decisions are rough",
    )
    training_seconds: float | None = key("trainingSeconds", "training time behind the checkpoint")
    estimated_work_seconds: int | None = key(
        "estimatedWorkSeconds",
        "the job's whole work measured from the training seconds behind the checkpoint (null until one "
        "records them): the policy plans with it instead of `expectedDuration`",
    )
    speeds: tuple[Speed, ...] | None = key(
        "speeds", "each type's speed, for a job with alternatives", record=Speed, many=True
    )
    training_since_checkpoint_seconds: int | None = key(
        "trainingSinceCheckpointSeconds", "while training: how long since that checkpoint"
    )
    estimated_fraction: float | None = key(
        "estimatedFraction", "while training: the progress by now at the measured pace (DeadlineAtRisk uses it)"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Escalation(StateRecord):
    """A raise of the queued job's priority before its deadline forces on-demand."""

    SECTION: ClassVar[str] = "$.status.decision.escalation"
    current: int = key("from", "the priority it had")
    raised: int = key("to", "the priority it has now")
    reason: str = key("reason", "why")
    notified: bool = key("notified", "on-call was told")


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision(StateRecord):
    """The deadline policy's verdict on the attempt."""

    SECTION: ClassVar[str] = "$.status.decision"
    verdict: str = key("verdict", "`continue`, `switch-to-on-demand`, ...")
    reason: str = key("reason", "why, in words")
    slack_seconds: int | None = key(
        "slackSeconds", "time left minus what on-demand would need (at or below 0: switch); null: no deadline"
    )
    restart_overhead_seconds: int = key("restartOverheadSeconds", "what a restart costs")
    queue_wait_now_seconds: int = key("queueWaitNowSeconds", "how long a job waits in the queue now")
    priority: int = key("priority", "the job's priority from now on (the next attempt's)")
    escalation: Escalation | None = key("escalation", "the priority raised this check", record=Escalation)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadlineNotice(StateRecord):
    """DeadlineAtRisk, sent once per run when no capacity can meet the deadline any more."""

    SECTION: ClassVar[str] = "$.status.deadlineAtRisk"
    at: str = key("at", "when on-call was told (RFC 3339)")
    cause: str = key("cause", "why: time left, work left, what was tried")
    notified: bool = key("notified", "the message was sent")
    work_left_seconds: int = key("workLeftSeconds", "the work left at best")
    work_left_spread_seconds: int = key("workLeftSpreadSeconds", "how unsure that figure is")
    work_left_estimated: bool = key("workLeftEstimated", "the pace was measured (else the manifest's)")


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionConsidered(StateRecord):
    """One region the check considered for the attempt."""

    SECTION: ClassVar[str] = "$.status.regionChoice.considered[]"
    region: str = key("region", "the region")
    seconds_to_train: int | None = key(
        "secondsToTrain",
        "the time expected to be lost there to the restart, the copy, the wait and interruptions "
        "(null: its latest sighting saw no spot)",
    )
    copy_seconds: int = key("copySeconds", "the checkpoint copy's time")
    copy_usd: float = key("copyUsd", "and its price")
    spot_sighted: bool | None = key("spotSighted", "the latest fresh sighting saw spot (null: none fresh)")
    note: str = key("note", "in words")


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionChoice(StateRecord):
    """Where a spot attempt of a run with several `capacity.regions` goes next, and why."""

    SECTION: ClassVar[str] = "$.status.regionChoice"
    region: str = key("region", "the region chosen")
    moves: bool = key("moves", "it is not the current one")
    reason: str = key("reason", "why")
    considered: tuple[RegionConsidered, ...] = key(
        "considered", "every region considered", record=RegionConsidered, many=True
    )
    region_moves: int | None = key(
        "regionMoves",
        "the run's moves between regions before this choice",
        optional="a choice made before moves were counted",
    )
    region_moves_allowed: int | None = key(
        "regionMovesAllowed",
        "at most 4 x (regions - 1) per run (null: a first placement)",
        optional="a choice made before moves were counted",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStatus(StateRecord):
    """`$.status`: what the last status check saw of the current attempt, and what happens next."""

    SECTION: ClassVar[str] = "$.status"
    job_id: str | None = key(
        "jobId", "the attempt's Batch job: in CheckTrainingStatus' answer only, not kept in the state", answer_only=True
    )
    state: str = key("state", "`queued`, `starting`, `training`, `interrupted`, `completed` or `failed`")
    finished: bool = key("finished", "the attempt has ended")
    reason_class: str | None = key(
        "reasonClass",
        "why a job failed: `algorithm`, `client`, `capacity`, `spot-wait-exceeded`, `max-runtime-exceeded`, "
        "`internal`, `stopped`",
    )
    reason: str = key("reason", "the text behind `reasonClass`")
    batch_status: str | None = key("batchStatus", "Batch's raw status")
    secondary_status: str | None = key("secondaryStatus", "SageMaker's raw secondary status")
    training_job_name: str | None = key("trainingJobName", "the SageMaker job Batch created for the attempt")
    instance_type: str | None = key("instanceType", "the type it runs on (null until SageMaker selects it)")
    training_seconds: int | None = key("trainingSeconds", "SageMaker's training time")
    billable_seconds: int | None = key("billableSeconds", "what SageMaker bills")
    interruptions: int | None = key("interruptions", "spot interruptions inside the current SageMaker job")
    preemptions: int | None = key("preemptions", "Batch's preemptions of the job")
    capacity_short: bool = key("capacityShort", "Batch reports `CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY`")
    queue_wait_seconds: int | None = key("queueWaitSeconds", "from submission to the start of training")
    ended_at: str | None = key("endedAt", "when the attempt ended (RFC 3339)")
    progress: Progress = key("progress", "how far training has come", record=Progress)
    decision: Decision = key("decision", "the deadline policy's verdict", record=Decision)
    action: str = key(
        "action",
        "what happens next (`keep-waiting`, `resubmit-on-spot`, `switch-to-on-demand`, `finish`, ...): "
        "`WhatShouldHappenNext?` routes on it",
    )
    explanation: str = key("explanation", "**why**: read this first")
    next_capacity: str | None = key("nextCapacity", "the next attempt's capacity")
    next_instance_type: str | None = key("nextInstanceType", "the next attempt's type (null: as before)")
    next_zone: str | None = key(
        "nextZone",
        "the zone a job of many instances moves to (null: SubmitTrainingJob's choice)",
        optional="a check made before zones has none",
    )
    next_region: str | None = key("nextRegion", "where the attempt moves (null: it stays)")
    region_choice: RegionChoice | None = key(
        "regionChoice", "why there, for a run with several regions", record=RegionChoice
    )
    next_training_plan: PlanRef | None = key("nextTrainingPlan", "the plan an attempt moves to", record=PlanRef)
    max_pending_seconds: int | None = key("maxPendingSeconds", "how long an on-demand fallback may wait for capacity")
    capacity_wait_seconds: int = key("capacityWaitSeconds", "how long the attempt has waited for capacity")
    deadline_at_risk: DeadlineNotice | None = key(
        "deadlineAtRisk", "DeadlineAtRisk, once sent (kept from check to check)", record=DeadlineNotice
    )
    backoff_seconds: int = key("backoffSeconds", "the wait before a resubmission")
    finish_reason: str | None = key("finishReason", "why the run finishes")
    checked_at: str = key("checkedAt", "when (RFC 3339)")
    next_poll_seconds: int = key("nextPollSeconds", "the next timed check, after `checkedAt` (60 to 3600)")
    next_check_reason: str = key("nextCheckReason", "why then")
    checks: int = key("checks", "checks so far in this execution (0 again in a continuation)")
    links: dict[str, str] = key(
        "links", "console links (`execution`, `trainingJob`, `logs`, `batchJob`; in the attempt's region)"
    )
