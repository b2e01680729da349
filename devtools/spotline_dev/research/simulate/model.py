"""The simulation model: the job and its billing, what a policy sees and says, and `simulate`,
the time-stepped replay of one job on one trace.

**The model** (one training job on one availability trace, in whole steps of `step_seconds`):

- The job needs `W` of compute and must finish by its deadline `D` (both from its submission).
- Every start of an instance, spot or on-demand, first spends the restart overhead `d`
  (provisioning, image and data download, restore) before training progresses; a spot start
  needs capacity for every step of it, and waits for capacity when there is none (as managed
  spot training does).
- Training writes a checkpoint every `c` of training since it (re)started, the first one after
  `c1` <= `c` when the job has one (`first_checkpoint`: Spotline sizes it to the slack, so the
  work is measured before the declared margin would switch; every policy gets it). A spot preemption
  loses the work since the last one; a stop the workflow asks for (StopTrainingJob: SIGTERM)
  saves first, as Spotline's checkpoint helper does. Without checkpoints any stop or preemption
  sends the job back to zero.
- Money: a training step costs the on-demand price on on-demand and `SPOT_PRICE_RATIO` of it on
  spot. Of each start, SageMaker bills what follows the acquisition of instances (its last
  `STARTUP_AFTER_ACQUIRE_SECONDS`: image and data download), not the queueing and provisioning
  before it (all of it with `overhead_billed`), so on-demand from the start costs `W` plus ten
  minutes at the on-demand price. Costs are in on-demand hours (on-demand price = 1).
- SageMaker reports TrainingStartTime when instances are acquired, the last
  `STARTUP_AFTER_ACQUIRE_SECONDS` of the start-up before training; so the restart overhead
  Spotline measures (that wait + 10 minutes) is `d` when capacity is at hand, and more after a
  wait for spot capacity, as in production.
- Policies plan with the declared work (expectedDuration); `work_error` makes jobs really need
  more, to see what a safety margin buys.
- A job that misses its deadline is stopped there: its cost is what it paid until then.

**Spot price.** `SPOT_PRICE_RATIO = 0.3`. In the period of the traces (spring 2020) the spot
price of the GPU instances the AWS log covers sat at about 30 % of on-demand in us-east-1
(p3.2xlarge about $0.92 against $3.06 an hour), and GCP listed preemptible GPUs at about 30 % of
their on-demand rate (V100 $0.74 against $2.48, K80 $0.135 against $0.45 per GPU-hour); the
project's Batch/SageMaker stand-in uses the same ratio. Results are ratios, so only the ratio
matters; `--spot-price-ratio` changes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from spotline.core.capacity.assess import STARTUP_AFTER_ACQUIRE_SECONDS
from spotline.core.capacity.policy import DEFAULT_RESTART_OVERHEAD_SECONDS
from spotline.core.regions.regions import RECORD_WINDOW_SECONDS, RegionRecord

SPOT_PRICE_RATIO = 0.3
"""Spot price / on-demand price (source in the module docstring)."""
DEFAULT_STEP_SECONDS = 60
DEFAULT_OVERHEAD_SECONDS = int(DEFAULT_RESTART_OVERHEAD_SECONDS)
"""Spotline's own restart estimate before anything is measured (20 minutes)."""
DEFAULT_CHECKPOINT_SECONDS = 15 * 60
"""The manifest default, checkpoint.intervalMinutes = 15."""
HOUR = 3600.0
NEVER = 1 << 62
SIGHTING_SECONDS = 10 * 60
"""How old the fleet's latest sighting of a region's spot capacity may be in the simulation: a
fleet busy enough to have a job starting, waiting or interrupted in each allowed region every
ten minutes (Spotline records each, `spotline.core.regions.regions`)."""

Capacity = Literal["spot", "on-demand", "none"]
Phase = Literal["idle", "copying", "waiting", "interrupted", "starting", "training"]


