"""A SageMaker training job's timeline, computed once when the job is created: start-up
(waiting out capacity gaps), training with periodic checkpoints, spot interruptions and
restarts, the end (Completed, Failed) or a stop that cuts it short."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from spotline_dev.harness.standin.base.clock import EPS
from spotline_dev.harness.standin.base.spot_weather import (
    SpotWeather,
    TrainingBehaviour,
    capacity_from,
    merged_gaps,
    next_gap_start,
)

DOWNLOAD_SECONDS = 60.0  # last part of every start delay: instances up, input data downloading
INTERRUPTED_SECONDS = 120.0  # first part of a restart: the two-minute spot notice and teardown
STARTUP_FAILURE_SECONDS = 60.0  # a job failed by fail_next_attempt fails this long after creation
REPAIR_SECONDS = 600.0  # a cluster repair: reboot or replace an instance, restore the checkpoint (stand-in's figure)
# Stand-in: the repair is left out of TrainingTimeInSeconds as of BillableTimeInSeconds (the guide says only that
# "You are not billed for the cluster repair process").
STOPPING_SECONDS = 30.0  # any stop: SIGTERM, last checkpoint, instances released (AWS allows up to 120 s)

BILLED = frozenset({"Downloading", "Training", "Uploading"})

# StatusMessages as SecondaryStatusTransition.StatusMessage lists them ("Starting Starting the training
# job. Launching requested ML instances. Insufficient capacity error from EC2 while launching
# instances, retrying! ... Training Training image download completed. Training in progress.");
# the others are the stand-in's wording ("Status messages are subject to change").
_WAITING = "Insufficient capacity error from EC2 while launching instances, retrying!"
_LAUNCHING = "Launching requested ML instances."
_DOWNLOADING = "Downloading input data"
_TRAINING = "Training image download completed. Training in progress."
_UPLOADING = "Uploading generated training model"
_INTERRUPTED = "Training job interrupted: spot capacity was reclaimed. It resumes from its last checkpoint."
NO_CAPACITY = (
    "CapacityError: Unable to provision requested ML compute capacity. Please retry using a different ML instance type."
)
PLAN_PENDING_LIMIT = 2 * 86400.0
PLAN_INSUFFICIENT_CAPACITY = "InsufficientCapacityError: pending for the training plan's capacity for 2 days"
_PLAN_ENDING = "Training plan capacity ending: SageMaker is terminating the job's instances"
# AWS: SageMaker developer guide, "Cluster repairs for GPU errors": "If you are running a training job that
# fails on a GPU, SageMaker AI will run a GPU health check [...] The instance is either replaced or rebooted as
# part of a SageMaker AI cluster repair process. During this process, you will see the following message in your
# training job status: Repairing training cluster due to hardware failure [...] If the cluster repair is
# successful, SageMaker AI will automatically restart the training job from the previous checkpoint. [...] You
# are not billed for the cluster repair process."
# Stand-in: the repair shows as SecondaryStatus Restarting (in the API's enum; the guide names no status), lasts
# REPAIR_SECONDS, is not billed, and always succeeds (the guide allows up to 10 repair attempts per failure).
REPAIRING = "Repairing training cluster due to hardware failure"
_ALGORITHM_ERROR = "AlgorithmError: ExecuteUserScriptError: ExitCode 1 (the training script failed)"


@dataclass
class Segment:
    status: str  # SecondaryStatus from `start` until the next segment (or the plan's end)
    start: float
    message: str
    progress: float = 0.0  # Training only: progress seconds at `start`


@dataclass
class Plan:
    """A training job's timeline, fixed at creation (and cut short by a stop)."""

    segments: list[Segment]
    end: float
    status: str  # final TrainingJobStatus: Completed | Failed | Stopped
    final: str  # final SecondaryStatus
    message: str
    failure_reason: str | None = None
    checkpoints: list[tuple[float, int]] = field(default_factory=list)  # (time, step saved)
    interruptions: list[tuple[float, float]] = field(default_factory=list)  # (time, work lost)
    repairs: list[tuple[float, float]] = field(default_factory=list)  # (time, work lost): a GPU failed
    stop_kind: str | None = None  # "user" | "terminate" | "timeout" | "limit"

    def segment_at(self, t: float) -> Segment:
        current = self.segments[0]
        for segment in self.segments:
            if segment.start > t + EPS:
                break
            current = segment
        return current

    def seconds_in(self, statuses: frozenset[str] | set[str], until: float) -> float:
        total, bound = 0.0, min(until, self.end)
        for i, segment in enumerate(self.segments):
            stop = self.segments[i + 1].start if i + 1 < len(self.segments) else self.end
            if segment.status in statuses:
                total += max(0.0, min(stop, bound) - segment.start)
        return total

    def when_seconds_in(self, statuses: frozenset[str], amount: float) -> float | None:
        """The time at which `amount` seconds have been spent in `statuses`, if ever."""
        spent = 0.0
        for i, segment in enumerate(self.segments):
            stop = self.segments[i + 1].start if i + 1 < len(self.segments) else self.end
            if segment.status in statuses:
                if spent + (stop - segment.start) >= amount - EPS:
                    return segment.start + max(0.0, amount - spent)
                spent += stop - segment.start
        return None


