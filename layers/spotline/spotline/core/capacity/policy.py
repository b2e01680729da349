"""The deadline policy: keep a job on spot, or move it to on-demand in time (pure).

Each rule is explainable in one sentence to on-call:

**Last safe moment.** Switch when the time left before the deadline no longer covers the
remaining work on on-demand, plus the restart overhead, plus a safety margin for what is still
uncertain: 5 % of the declared work (at least ten minutes) until a checkpoint measures the job's
real throughput, then a share of the work left that shrinks as the training the pace rests on
grows (2 % after 15 minutes, 1 % after an hour, 0.5 % from 4 hours; at least two minutes).

The work is the declared expectedDuration until a checkpoint records the training seconds behind
it, then what that throughput says the whole job needs (`measured_work_seconds`). Until the last
safe moment the job stays on spot and waits out interruptions and capacity gaps, whether spot
capacity is there or not. When it is already too late (on-demand from now could not make the
deadline either: out of reach from the start, or a check came late) it stays on spot, since a
switch would only cost more.

**An early first checkpoint.** Until a checkpoint measures the work, the margin is 5 % of the
declared work; where the slack is so small that this margin would switch before the interval's
first checkpoint, a spot attempt saves first sooner (`first_checkpoint_seconds`, rendered as
SPOTLINE_FIRST_CHECKPOINT_MINUTES), so the job is measured, and keeps the smaller margin, in time.

**Back to spot when it pays.** On on-demand the slack stays what it was at the switch. When the
fleet has just seen spot capacity of the job's type in its region (another job started or ran on
it, `spot_seen`), and the slack still covers a spot start-up on top of what the fallback needs
(`return_slack`: it grows when the first checkpoint there shows the job faster than declared, and
the margin shrinks once the work is measured), with at least MIN_RETURN_WORK_SECONDS of work left
and the on-demand attempt training (its start-up paid), the job goes back to spot
(`return-to-spot`); the last safe moment then guards it as before. Each return spends a start-up
of slack, and a run makes at most `lifecycle.MAX_RETURNS_TO_SPOT`, so a job cannot flap. Moving
to on-demand early while spot is missing, to keep slack for a return, was tried and left out
(docs/simulation.md, "Back to spot").

Moving to on-demand earlier never makes the rest cheaper (the work left is the same or less
later); it only gives up spot capacity that may come back. A former
second rule did just that: while spot capacity was missing, it switched as soon as progress fell
behind the uniform-progress line (after Wu et al., "Can't Be Late", NSDI 2024, whose policy uses
on-demand to catch up and then goes back to spot as soon as it is ahead). On real spot
traces (`spotline simulate`, docs/simulation.md) it made most switches and raised the mean cost
by 14 % without saving a deadline the margin covers. `uniform_progress_line` remains as the
job's even schedule, for reports.

**DeadlineAtRisk** (`no_option_left`) tells on-call when no capacity can meet the deadline any
more. A job training now has trained past its last checkpoint: its work left is estimated at the
pace measured up to that checkpoint (`estimated_work_left`), and the page fires only when even the
estimate's optimistic end (`estimate_spread`) misses the deadline. A restart resumes from the
checkpoint, so the switch rule and a job not training count the work left from there.

Spotline's Lambdas, the sandbox and `spotline simulate` all call `decide` with the same inputs;
time is passed in.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from spotline.core.common.durations import format_duration
from spotline.core.spec.model import JobSpec

Capacity = Literal["spot", "on-demand"]
Verdict = Literal["continue", "switch-to-on-demand", "return-to-spot"]

DEFAULT_RESTART_OVERHEAD_SECONDS = 1200.0
"""Resubmission to training again (queue, instance, image download) before anything was measured."""
START_UP_ALLOWANCE_SECONDS = DEFAULT_RESTART_OVERHEAD_SECONDS
"""Where the uniform-progress line starts: no job makes progress while it first starts up."""
MIN_SAFETY_MARGIN_SECONDS = 600.0
SAFETY_MARGIN_FRACTION = 0.05
MIN_MEASURED_MARGIN_SECONDS = 120.0
"""The measured margin's floor: the check cadence near the last safe moment (`polling.next_check`
wakes the Lambda when the slack runs out), not an allowance for the work."""
MEASURED_MARGIN_FRACTION = 0.02
"""The measured margin's share of the work left when the pace rests on MARGIN_REFERENCE_SECONDS of
training; it shrinks with the square root of the training measured (`measured_margin_fraction`)."""
MARGIN_REFERENCE_SECONDS = 900.0
MIN_MEASURED_MARGIN_FRACTION = 0.005
MAX_BACKOFF_SECONDS = 3600.0
SPOT_START_SECONDS = DEFAULT_RESTART_OVERHEAD_SECONDS
"""What a return to spot spends of the slack: a spot start-up with capacity at hand (the fleet just saw it)."""
MIN_RETURN_WORK_SECONDS = 2 * DEFAULT_RESTART_OVERHEAD_SECONDS
"""No return to spot for less work than this: the spot start-up and, if spot goes again, the
on-demand restart would cost about what the spot price saves."""
ESTIMATE_SPREAD_AT_ONE_INTERVAL = 0.10
"""How far off a work-left estimate may be, as a share of the work left, when its pace rests on
one checkpoint interval of training; it shrinks with the square root of the intervals measured,
down to MEASURED_MARGIN_FRACTION (`estimate_spread`)."""
DEFAULT_CHECKPOINT_INTERVAL_SECONDS = 900.0
FIRST_CHECKPOINT_GUARD_SECONDS = 120.0
"""Between the first checkpoint and the moment the declared margin would switch: the first poll
and the check cadence (`first_checkpoint_seconds`)."""
MIN_FIRST_CHECKPOINT_SECONDS = 300.0
"""No first checkpoint sooner than this: a save costs real I/O, and a pace measured over less says little."""
OUT_OF_REACH = "deadline out of reach"
"""How the reason of a decision that finds the deadline out of reach even for on-demand starts."""


@dataclass(frozen=True, slots=True)
class JobClock:
    """What the policy knows about one job at one instant."""

    now: datetime
    started_at: datetime
    """When the first attempt was submitted."""
    deadline: datetime | None
    total_work_seconds: float
    """Compute the job needs in all: measured (`measured_work_seconds`) once a checkpoint
    records its training time, else the manifest's expectedDuration."""
    progress: float
    """Fraction of the work done and safe in a checkpoint, 0..1."""
    capacity: Capacity
    spot_missing: bool
    """True while the job waits for spot capacity (queued short of capacity, interrupted, or
    stuck starting beyond the restart overhead). Reported; the switch does not depend on it."""
    restart_overhead_seconds: float = DEFAULT_RESTART_OVERHEAD_SECONDS
    work_measured: bool = False
    """`total_work_seconds` is measured (progress.json's training seconds), not declared."""
    queue_wait_seconds: float = 0.0
    """The wait a new attempt would meet in the queue now, included in the restart overhead
    (`spotline.core.capacity.queue`): in a crowded queue on-demand is not instant either."""
    fastest_speed: float = 1.0
    """A job with instance-type alternatives: `total_work_seconds` is on its slowest type (the
    switch comes in time for whichever type on-demand gets); the fastest type's speed relative
    to it (>= 1) judges whether the deadline is out of reach (even the best type cannot make it)."""
    trained_since_checkpoint: float = 0.0
    """Fraction of the work the attempt running now has trained since the last checkpoint (or since
    it resumed), estimated at the measured pace; 0 when not training. Kept only while it runs: a
    restart resumes from `progress`, so `remaining_work` (what a move or an interruption leaves)
    does not count it, `estimated_work_left` (what the running attempt still has to do) does."""
    since_checkpoint_seconds: float = 0.0
    """The training seconds behind `trained_since_checkpoint` (SageMaker's Training status since
    progress.json's updatedAt, at most one checkpoint interval)."""
    pace_measured_seconds: float = 0.0
    """The training seconds the pace is measured over (progress.json's trainingSeconds at the last
    checkpoint); 0 when the work is the declared expectedDuration."""
    checkpoint_interval_seconds: float = DEFAULT_CHECKPOINT_INTERVAL_SECONDS
    on_demand_training: bool = False
    """The on-demand attempt trains (its start-up, paid already, is behind it)."""
    spot_copy_seconds: float = 0.0
    """On on-demand in a run across regions: the checkpoint copy a spot attempt's restart estimate
    counts (`Observation.copy_seconds`), which a return to spot must leave room for."""
    spot_seen: bool | None = None
    """On on-demand: whether the fleet saw spot capacity of the job's type in its region just now (a
    fresh sighting: another job started or ran on it). None: not asked (a return to spot is not
    open to the job: its strategy, its returns used up, or not on on-demand)."""


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str
    slack_seconds: float | None
    """Time left minus what on-demand needs (remaining work + overhead + margin); None without a deadline."""