# --- the job ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Job:
    """One simulated job, in whole steps of `step_seconds`."""

    work: int
    """Compute the job really needs."""
    deadline: int
    overhead: int
    checkpoint: int | None
    """Training between checkpoints; None: no checkpoints at all."""
    step_seconds: int = DEFAULT_STEP_SECONDS
    spot_price: float = SPOT_PRICE_RATIO
    on_demand_price: float = 1.0
    overhead_billed: bool = False
    declared_work: int | None = None
    """The work the manifest declares (expectedDuration) when it differs from `work`: policies
    plan with it, while progress.json reports the true fraction done."""
    copy: int = 0
    """Steps to copy the latest checkpoint to another region before an attempt starts there."""
    copy_cost: float = 0.0
    """What one such copy costs (data transfer between regions), in on-demand hours."""
    first_checkpoint: int | None = None
    """Training before the first checkpoint after each start, when sooner than `checkpoint`
    (SPOTLINE_FIRST_CHECKPOINT_MINUTES); None: `checkpoint`."""

    def __post_init__(self) -> None:
        if self.work <= 0 or self.deadline <= 0 or self.overhead < 0 or self.step_seconds <= 0:
            raise ValueError("work, deadline and step must be positive, the overhead not negative")
        if self.checkpoint is not None and self.checkpoint <= 0:
            raise ValueError("the checkpoint interval must be positive (None: no checkpoints)")
        if self.declared_work is not None and self.declared_work <= 0:
            raise ValueError("the declared work must be positive")
        if self.first_checkpoint is not None and self.first_checkpoint <= 0:
            raise ValueError("the first checkpoint must come after some training (None: the interval)")
        if self.copy < 0 or self.copy_cost < 0:
            raise ValueError("a checkpoint copy takes no negative time and costs no negative money")

    @property
    def declared(self) -> int:
        return self.work if self.declared_work is None else self.declared_work

    def interval(self, fresh: bool) -> int | None:
        """Training until the next checkpoint is due: the first interval on an instance that has
        not saved since it started (`fresh`), else the interval; None without checkpoints."""
        if self.checkpoint is None or not fresh or self.first_checkpoint is None:
            return self.checkpoint
        return min(self.checkpoint, self.first_checkpoint)

    @property
    def step_hours(self) -> float:
        return self.step_seconds / HOUR

    @property
    def billed_start(self) -> int:
        """The steps of each start SageMaker bills: its last `STARTUP_AFTER_ACQUIRE_SECONDS` (the
        image and data download once instances are acquired; queueing and provisioning before
        it are free), all of it with `overhead_billed`."""
        if self.overhead_billed:
            return self.overhead
        return min(self.overhead, math.ceil(STARTUP_AFTER_ACQUIRE_SECONDS / self.step_seconds - 1e-9))

    @property
    def on_demand_cost(self) -> float:
        """On-demand from the start: the work and one start's billed part at the on-demand price."""
        return (self.work + self.billed_start) * self.on_demand_price * self.step_hours

    @classmethod
    def from_seconds(
        cls,
        *,
        work: float,
        deadline: float,
        overhead: float = DEFAULT_OVERHEAD_SECONDS,
        checkpoint: float | None = DEFAULT_CHECKPOINT_SECONDS,
        step_seconds: int = DEFAULT_STEP_SECONDS,
        spot_price_ratio: float = SPOT_PRICE_RATIO,
        overhead_billed: bool = False,
        work_error: float = 0.0,
        copy: float = 0.0,
        copy_cost: float = 0.0,
        first_checkpoint: float | None = None,
    ) -> Job:
        """Work and overhead round up to whole steps, the deadline down (never in the job's
        favour). With `work_error` the job really needs `work x (1 + work_error)`; policies are
        told `work`. `first_checkpoint` rounds down (never later than asked)."""
        declared = math.ceil(work / step_seconds - 1e-9)
        true = math.ceil(work * (1 + work_error) / step_seconds - 1e-9)
        return cls(
            work=true,
            deadline=math.floor(deadline / step_seconds + 1e-9),
            overhead=math.ceil(overhead / step_seconds - 1e-9),
            checkpoint=None if checkpoint is None else max(1, math.ceil(checkpoint / step_seconds - 1e-9)),
            step_seconds=step_seconds,
            spot_price=spot_price_ratio,
            overhead_billed=overhead_billed,
            declared_work=None if true == declared else declared,
            copy=math.ceil(copy / step_seconds - 1e-9),
            copy_cost=copy_cost,
            first_checkpoint=None
            if first_checkpoint is None
            else max(1, math.floor(first_checkpoint / step_seconds + 1e-9)),
        )