def plan_training(
    weather: SpotWeather,
    created: float,
    *,
    spot: bool,
    behaviour: TrainingBehaviour,
    restored: float,
    trained_before: float,
    interval: float,
    checkpointed: bool,
    injected: str | None,
    max_pending: float | None = None,
    window: tuple[float, float] | None = None,
    first_interval: float | None = None,
) -> Plan:
    """The job's timeline if nothing stops it: start (waiting out capacity gaps), train with
    periodic checkpoints (the first `first_interval` after each start when given, as the helper
    does with SPOTLINE_FIRST_CHECKPOINT_MINUTES), lose work back to the last one at each spot
    interruption, restart, and end Completed (after uploading) or Failed (fail_after). A start needs spot capacity for
    the whole start delay: a gap that begins before Training only delays it."""
    delay = weather.spot_start_delay if spot else weather.on_demand_start_delay
    segments: list[Segment] = []
    if injected is not None:
        segments.append(Segment("Starting", created, _LAUNCHING))
        end = created + min(STARTUP_FAILURE_SECONDS, delay)
        return Plan(segments, end, "Failed", "Failed", injected, failure_reason=injected)
    reclaims = spot or window is not None  # spot capacity and a training plan's end take instances back
    if window is not None:  # a training plan: capacity from its start until its instances are terminated
        gaps = [(-math.inf, window[0]), (window[1], math.inf)]
        max_pending, no_capacity = PLAN_PENDING_LIMIT, PLAN_INSUFFICIENT_CAPACITY
    else:
        gaps = merged_gaps(weather.capacity_gaps if spot else weather.on_demand_gaps)
        no_capacity = NO_CAPACITY
    total = behaviour.total_steps
    marks = deque(sorted(m for m in weather.interruptions if m > trained_before + EPS)) if spot else deque()
    faults = deque(sorted(m for m in behaviour.hardware_faults if m > trained_before + EPS))
    progress, saved, trained = restored, restored, trained_before
    checkpoints: list[tuple[float, int]] = []
    interruptions: list[tuple[float, float]] = []
    repairs: list[tuple[float, float]] = []
    since, visible_from = created, created  # capacity wanted from `since`; Starting shown from `visible_from`
    while True:
        start = capacity_from(gaps, since, delay)
        if max_pending is not None and start - since > max_pending + EPS:
            # AWS: sagemaker StoppingCondition.MaxPendingTimeInSeconds: "The maximum length of time, in seconds,
            # that a training or compilation job can be pending before it is stopped."
            # Stand-in: it ends Failed with SageMaker's capacity message, which Batch requeues (batch_jobs); on a
            # training plan, InsufficientCapacityError after 2 days (training_plans).
            if since == created:
                segments.append(Segment("Starting", created, _WAITING))
            end = since + max_pending
            return Plan(
                segments, end, "Failed", "Failed", no_capacity, no_capacity, checkpoints, interruptions, repairs=repairs
            )
        if start > visible_from + EPS:
            segments.append(Segment("Starting", visible_from, _WAITING))
        segments.append(Segment("Starting", max(start, visible_from), _LAUNCHING))
        segments.append(Segment("Downloading", start + delay - min(DOWNLOAD_SECONDS, delay / 2), _DOWNLOADING))
        t = start + delay
        while True:  # training on these instances, through any cluster repairs
            segments.append(Segment("Training", t, _TRAINING, progress))
            remaining = behaviour.duration - progress
            to_fail = math.inf if behaviour.fail_after is None else max(0.0, behaviour.fail_after - trained)
            to_mark = marks[0] - trained if marks else math.inf
            to_gap = next_gap_start(gaps, t) - t if reclaims else math.inf  # on-demand instances are never reclaimed
            to_fault = faults[0] - trained if faults else math.inf
            run = max(0.0, min(remaining, to_fail, to_mark, to_gap, to_fault))
            completes = remaining <= run + EPS
            offset = interval if first_interval is None else min(interval, first_interval)
            while checkpointed and offset <= run + EPS and not (completes and offset >= remaining - EPS):
                step = _step(behaviour, progress + offset)
                checkpoints.append((t + offset, step))
                saved = step / total * behaviour.duration
                offset += interval
            t, progress, trained = t + run, progress + run, trained + run
            if completes:
                if checkpointed:
                    checkpoints.append((t, total))
                segments.append(Segment("Uploading", t, _UPLOADING))
                end = t + behaviour.upload_seconds
                completed = "Training job completed"
                return Plan(
                    segments,
                    end,
                    "Completed",
                    "Completed",
                    completed,
                    None,
                    checkpoints,
                    interruptions,
                    repairs=repairs,
                )
            if to_fail <= run + EPS:
                failed = _ALGORITHM_ERROR
                return Plan(
                    segments, t, "Failed", "Failed", failed, failed, checkpoints, interruptions, repairs=repairs
                )
            if not (to_fault <= run + EPS and to_fault < min(to_mark, to_gap) - EPS):
                break
            # A GPU failed: the cluster is repaired (not billed) and training restarts from the last checkpoint.
            while faults and faults[0] <= trained + EPS:
                faults.popleft()
            repairs.append((t, progress - saved))
            progress = saved
            segments.append(Segment("Restarting", t, REPAIRING))
            reclaimed = next_gap_start(gaps, t) if reclaims else math.inf
            t += REPAIR_SECONDS
            if reclaimed < t - EPS:  # spot capacity (or the plan's) taken back during the repair
                t = reclaimed
                break
        while marks and marks[0] <= trained + EPS:
            marks.popleft()
        while faults and faults[0] <= trained + EPS:  # a GPU that fails as the instances go is not repaired
            faults.popleft()
        interruptions.append((t, progress - saved))
        progress = saved
        if window is not None:  # "Jobs temporarily back to Pending status" (MaxPendingTimeInSeconds)
            segments.append(Segment("Pending", t, _PLAN_ENDING))
            since, visible_from = t, t
            continue
        segments.append(Segment("Interrupted", t, _INTERRUPTED))
        delay = weather.spot_start_delay if weather.restart_delay is None else weather.restart_delay
        since, visible_from = t, t + min(INTERRUPTED_SECONDS, delay / 4)