def measured_work_seconds(fraction_done: float, training_seconds: float | None) -> float | None:
    """The job's whole work from its real throughput: the training seconds behind its
    checkpointed progress (progress.json's `trainingSeconds`) over that progress. None before a
    checkpoint that records them: then the declared expectedDuration is all there is."""
    if training_seconds is None or training_seconds <= 0 or fraction_done <= 0:
        return None
    return training_seconds / min(1.0, fraction_done)


def safety_margin(total_work_seconds: float) -> float:
    return max(MIN_SAFETY_MARGIN_SECONDS, SAFETY_MARGIN_FRACTION * total_work_seconds)


def measured_margin_fraction(job: JobClock) -> float:
    """The share of the work left a measured pace may still be off by: 2 % when it rests on 15
    minutes of training, shrinking with the square root of the training measured (as
    `estimate_spread` does), between 0.5 % and the declared 5 % (a pace of unknown footing)."""
    if job.pace_measured_seconds <= 0:
        return SAFETY_MARGIN_FRACTION
    share = MEASURED_MARGIN_FRACTION * math.sqrt(MARGIN_REFERENCE_SECONDS / job.pace_measured_seconds)
    return min(SAFETY_MARGIN_FRACTION, max(MIN_MEASURED_MARGIN_FRACTION, share))