# --- what a policy sees and says -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class View:
    """The job at step `t`, as a policy may see it."""

    t: int
    job: Job
    capacity: Capacity
    """What the current attempt asked for ("none" before the first submission)."""
    phase: Phase
    checkpointed: int
    """Work safe in a checkpoint (what progress.json says), in steps of true work."""
    spot_available: bool
    """Spot capacity in this step: the baselines look at it, Spotline's policy does not."""
    first_submitted: int
    attempt_submitted: int
    attempt_started: int | None
    """When SageMaker reported the current attempt started (TrainingStartTime: instances acquired)."""
    previous_waits: tuple[int, ...]
    """Waits from submission to TrainingStartTime of the earlier attempts that started."""
    phase_since: int
    trained_in_attempt: int
    preemptions_in_attempt: int
    region: int = 0
    """Where the current attempt runs (an index into the simulation's regions)."""
    checkpoint_region: int = 0
    """Where the latest checkpoint is: an attempt anywhere else starts with a copy of it."""
    regions_available: tuple[bool, ...] = ()
    """Spot capacity in every region in this step: the baselines look at it, Spotline does not."""
    sighted: tuple[bool, ...] = ()
    """Spot capacity in every region at the fleet's last sighting (`SIGHTING_SECONDS` ago at
    most): what Spotline's record of its own fleet says."""
    records: tuple[RegionRecord, ...] = ()
    """Each region's last day (the trace before the job included) as the fleet's sightings
    record it: the share with spot, interruptions per hour of spot."""

    @property
    def fraction_done(self) -> float:
        return self.checkpointed / self.job.work

    @property
    def remaining(self) -> float:
        """Remaining work as a policy can estimate it: the declared work not yet done."""
        job = self.job
        if job.declared_work is None:
            return float(job.work - self.checkpointed)
        return job.declared * (1 - self.fraction_done)


@dataclass(frozen=True, slots=True)
class Command:
    capacity: Capacity
    wake_at: int | None = None
    """The step at which to ask again (None: only at events, for a policy that wants them)."""
    region: int | None = None
    """Where to run (None: where the job is)."""


class Policy(Protocol):
    name: str
    wakes_on_events: bool
    """Also asked at every event: capacity found or lost, a start-up done, a checkpoint."""

    def decide(self, view: View) -> Command: ...


@dataclass(frozen=True, slots=True)
class Outcome:
    policy: str
    cost: float
    finished_at: int | None
    met: bool
    spot_steps: int
    on_demand_steps: int
    preemptions: int
    lost_steps: int
    switched_at: int | None
    """First step on on-demand capacity, if any."""
    decisions: int
    reason: str = ""
    """Why the policy moved to on-demand, when it says."""
    moves: int = 0
    """Attempts started in another region than the one before."""
    copies: int = 0
    """Checkpoint copies between regions."""
    regions: tuple[int, ...] = ()
    """The region of each attempt, in order."""


# --- the simulator ---------------------------------------------------------------------------