def cut(
    plan: Plan, at: float, *, behaviour: TrainingBehaviour, checkpointed: bool, final: str, message: str, kind: str
) -> Plan:
    """The plan stopped at `at`: training saves once more on SIGTERM, later events vanish, and the
    job is Stopping (SecondaryStatus Stopping) before it ends Stopped with `final` as its
    SecondaryStatus (Stopped, or MaxRuntimeExceeded / MaxWaitTimeExceeded for a limit). The
    SageMaker guide ("Managed Spot Training Lifecycle") shows a job that exceeded
    MaxWaitTimeInSeconds going InProgress, then "`Stopping`: `Stopping`", then "`Stopped`:
    `MaxWaitTimeExceeded`"; StoppingCondition: "To stop a training job, SageMaker sends the
    algorithm the SIGTERM signal, which delays job termination for 120 seconds."

    A stop comes at the moment of a call (StopTrainingJob, TerminateServiceJob): what began by
    then stays, since it may have been seen already. A limit or timeout is planned at creation:
    what would begin at its moment never does."""
    stopped_by_call = kind in ("user", "terminate")

    def kept(t: float) -> bool:
        return t <= at + EPS if stopped_by_call else t < at - EPS

    segments = [s for s in plan.segments if kept(s.start)] or plan.segments[:1]
    checkpoints = [c for c in plan.checkpoints if c[0] <= at + EPS]
    current = segments[-1]
    if current.status == "Training" and checkpointed:
        step = _step(behaviour, current.progress + at - current.start)
        if not checkpoints or checkpoints[-1][0] < at - EPS:
            checkpoints.append((at, step))
    interruptions = [i for i in plan.interruptions if kept(i[0])]
    repairs = [r for r in plan.repairs if kept(r[0])]
    segments.append(Segment("Stopping", at, "Stopping the training job"))
    end = at + STOPPING_SECONDS
    return Plan(segments, end, "Stopped", final, message, None, checkpoints, interruptions, repairs, kind)


def _step(behaviour: TrainingBehaviour, progress: float) -> int:
    """The step a checkpoint saves after `progress` seconds of work (whole steps only)."""
    if behaviour.duration <= 0:
        return behaviour.total_steps
    return min(behaviour.total_steps, math.floor(progress / behaviour.duration * behaviour.total_steps + EPS))