def margin_of(job: JobClock) -> float:
    """The margin for what is still uncertain: 5 % of the declared work until the job's
    throughput is measured (a job may run longer than its expectedDuration), then a share of the
    work left that shrinks as the measurement grows (`measured_margin_fraction`)."""
    if job.work_measured:
        return max(MIN_MEASURED_MARGIN_SECONDS, measured_margin_fraction(job) * remaining_work(job))
    return safety_margin(job.total_work_seconds)


def describe_margin(job: JobClock) -> str:
    """Where the margin comes from, for a reason: `3m margin: 1.4 % of the work left, the pace
    measured over 30m of training` (declared work: `24m margin`)."""
    margin = f"{format_duration(margin_of(job))} margin"
    if not job.work_measured:
        return margin
    basis = (
        f"the pace measured over {format_duration(job.pace_measured_seconds)} of training"
        if job.pace_measured_seconds > 0
        else "a pace measured over an unknown time"
    )
    return f"{margin}: {100 * measured_margin_fraction(job):.1f} % of the work left, {basis}"


def first_checkpoint_seconds(job: JobClock) -> float | None:
    """When a spot attempt starting now should save first, so that its checkpoint measures the work
    before the declared margin would send the job to on-demand: the slack less the attempt's own
    start-up and a guard. None: the normal interval comes in time (or the work is measured
    already), or even a first save after MIN_FIRST_CHECKPOINT_SECONDS would come too late."""
    slack = _slack(job)
    if slack is None or job.work_measured:
        return None
    room = slack - job.restart_overhead_seconds - FIRST_CHECKPOINT_GUARD_SECONDS
    if room >= job.checkpoint_interval_seconds or room < MIN_FIRST_CHECKPOINT_SECONDS:
        return None
    return room