def _next_index(flags: npt.NDArray[np.bool_], value: bool) -> npt.NDArray[np.int64]:
    """nxt[t] = the first index >= t where flags == value (len(flags) if none), t in 0..len."""
    n = len(flags)
    nxt = np.full(n + 1, n, dtype=np.int64)
    hits = np.flatnonzero(flags == value)
    if len(hits):
        positions = np.searchsorted(hits, np.arange(n + 1), side="left")
        valid = positions < len(hits)
        nxt[valid] = hits[positions[valid]]
    return nxt


class _FleetRecord:
    """`View.records`: each region's share of spot and interruptions per spot hour over the day
    before a moment, from running sums over the history and the window."""

    def __init__(self, avails: npt.NDArray[np.bool_], history: npt.NDArray[np.bool_] | None, step: int) -> None:
        places = len(avails)
        past = np.zeros((places, 0), dtype=np.bool_) if history is None else np.atleast_2d(history).astype(np.bool_)
        flags = np.hstack([past, avails])
        ends = np.zeros_like(flags)
        ends[:, 1:] = flags[:, :-1] & ~flags[:, 1:]
        zero = np.zeros((places, 1), dtype=np.int64)
        self.spot = np.concatenate([zero, np.cumsum(flags, axis=1)], axis=1)
        self.ends = np.concatenate([zero, np.cumsum(ends, axis=1)], axis=1)
        self.before, self.day, self.step = past.shape[1], max(1, RECORD_WINDOW_SECONDS // step), step
        self.now = avails

    def at(self, t: int) -> tuple[RegionRecord, ...]:
        end = self.before + t
        length = min(self.day, end)
        if not length:
            return tuple(RegionRecord(float(a[t]), 0.0) for a in self.now)
        spot = self.spot[:, end] - self.spot[:, end - length]
        ends = self.ends[:, end] - self.ends[:, end - length]
        hours = spot * self.step / 3600
        return tuple(
            RegionRecord(float(s) / length, float(e) / h if h else float(e) * 3600 / self.step, length * self.step)
            for s, e, h in zip(spot, ends, hours, strict=True)
        )


@dataclass(slots=True)
class _Run:
    """The mutable state of one simulation."""

    instance: Capacity = "none"
    """The instance that exists now."""
    request: Capacity = "none"
    """What the current attempt asks for."""
    region: int = 0
    checkpoint_region: int = 0
    copy_left: int = 0
    """Steps of a checkpoint copy still to go before the attempt is submitted."""
    overhead_left: int = 0
    checkpointed: int = 0
    unsaved: int = 0
    spot_steps: int = 0
    on_demand_steps: int = 0
    billed_overhead: dict[str, int] = field(default_factory=lambda: {"spot": 0, "on-demand": 0})
    preemptions: int = 0
    lost: int = 0
    switched_at: int | None = None
    first_submitted: int = -1
    attempt_submitted: int = 0
    attempt_started: int | None = None
    previous_waits: list[int] = field(default_factory=list)
    phase: Phase = "idle"
    phase_since: int = 0
    trained_in_attempt: int = 0
    preemptions_in_attempt: int = 0
    copies: int = 0
    regions: list[int] = field(default_factory=list)
    fresh: bool = False
    """The instance has not saved since it started (its first checkpoint is `job.first_checkpoint`)."""


def simulate(
    job: Job, available: npt.NDArray[np.bool_], policy: Policy, history: npt.NDArray[np.bool_] | None = None
) -> Outcome:
    """Run `policy` on one trace window: `available[t]` (one region) or `available[r, t]` (one row
    per region): spot capacity for the whole step t. `history` (the same rows, the steps before
    the job) feeds `View.records` from the start.

    Event-driven: between two events (the policy's wake-up, capacity found or lost, the end of a
    copy or a start-up, a checkpoint, completion) nothing changes, so whole stretches are applied
    at once. An attempt in another region than the latest checkpoint's first copies it
    (`job.copy` steps, `job.copy_cost`), then is submitted there.
    """
    horizon = job.deadline
    grid = np.atleast_2d(np.asarray(available, dtype=np.bool_))
    if grid.shape[1] < horizon:
        raise ValueError(f"the trace window has {grid.shape[1]} steps, the deadline needs {horizon}")
    avails = grid[:, :horizon]
    places = len(avails)
    next_on = [_next_index(a, True) for a in avails]
    next_off = [_next_index(a, False) for a in avails]
    changed = np.zeros(horizon, dtype=np.bool_)
    changed[1:] = np.any(avails[:, 1:] != avails[:, :-1], axis=0)
    next_change = _next_index(changed, True)
    sighting = max(1, SIGHTING_SECONDS // job.step_seconds)
    records = _FleetRecord(avails, history, job.step_seconds)

    after_acquire = math.ceil(STARTUP_AFTER_ACQUIRE_SECONDS / job.step_seconds - 1e-9)
    run = _Run()
    t, wake, event, decisions = 0, 0, True, 0
    finished: int | None = None

    def set_phase(phase: Phase) -> None:
        if run.phase != phase:
            run.phase, run.phase_since = phase, t

    def forget_unreached_start() -> None:
        if run.attempt_started is not None and run.attempt_started > t:
            run.attempt_started = None  # gone before SageMaker reported it started

    def save() -> None:
        run.checkpointed += run.unsaved
        run.unsaved, run.fresh = 0, False
        run.checkpoint_region = run.region

    def stop_instance() -> None:
        run.copy_left = 0
        if run.instance == "none":
            return
        forget_unreached_start()
        if run.unsaved:
            if job.checkpoint is not None:  # SIGTERM: the helper saves once more
                save()
            else:
                run.lost += run.unsaved
                run.unsaved = 0
        run.instance, run.overhead_left = "none", 0

    def submit() -> None:
        if run.first_submitted < 0:
            run.first_submitted = t
        elif run.attempt_started is not None:
            run.previous_waits.append(run.attempt_started - run.attempt_submitted)
        run.attempt_submitted, run.attempt_started = t, None
        run.trained_in_attempt = run.preemptions_in_attempt = 0
        run.regions.append(run.region)

    def start_instance(capacity: Capacity) -> None:
        run.instance, run.overhead_left, run.fresh = capacity, job.overhead, True
        if capacity == "on-demand" and run.switched_at is None:
            run.switched_at = t
        set_phase("starting" if job.overhead else "training")
        if run.attempt_started is None:  # TrainingStartTime; the last 10 minutes of start-up follow it
            run.attempt_started = t + max(0, job.overhead - after_acquire)

    def start_or_wait() -> None:
        if run.request == "on-demand" or avails[run.region, t]:
            start_instance(run.request)
        else:
            set_phase("waiting")

    def apply(command: Command) -> None:
        wanted = command.capacity
        region = run.region if command.region is None else command.region
        if not 0 <= region < places:
            raise ValueError(f"region {region} is not one of the {places} simulated")
        if wanted == run.request and region == run.region:
            return
        stop_instance()
        run.request, run.region = wanted, region
        if wanted == "none":
            set_phase("idle")
            return
        submit()
        if run.checkpointed and run.checkpoint_region != region and job.copy:
            run.copy_left = job.copy
            run.copies += 1
            set_phase("copying")
            return
        if run.checkpointed:
            run.copies += run.checkpoint_region != region
            run.checkpoint_region = region
        start_or_wait()

    while t < horizon:
        avail = avails[run.region]
        if t and changed[t]:
            event = True  # capacity came or went (heard only by policies that want events)
        if run.instance == "spot" and not avail[t]:  # reclaimed: the work since the last checkpoint is lost
            run.lost += run.unsaved
            run.unsaved, run.instance, run.overhead_left = 0, "none", 0
            forget_unreached_start()
            run.preemptions += 1
            run.preemptions_in_attempt += 1
            set_phase("interrupted")
            event = True
        if run.instance == "none" and run.request == "spot" and not run.copy_left and avail[t]:
            start_instance("spot")
            event = True
        if t >= wake or (event and policy.wakes_on_events):
            started = run.attempt_started if run.attempt_started is not None and run.attempt_started <= t else None
            seen = t - t % sighting
            command = policy.decide(
                View(
                    t=t,
                    job=job,
                    capacity=run.request,
                    phase=run.phase,
                    checkpointed=run.checkpointed,
                    spot_available=bool(avail[t]),
                    first_submitted=max(run.first_submitted, 0),
                    attempt_submitted=run.attempt_submitted,
                    attempt_started=started,
                    previous_waits=tuple(run.previous_waits),
                    phase_since=run.phase_since,
                    trained_in_attempt=run.trained_in_attempt,
                    preemptions_in_attempt=run.preemptions_in_attempt,
                    region=run.region,
                    checkpoint_region=run.checkpoint_region,
                    regions_available=tuple(bool(a[t]) for a in avails),
                    sighted=tuple(bool(a[seen]) for a in avails),
                    records=records.at(seen) if places > 1 else (),
                )
            )
            decisions += 1
            apply(command)
            wake = NEVER if command.wake_at is None else max(command.wake_at, t + 1)
            avail = avails[run.region]
        event = False
        # How long nothing changes.
        span = min(horizon, wake) - t
        if policy.wakes_on_events:
            span = min(span, int(next_change[t + 1]) - t if t + 1 < horizon else span)
        if run.copy_left:
            span = min(span, run.copy_left)
        elif run.instance == "spot":
            span = min(span, int(next_off[run.region][t]) - t)
        elif run.instance == "none" and run.request == "spot":
            span = min(span, int(next_on[run.region][t]) - t)
        if run.instance != "none":
            if run.overhead_left:
                span = min(span, run.overhead_left)
            else:
                span = min(span, job.work - run.checkpointed - run.unsaved)
                interval = job.interval(run.fresh)
                if interval is not None:
                    span = min(span, interval - run.unsaved)
        span = max(span, 1)
        if run.copy_left:
            run.copy_left -= span
            t += span
            if not run.copy_left:
                run.checkpoint_region = run.region
                if t < horizon:
                    start_or_wait()
                event = True
            continue
        if run.instance != "none" and run.overhead_left:
            billed = job.billed_start  # the last steps of the start-up
            run.billed_overhead[run.instance] += min(run.overhead_left, billed) - min(run.overhead_left - span, billed)
            run.overhead_left -= span
            if run.overhead_left == 0:
                t += span
                set_phase("training")
                event = True
                continue
        elif run.instance != "none":
            if run.instance == "spot":
                run.spot_steps += span
            else:
                run.on_demand_steps += span
            run.unsaved += span
            run.trained_in_attempt += span
            if run.checkpointed + run.unsaved >= job.work:
                finished = t + span
                run.checkpointed, run.unsaved = job.work, 0
                break
            interval = job.interval(run.fresh)
            if interval is not None and run.unsaved >= interval:
                save()
                event = True
        t += span
    spot = run.spot_steps + run.billed_overhead["spot"]
    on_demand = run.on_demand_steps + run.billed_overhead["on-demand"]
    return Outcome(
        policy=policy.name,
        cost=(spot * job.spot_price + on_demand * job.on_demand_price) * job.step_hours + run.copies * job.copy_cost,
        finished_at=finished,
        met=finished is not None and finished <= job.deadline,
        spot_steps=run.spot_steps,
        on_demand_steps=run.on_demand_steps,
        preemptions=run.preemptions,
        lost_steps=run.lost,
        switched_at=run.switched_at,
        decisions=decisions,
        reason=str(getattr(policy, "reason", "")),
        moves=sum(1 for a, b in zip(run.regions, run.regions[1:], strict=False) if a != b),
        copies=run.copies,
        regions=tuple(run.regions),
    )