def first_checkpoint_for(
    *, work_seconds: float, deadline_seconds: float, restart_seconds: float, interval_seconds: float
) -> float | None:
    """`first_checkpoint_seconds` at a job's first submission, from its manifest: the declared work,
    the deadline (seconds after the submission), the restart estimate and the checkpoint interval.
    `spotline simulate` sizes its jobs' first checkpoint with it."""
    now = datetime.fromtimestamp(0, UTC)
    return first_checkpoint_seconds(
        JobClock(
            now=now,
            started_at=now,
            deadline=now + timedelta(seconds=deadline_seconds),
            total_work_seconds=work_seconds,
            progress=0.0,
            capacity="spot",
            spot_missing=False,
            restart_overhead_seconds=restart_seconds,
            checkpoint_interval_seconds=interval_seconds,
        )
    )


def first_checkpoint_minutes(
    spec: JobSpec,
    now: datetime,
    *,
    fraction_done: float = 0.0,
    work_measured: bool = False,
    restart_seconds: float = DEFAULT_RESTART_OVERHEAD_SECONDS,
) -> int | None:
    """The whole minutes after its start a spot attempt submitted now saves first
    (SPOTLINE_FIRST_CHECKPOINT_MINUTES), or None for the manifest's interval (also without
    checkpoints or a deadline)."""
    if not spec.checkpoint_s3_uri or spec.deadline_at is None:
        return None
    first = first_checkpoint_seconds(
        JobClock(
            now=now,
            started_at=now,
            deadline=spec.deadline_at,
            total_work_seconds=float(spec.expected_duration_seconds or spec.max_runtime_seconds),
            progress=fraction_done,
            capacity="spot",
            spot_missing=False,
            restart_overhead_seconds=restart_seconds,
            work_measured=work_measured,
            checkpoint_interval_seconds=60.0 * spec.checkpoint_interval_minutes,
        )
    )
    return None if first is None else max(1, math.floor(first / 60))


def remaining_work(job: JobClock) -> float:
    return max(0.0, job.total_work_seconds * (1.0 - min(1.0, max(0.0, job.progress))))


def on_demand_needs(job: JobClock) -> float:
    """Seconds on-demand needs from now to finish: remaining work + restart + margin."""
    return remaining_work(job) + job.restart_overhead_seconds + margin_of(job)


def uniform_progress_line(job: JobClock) -> float:
    """The fraction of work a job spreading its work evenly from its start (after one start-up
    allowance) to its deadline would have done by now (the even schedule: for reports; `decide`
    does not switch on it)."""
    if job.deadline is None:
        return 0.0
    window = (job.deadline - job.started_at).total_seconds() - START_UP_ALLOWANCE_SECONDS
    elapsed = (job.now - job.started_at).total_seconds() - START_UP_ALLOWANCE_SECONDS
    if window <= 0:
        return 1.0
    return min(1.0, max(0.0, elapsed / window))


def return_slack(job: JobClock) -> float | None:
    """The slack a return to spot would leave after its start-up (with the queue's wait, and the
    checkpoint copy a spot attempt's restart counts in a run across regions): what a later
    on-demand fallback still has spare (None without a deadline)."""
    slack = _slack(job)
    return None if slack is None else slack - spot_start_seconds(job)


def spot_start_seconds(job: JobClock) -> float:
    """What a return to spot spends of the slack: a spot start-up with capacity at hand, the wait
    in the queue now, and the copy a spot attempt counts in its restart (`spot_copy_seconds`)."""
    return SPOT_START_SECONDS + job.queue_wait_seconds + job.spot_copy_seconds


def may_return_to_spot(job: JobClock) -> bool:
    """A return to spot would be safe and worth it, if the fleet sees spot capacity (`spot_seen`)."""
    room = return_slack(job)
    return room is not None and room >= 0 and remaining_work(job) >= MIN_RETURN_WORK_SECONDS


def decide(job: JobClock) -> Decision:
    if job.capacity == "on-demand":
        return _on_demand(job)
    if job.deadline is None:
        return Decision("continue", "no deadline: spot for as long as it takes", None)
    slack = _slack(job)
    assert slack is not None
    left = (job.deadline - job.now).total_seconds()
    if slack <= 0 and out_of_reach(job):
        return Decision(
            "continue",
            f"{OUT_OF_REACH}: {format_duration(max(0.0, left))} left, less than on-demand's "
            f"{format_duration(best_remaining_work(job) + best_restart_seconds(job))} for the work and a restart: "
            "moving would cost more and miss it all the same, so the job stays on spot",
            slack,
        )
    if slack <= 0:
        return Decision(
            "switch-to-on-demand",
            f"deadline at risk: {format_duration(max(0.0, left))} left, on-demand needs "
            f"{format_duration(on_demand_needs(job))} ({format_duration(remaining_work(job))} of work "
            f"+ {format_duration(job.restart_overhead_seconds)} restart{_queue_part(job)} "
            f"+ {describe_margin(job)})",
            slack,
        )
    return Decision("continue", f"on track: {format_duration(slack)} of slack on-demand would not need", slack)


def _on_demand(job: JobClock) -> Decision:
    """Stay on on-demand, or go back to spot (`may_return_to_spot`, `spot_seen`), saying which
    condition holds the job where it is."""
    slack = _slack(job)
    if job.spot_seen is None:
        return Decision("continue", "on on-demand capacity", slack)
    if not may_return_to_spot(job):
        return Decision("continue", "on on-demand capacity; too little slack or work left for a return to spot", slack)
    if not job.on_demand_training:
        why = "a return to spot waits until the on-demand attempt trains (its start-up is paid)"
        return Decision("continue", f"on on-demand capacity; {why}", slack)
    if not job.spot_seen:
        return Decision("continue", "on on-demand capacity; no spot capacity seen here just now", slack)
    assert slack is not None
    return Decision(
        "return-to-spot",
        f"spot capacity is back (the fleet just saw it) and {format_duration(slack)} of slack covers a "
        f"{format_duration(spot_start_seconds(job))} spot start-up with "
        f"{format_duration(slack - spot_start_seconds(job))} to spare: back to spot from the last checkpoint, "
        "on-demand again at the last safe moment",
        slack,
    )


def out_of_reach(job: JobClock) -> bool:
    """Too late to switch: even on-demand from now at best (the fastest type, no margin, and no
    queue wait: the fallback runs at the team's top priority) ends after the deadline."""
    if job.deadline is None:
        return False
    return (job.deadline - job.now).total_seconds() < best_remaining_work(job) + best_restart_seconds(job)


def best_remaining_work(job: JobClock) -> float:
    """The work left on the fastest type the job may run on."""
    return remaining_work(job) / max(1.0, job.fastest_speed)


def training_since_checkpoint(
    now: datetime, checkpoint_at: datetime | None, training_since: datetime | None, interval_seconds: float
) -> float:
    """Seconds the attempt running now has trained since the last checkpoint: since the later of
    progress.json's updatedAt and the start of SageMaker's current Training status (a resumed
    attempt trains from its restore), at most one checkpoint interval (the training code saves
    every interval: progress beyond it is not in evidence, and a stalled job must not look busy)."""
    if checkpoint_at is None or training_since is None:
        return 0.0
    since = (now - max(checkpoint_at, training_since)).total_seconds()
    return min(max(0.0, interval_seconds), max(0.0, since))


def estimated_work_left(job: JobClock) -> float:
    """The work the attempt running now still has to do: `remaining_work` less what it has trained
    since the last checkpoint at the measured pace (an estimate; the same as `remaining_work` for a
    job not training)."""
    done = min(1.0, max(0.0, job.progress) + max(0.0, job.trained_since_checkpoint))
    return max(0.0, job.total_work_seconds * (1.0 - done))


def estimate_spread(job: JobClock) -> float:
    """How far off the work left may be, as a share of it: 0 for declared work (the team's
    expectedDuration is taken as it is), else 10 % when the pace rests on one checkpoint interval
    of training, shrinking with the square root of the intervals measured, to at least 2 %."""
    if job.pace_measured_seconds <= 0:
        return 0.0
    intervals = max(1.0, job.pace_measured_seconds / max(1.0, job.checkpoint_interval_seconds))
    return max(MEASURED_MARGIN_FRACTION, ESTIMATE_SPREAD_AT_ONE_INTERVAL / math.sqrt(intervals))


def work_left_at_best(job: JobClock, *, running: bool) -> float:
    """The work left on the fastest type: the running attempt's estimate, else from the last
    checkpoint (what a restart resumes from)."""
    work = estimated_work_left(job) if running else remaining_work(job)
    return work / max(1.0, job.fastest_speed)


def no_option_left(job: JobClock, *, running: bool) -> bool:
    """No capacity tier can meet the deadline any more, while it is still ahead: the time left is
    less than the work left (plus a restart for a job not running now) even at best, i.e. even if
    the job runs faster than measured by the estimate's spread. On-call hears of it at once
    (DeadlineAtRisk), not only at the end."""
    if job.deadline is None:
        return False
    left = (job.deadline - job.now).total_seconds()
    work = work_left_at_best(job, running=running)
    if work <= 0:  # nothing left to do: no restart is needed either
        return False
    return 0 < left < work * (1.0 - estimate_spread(job)) + (0.0 if running else best_restart_seconds(job))


def describe_work_left(job: JobClock, *, running: bool) -> str:
    """The work left as on-call reads it, saying how sure it is: declared, or estimated from the
    measured pace (and how much training that pace rests on), with the spread."""
    work = work_left_at_best(job, running=running)
    fastest = " on the fastest type" if job.fastest_speed > 1.0 else ""
    if job.pace_measured_seconds <= 0:
        return (
            f"{format_duration(work)} of work left{fastest} (from the declared expectedDuration: no pace measured yet)"
        )
    measured = format_duration(job.pace_measured_seconds)
    spread = format_duration(work * estimate_spread(job))
    if not running:
        return (
            f"about {format_duration(work)} of work left{fastest} from the last checkpoint (at the pace measured "
            f"over {measured} of training to it; it may be {spread} less)"
        )
    since = (
        f", less the {format_duration(job.since_checkpoint_seconds)} trained since it"
        if job.since_checkpoint_seconds >= 1
        else ""
    )
    return (
        f"about {format_duration(work)} of work left{fastest} (estimated at the pace measured over {measured} of "
        f"training to the last checkpoint{since}; it may be {spread} less)"
    )


def best_restart_seconds(job: JobClock) -> float:
    return max(0.0, job.restart_overhead_seconds - job.queue_wait_seconds)


def _queue_part(job: JobClock) -> str:
    return f" incl. {format_duration(job.queue_wait_seconds)} queue wait" if job.queue_wait_seconds >= 60 else ""


def _slack(job: JobClock) -> float | None:
    if job.deadline is None:
        return None
    return (job.deadline - job.now).total_seconds() - on_demand_needs(job)


def backoff_seconds(base_seconds: float, attempt: int, seed: str, cap_seconds: float = MAX_BACKOFF_SECONDS) -> int:
    """Exponential back-off with full jitter before spot attempt `attempt + 1`.

    Deterministic per `seed` (execution and attempt) so a retried Lambda waits the same time
    and tests replay exactly, yet different executions spread out.
    """
    ceiling = min(cap_seconds, base_seconds * 2 ** max(0, attempt - 1))
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}:{attempt}".encode()).digest()[:8], "big"))
    return max(1, math.floor(rng.uniform(0, ceiling)))
