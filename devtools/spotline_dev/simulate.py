"""`spotline simulate`: Spotline's deadline policy on real spot behaviour, against what users
would otherwise do and against the best any policy could possibly do.

**The model** (one training job on one availability trace, in whole steps of `step_seconds`):

- The job needs `W` of compute and must finish by its deadline `D` (both from its submission).
- Every start of an instance, spot or on-demand, first spends the restart overhead `d`
  (provisioning, image and data download, restore) before training progresses; a spot start
  needs capacity for every step of it, and waits for capacity when there is none (as managed
  spot training does).
- Training writes a checkpoint every `c` of training since it (re)started. A spot preemption
  loses the work since the last one; a stop the workflow asks for (StopTrainingJob: SIGTERM)
  saves first, as Spotline's checkpoint helper does. Without checkpoints any stop or preemption
  sends the job back to zero.
- Money: a training step costs the on-demand price on on-demand and `SPOT_PRICE_RATIO` of it on
  spot. The restart overhead costs time, not money, unless `overhead_billed` (SageMaker does not
  bill the queueing and provisioning that make up most of it), so on-demand from the start costs
  exactly `W` x the on-demand price. Costs are in on-demand hours (on-demand price = 1).
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

**Policies** (`POLICIES`):

- `on-demand`: on-demand from the start.
- `spot-no-ckpt`: spot for as long as it takes, no checkpoints, no fallback (what the product
  exists to prevent); `spot-ckpt`: the same with checkpoints.
- `greedy`: spot (waiting out gaps) until the last safe moment, then on-demand for good.
- `uniform`: Uniform Progress as in Wu et al., "Can't Be Late", NSDI 2024 (`UniformProgress`).
- `spotline`: the production policy, `spotline.core.policy.decide(JobClock(...))` then
  `spotline.core.lifecycle.next_step`, with the status and the clock built as the CheckTrainingStatus
  Lambda builds them (`spotline.aws.checking`: progress = checkpointed progress as progress.json
  says, `spot_missing`, restart overhead = the longest measured wait for instances + 10 minutes),
  asked at the Lambda's cadence: `FIRST_POLL_SECONDS` after the submission, then
  `spotline.core.polling.next_poll_seconds`. It never sees spot capacity directly. Spot endings
  (MaxWaitTimeExceeded, capacity errors) are not modelled: a spot attempt waits for capacity as
  managed spot does within MaxWait (2 x maxRuntime by default, past every deadline here), so
  `next_step` answers keep-waiting or switch-to-on-demand, never resubmit.

The baselines see the same checkpointed progress and the true restart overhead, decide at every
step (and at every event), and look at spot capacity whenever they like, as in the paper's
simulator: advantages Spotline does not have.

**The offline optimum** (`optimal_costs`) knows the whole trace: a dynamic program over (time,
progress, mode), vectorized over progress and start offsets, gives the least cost of finishing
by every deadline at once. Knowing the future it never needs to lose work (it stops before a
preemption), so it is a lower bound on the cost of any run that meets its deadline. A deadline
is *feasible* when the optimum can meet it.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from spotline.aws.checking import STARTUP_AFTER_ACQUIRE_SECONDS, is_spot_missing, restart_overhead
from spotline.core.lifecycle import next_step
from spotline.core.model import JobSpec
from spotline.core.policy import DEFAULT_RESTART_OVERHEAD_SECONDS, JobClock, decide
from spotline.core.polling import next_poll_seconds
from spotline.core.status import State, TrainingStatus
from spotline_dev.traces import DEFAULT_TRACES_DIR, REPO_ROOT, Trace, all_traces, read_logs

SPOT_PRICE_RATIO = 0.3
"""Spot price / on-demand price (source in the module docstring)."""
FIRST_POLL_SECONDS = 60
"""SubmitTrainingJob's firstPollSeconds (functions/submit_training_job/app.py)."""
DEFAULT_STEP_SECONDS = 60
DEFAULT_OVERHEAD_SECONDS = int(DEFAULT_RESTART_OVERHEAD_SECONDS)
"""Spotline's own restart estimate before anything is measured (20 minutes)."""
DEFAULT_CHECKPOINT_SECONDS = 15 * 60
"""The manifest default, checkpoint.intervalMinutes = 15."""
HOUR = 3600.0
NEVER = 1 << 62

Capacity = Literal["spot", "on-demand", "none"]
Phase = Literal["idle", "waiting", "interrupted", "starting", "training"]


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

    def __post_init__(self) -> None:
        if self.work <= 0 or self.deadline <= 0 or self.overhead < 0 or self.step_seconds <= 0:
            raise ValueError("work, deadline and step must be positive, the overhead not negative")
        if self.checkpoint is not None and self.checkpoint <= 0:
            raise ValueError("the checkpoint interval must be positive (None: no checkpoints)")
        if self.declared_work is not None and self.declared_work <= 0:
            raise ValueError("the declared work must be positive")

    @property
    def declared(self) -> int:
        return self.work if self.declared_work is None else self.declared_work

    @property
    def step_hours(self) -> float:
        return self.step_seconds / HOUR

    @property
    def on_demand_cost(self) -> float:
        """On-demand from the start: the work at the on-demand price (plus one start if billed)."""
        billed = self.overhead if self.overhead_billed else 0
        return (self.work + billed) * self.on_demand_price * self.step_hours

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
    ) -> Job:
        """Work and overhead round up to whole steps, the deadline down (never in the job's
        favour). With `work_error` the job really needs `work x (1 + work_error)`; policies are
        told `work`."""
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


@dataclass(slots=True)
class _Run:
    """The mutable state of one simulation."""

    instance: Capacity = "none"
    """The instance that exists now."""
    request: Capacity = "none"
    """What the current attempt asks for."""
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


def simulate(job: Job, available: npt.NDArray[np.bool_], policy: Policy) -> Outcome:
    """Run `policy` on one trace window (`available[t]`: spot capacity for the whole step t).

    Event-driven: between two events (the policy's wake-up, capacity found or lost, the end of a
    start-up, a checkpoint, completion) nothing changes, so whole stretches are applied at once.
    """
    horizon = job.deadline
    if len(available) < horizon:
        raise ValueError(f"the trace window has {len(available)} steps, the deadline needs {horizon}")
    avail = np.asarray(available[:horizon], dtype=np.bool_)
    next_on, next_off = _next_index(avail, True), _next_index(avail, False)
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

    def stop_instance() -> None:
        if run.instance == "none":
            return
        forget_unreached_start()
        if run.unsaved:
            if job.checkpoint is not None:  # SIGTERM: the helper saves once more
                run.checkpointed += run.unsaved
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

    def start_instance(capacity: Capacity) -> None:
        run.instance, run.overhead_left = capacity, job.overhead
        if capacity == "on-demand" and run.switched_at is None:
            run.switched_at = t
        set_phase("starting" if job.overhead else "training")
        if run.attempt_started is None:  # TrainingStartTime; the last 10 minutes of start-up follow it
            run.attempt_started = t + max(0, job.overhead - after_acquire)

    def apply(command: Command) -> None:
        wanted = command.capacity
        if wanted == run.request:
            return
        stop_instance()
        run.request = wanted
        if wanted == "none":
            set_phase("idle")
            return
        submit()
        if wanted == "on-demand" or avail[t]:
            start_instance(wanted)
        else:
            set_phase("waiting")

    while t < horizon:
        if t and avail[t] != avail[t - 1]:
            event = True  # capacity came or went (heard only by policies that want events)
        if run.instance == "spot" and not avail[t]:  # reclaimed: the work since the last checkpoint is lost
            run.lost += run.unsaved
            run.unsaved, run.instance, run.overhead_left = 0, "none", 0
            forget_unreached_start()
            run.preemptions += 1
            run.preemptions_in_attempt += 1
            set_phase("interrupted")
            event = True
        if run.instance == "none" and run.request == "spot" and avail[t]:
            start_instance("spot")
            event = True
        if t >= wake or (event and policy.wakes_on_events):
            started = run.attempt_started if run.attempt_started is not None and run.attempt_started <= t else None
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
                )
            )
            decisions += 1
            apply(command)
            wake = NEVER if command.wake_at is None else max(command.wake_at, t + 1)
        event = False
        # How long nothing changes.
        span = min(horizon, wake) - t
        if policy.wakes_on_events:
            span = min(span, int(next_off[t] if avail[t] else next_on[t]) - t)
        if run.instance == "spot":
            span = min(span, int(next_off[t]) - t)
        elif run.instance == "none" and run.request == "spot":
            span = min(span, int(next_on[t]) - t)
        if run.instance != "none":
            if run.overhead_left:
                span = min(span, run.overhead_left)
            else:
                span = min(span, job.work - run.checkpointed - run.unsaved)
                if job.checkpoint is not None:
                    span = min(span, job.checkpoint - run.unsaved)
        span = max(span, 1)
        if run.instance != "none" and run.overhead_left:
            run.overhead_left -= span
            if job.overhead_billed:
                run.billed_overhead[run.instance] += span
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
            if job.checkpoint is not None and run.unsaved >= job.checkpoint:
                run.checkpointed += run.unsaved
                run.unsaved = 0
                event = True
        t += span
    spot = run.spot_steps + run.billed_overhead["spot"]
    on_demand = run.on_demand_steps + run.billed_overhead["on-demand"]
    return Outcome(
        policy=policy.name,
        cost=(spot * job.spot_price + on_demand * job.on_demand_price) * job.step_hours,
        finished_at=finished,
        met=finished is not None and finished <= job.deadline,
        spot_steps=run.spot_steps,
        on_demand_steps=run.on_demand_steps,
        preemptions=run.preemptions,
        lost_steps=run.lost,
        switched_at=run.switched_at,
        decisions=decisions,
        reason=str(getattr(policy, "reason", "")),
    )


# --- the policies ----------------------------------------------------------------------------


class OnDemandOnly:
    name = "on-demand"
    wakes_on_events = False

    def decide(self, view: View) -> Command:
        return Command("on-demand")


class SpotOnly:
    """Spot for as long as it takes, no fallback (with or without checkpoints: the job says)."""

    wakes_on_events = False

    def __init__(self, name: str = "spot-ckpt") -> None:
        self.name = name

    def decide(self, view: View) -> Command:
        return Command("spot")


class Greedy:
    """Spot (waiting out gaps) until the last safe moment, then on-demand for good: the moment the
    time left is down to the remaining work plus one restart overhead."""

    name = "greedy"
    wakes_on_events = True

    def __init__(self) -> None:
        self.locked = False

    def decide(self, view: View) -> Command:
        job = view.job
        last_safe = math.ceil(job.deadline - view.remaining - job.overhead - 1e-9)
        if self.locked or view.t >= last_safe:
            self.locked = True
            return Command("on-demand")
        return Command("spot", last_safe)


class UniformProgress:
    """Uniform Progress (Wu et al., "Can't Be Late", NSDI 2024): the paper's rules on the line
    ep(t) = W t / D from the job's start to its deadline, with checkpointed progress cp:

    1. idle (spot missing) and cp < ep(t): on-demand, to catch up;
    2. spot available: spot, even when behind (kept until preempted);
    3. on on-demand: stay until cp >= ep(t + 2d), then back to spot if it is available;
    4. safety net: idle and the time left < remaining work + 2d: on-demand to the end.

    Plus the last-safe-moment guard of the authors' simulator (on-demand to the end once the time
    left is down to the remaining work + d, whatever the state), so it cannot miss by design.
    """

    name = "uniform"
    wakes_on_events = True

    def __init__(self) -> None:
        self.locked = False
        self.on_demand = False

    def decide(self, view: View) -> Command:
        job, t = view.job, view.t
        deadline, d = job.deadline, job.overhead
        cp, work = view.checkpointed, job.work  # cp / work: the fraction done, as progress.json says
        remaining = view.remaining
        idle = view.phase in ("idle", "waiting", "interrupted")
        last_safe = math.ceil(deadline - remaining - d - 1e-9)
        if self.locked or t >= last_safe or (idle and deadline - t < remaining + 2 * d):
            self.locked = True
            return Command("on-demand")
        if self.on_demand:
            if view.spot_available and cp * deadline >= work * (t + 2 * d):  # cp >= ep(t + 2d)
                self.on_demand = False
        elif not view.spot_available and cp * deadline < work * t:  # cp < ep(t)
            self.on_demand = True
        # When a rule may change its answer without an event: the line passing cp, the safety net
        # and the last safe moment.
        line_passes = (cp * deadline) // work + 1
        net = math.floor(deadline - remaining - 2 * d + 1e-9) + 1
        wake = min(x for x in (line_passes, net, last_safe, NEVER) if x > t)
        return Command("on-demand" if self.on_demand else "spot", wake)


_STATE_OF_PHASE: dict[Phase, State] = {
    "idle": "queued",
    "waiting": "starting",  # SageMaker "Starting": insufficient capacity, retrying
    "starting": "starting",
    "training": "training",
    "interrupted": "interrupted",
}


def _spec(job: Job, deadline: datetime) -> JobSpec:
    """The smallest spot-first manifest; next_step reads its strategy and retry settings."""
    return JobSpec(
        team="simulate",
        name="job",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/simulate:1",
        role_arn="arn:aws:iam::123456789012:role/simulate",
        instance_type="ml.p3.2xlarge",
        inputs=(),
        output_s3_uri="s3://simulate/output/",
        strategy="spot-first",
        checkpoint_s3_uri=None if job.checkpoint is None else "s3://simulate/checkpoints/",
        checkpoint_interval_minutes=max(1, round((job.checkpoint or 15) * job.step_seconds / 60)),
        expected_duration_seconds=job.declared * job.step_seconds,
        max_runtime_seconds=max(job.work, job.declared) * job.step_seconds,
        deadline=deadline.isoformat(),
    )


class SpotlinePolicy:
    """The production policy through the CheckTrainingStatus Lambda's interface: at each check,
    the normalized status the Lambda would see, `JobClock` as `spotline.aws.checking.check` builds it,
    `decide`, `next_step`, and `next_poll_seconds` for the next check."""

    name = "spotline"
    wakes_on_events = False

    def __init__(self, job: Job, start: datetime, seed: str = "simulate") -> None:
        self.job, self.start, self.seed = job, start, seed
        self.deadline = start + timedelta(seconds=job.deadline * job.step_seconds)
        self.spec = _spec(job, self.deadline)
        self.reason = ""
        self.clocks: list[JobClock] = []
        """Every clock the policy was asked about, in order (for tests and reports)."""

    def _at(self, step: int) -> datetime:
        return self.start + timedelta(seconds=step * self.job.step_seconds)

    def _steps(self, seconds: float) -> int:
        return max(1, math.ceil(seconds / self.job.step_seconds - 1e-9))

    def decide(self, view: View) -> Command:
        if view.capacity == "none":  # SubmitTrainingJob (spot-first), then WaitForJobToStart
            return Command("spot", view.t + self._steps(FIRST_POLL_SECONDS))
        if view.capacity == "on-demand":  # decide() answers "continue" on on-demand: nothing left to ask
            return Command("on-demand")
        step = self.job.step_seconds
        now = self._at(view.t)
        started_at = None if view.attempt_started is None else self._at(view.attempt_started)
        status = TrainingStatus(
            state=_STATE_OF_PHASE[view.phase],
            reason_class=None,
            reason=view.phase,
            batch_status="RUNNING" if view.phase == "training" else "SCHEDULED",
            secondary_status=None,
            training_job_name=None,
            training_seconds=view.trained_in_attempt * step,
            billable_seconds=0,
            interruptions=view.preemptions_in_attempt,
            capacity_short=False,
            started_at=started_at,
            ended_at=None,
            state_since=self._at(view.phase_since),
        )
        # What spotline.aws.checking.check does with it:
        submitted = self._at(view.attempt_submitted)
        queue_wait = (status.started_at - submitted).total_seconds() if status.started_at else None
        previous = [{"finalStatus": {"queueWaitSeconds": wait * step}} for wait in view.previous_waits]
        overhead = restart_overhead(previous, queue_wait, "spot")
        since_submit = (now - submitted).total_seconds()
        spot_missing = is_spot_missing(status, since_submit, overhead)
        clock = JobClock(
            now=now,
            started_at=self._at(view.first_submitted),
            deadline=self.deadline,
            total_work_seconds=float(self.job.declared * step),
            progress=view.fraction_done,
            capacity="spot",
            spot_missing=spot_missing,
            restart_overhead_seconds=overhead,
        )
        self.clocks.append(clock)
        decision = decide(clock)
        action = next_step(self.spec, status, capacity="spot", spot_attempts=1, decision=decision, seed=self.seed)
        if action.action == "switch-to-on-demand":
            self.reason = decision.reason
            return Command("on-demand")
        interval = next_poll_seconds(
            status,
            seconds_since_submit=since_submit,
            expected_duration=self.spec.expected_duration_seconds,
            deadline_slack=decision.slack_seconds,
            seconds_in_state=(now - status.state_since).total_seconds() if status.state_since else None,
        )
        return Command("spot", view.t + self._steps(interval))


class Scripted:
    """Plays a fixed capacity per step, asked at every step (tests: every mode sequence)."""

    name = "scripted"
    wakes_on_events = False

    def __init__(self, capacities: Sequence[Capacity]) -> None:
        self.capacities = capacities

    def decide(self, view: View) -> Command:
        capacity = self.capacities[view.t] if view.t < len(self.capacities) else "none"
        return Command(capacity, view.t + 1)


PolicyFactory = Callable[[Job, datetime], Policy]


def _spotline(job: Job, start: datetime) -> Policy:
    return SpotlinePolicy(job, start)


POLICIES: dict[str, PolicyFactory] = {
    "on-demand": lambda job, start: OnDemandOnly(),
    "spot-no-ckpt": lambda job, start: SpotOnly("spot-no-ckpt"),
    "spot-ckpt": lambda job, start: SpotOnly("spot-ckpt"),
    "greedy": lambda job, start: Greedy(),
    "uniform": lambda job, start: UniformProgress(),
    "spotline": _spotline,
}
"""Every online policy of the table by name (`spot-no-ckpt` runs its job without checkpoints)."""


def run_policy(name: str, job: Job, available: npt.NDArray[np.bool_], start: datetime) -> Outcome:
    if name == "spot-no-ckpt":
        job = replace(job, checkpoint=None)
    return simulate(job, available, POLICIES[name](job, start))


# --- the offline optimum ---------------------------------------------------------------------


def optimal_costs(job: Job, available: npt.NDArray[np.bool_], horizon: int | None = None) -> npt.NDArray[np.float64]:
    """The least cost of having finished the job by each step 0..horizon, knowing the trace.

    `available` is one trace window (T,) or a batch of them (B, T); the result is (horizon + 1,)
    or (B, horizon + 1), `inf` where no schedule can finish in time. Read the column of any
    deadline up to `horizon` (default: the job's deadline).

    A forward dynamic program over (time, progress, mode), vectorized over progress and the
    batch. At a step a job is idle (no instance), or on spot or on-demand with an instance past
    its start-up. Moves: stop (free); start spot (needs capacity for the whole start-up) or
    on-demand, arriving `d` steps later ready to train; train a step (on spot only with capacity:
    a spot instance without capacity is gone). Nothing is ever lost: with the trace known,
    stopping before a preemption does as well as any checkpoint, so no run can be cheaper.
    """
    flags = np.atleast_2d(np.asarray(available, dtype=np.bool_))
    batch, length = flags.shape
    steps = job.deadline if horizon is None else horizon
    if length < steps:
        raise ValueError(f"the trace window has {length} steps, the horizon needs {steps}")
    work, d = job.work, job.overhead
    spot_step, od_step = job.spot_price * job.step_hours, job.on_demand_price * job.step_hours
    spot_start = d * spot_step if job.overhead_billed else 0.0
    od_start = d * od_step if job.overhead_billed else 0.0
    inf = np.inf
    idle = np.full((batch, work + 1), inf)
    idle[:, 0] = 0.0
    spot = np.full_like(idle, inf)
    ondemand = np.full_like(idle, inf)
    slots = d + 1  # arrivals of starts in flight, by arrival step modulo d + 1
    arriving_spot = np.full((slots, batch, work + 1), inf)
    arriving_od = np.full_like(arriving_spot, inf)
    if d > 0:  # a spot start at t needs capacity in steps t .. t+d-1
        counts = np.concatenate([np.zeros((batch, 1), dtype=np.int64), np.cumsum(flags, axis=1)], axis=1)
        starts = np.arange(length)
        fits = starts + d <= length
        can_start = np.zeros((batch, length), dtype=np.bool_)
        can_start[:, fits] = counts[:, starts[fits] + d] - counts[:, starts[fits]] == d
    done = np.full((batch, steps + 1), inf)
    for t in range(steps + 1):
        if d > 0:
            slot = t % slots
            np.minimum(spot, arriving_spot[slot], out=spot)
            np.minimum(ondemand, arriving_od[slot], out=ondemand)
            arriving_spot[slot] = inf
            arriving_od[slot] = inf
        if t < steps:
            gone = ~flags[:, t]
            if gone.any():
                idle[gone] = np.minimum(idle[gone], spot[gone])
                spot[gone] = inf
        best = np.minimum(np.minimum(idle, spot), ondemand)
        done[:, t] = best[:, work]
        if t == steps:
            break
        if d > 0:
            target = (t + d) % slots
            starters = can_start[:, t]
            if starters.any():
                landing = arriving_spot[target]
                landing[starters] = np.minimum(landing[starters], best[starters] + spot_start)
            np.minimum(arriving_od[target], best + od_start, out=arriving_od[target])
        else:
            here = flags[:, t]
            spot[here] = np.minimum(spot[here], best[here])
            ondemand = np.minimum(ondemand, best)
        next_spot = np.full_like(spot, inf)
        next_spot[:, 1:] = spot[:, :-1] + spot_step
        next_od = np.full_like(ondemand, inf)
        next_od[:, 1:] = ondemand[:, :-1] + od_step
        idle, spot, ondemand = best, next_spot, next_od
    result: npt.NDArray[np.float64] = np.minimum.accumulate(done, axis=1)
    return result[0] if np.ndim(available) == 1 else result


# --- the grid --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GridSpec:
    work_hours: tuple[float, ...] = (4.0, 8.0, 16.0)
    slacks: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    """Deadline = work x (1 + slack) after the submission."""
    start_every_hours: float = 6.0
    """Jobs start 0h, 6h, 12h, ... into each trace, as long as the loosest deadline still fits."""
    overhead_seconds: float = DEFAULT_OVERHEAD_SECONDS
    checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS
    step_seconds: int = DEFAULT_STEP_SECONDS
    spot_price_ratio: float = SPOT_PRICE_RATIO
    overhead_billed: bool = False
    work_error: float = 0.0
    """Jobs really need work x (1 + work_error); every policy is told the work (expectedDuration)."""
    policies: tuple[str, ...] = tuple(POLICIES)

    def job(self, work_hours: float, slack: float) -> Job:
        return Job.from_seconds(
            work=work_hours * HOUR,
            deadline=work_hours * (1 + slack) * HOUR,
            overhead=self.overhead_seconds,
            checkpoint=self.checkpoint_seconds,
            step_seconds=self.step_seconds,
            spot_price_ratio=self.spot_price_ratio,
            overhead_billed=self.overhead_billed,
            work_error=self.work_error,
        )

    def starts(self, trace: Trace, work_hours: float) -> list[float]:
        """Start offsets (hours into the trace) at which the loosest deadline still fits."""
        span = trace.duration_seconds / HOUR - work_hours * (1 + max(self.slacks))
        if span < 0:
            return []
        return [k * self.start_every_hours for k in range(int(span // self.start_every_hours) + 1)]

    def describe(self, traces: int) -> str:
        works = ", ".join(f"{w:g}h" for w in self.work_hours)
        slacks = f"{100 * min(self.slacks):g}-{100 * max(self.slacks):g}%"
        text = (
            f"{traces} traces x work {works} x slack {slacks} x a start every {self.start_every_hours:g}h; "
            f"restart {self.overhead_seconds / 60:g}m, checkpoint every {self.checkpoint_seconds / 60:g}m, "
            f"spot at {self.spot_price_ratio:g} x on-demand"
        )
        if self.work_error:
            text += f", jobs {100 * self.work_error:+g}% longer than declared"
        return text


@dataclass(frozen=True, slots=True)
class Row:
    """One policy on one instance (trace, start, work, slack)."""

    trace: str
    source: str
    start_hours: float
    work_hours: float
    slack: float
    deadline_hours: float
    policy: str
    cost: float
    """In on-demand hours (on-demand price = 1)."""
    on_demand_cost: float
    optimum: float
    """`inf` when no policy can meet the deadline."""
    met: bool
    finished_hours: float | None
    spot_hours: float
    on_demand_hours: float
    preemptions: int
    lost_hours: float
    switched_at_hours: float | None
    reason: str

    @property
    def feasible(self) -> bool:
        return math.isfinite(self.optimum)

    @property
    def vs_on_demand(self) -> float:
        return self.cost / self.on_demand_cost

    @property
    def vs_optimum(self) -> float:
        return self.cost / self.optimum if self.feasible and self.optimum > 0 else math.nan


def run_cell(trace: Trace, grid: GridSpec, work_hours: float) -> list[Row]:
    """Every start, slack and policy for one trace and one job length (one optimum computation)."""
    starts = grid.starts(trace, work_hours)
    if not starts:
        return []
    loosest = grid.job(work_hours, max(grid.slacks))
    windows = np.stack([trace.availability(grid.step_seconds, s * HOUR, loosest.deadline) for s in starts])
    best = optimal_costs(loosest, windows, horizon=loosest.deadline)
    hours = grid.step_seconds / HOUR
    rows: list[Row] = []
    for i, start_hours in enumerate(starts):
        start = trace.start + timedelta(hours=start_hours)
        for slack in grid.slacks:
            job = grid.job(work_hours, slack)
            window = windows[i, : job.deadline]
            for name in grid.policies:
                outcome = run_policy(name, job, window, start)
                rows.append(
                    Row(
                        trace=trace.label,
                        source=trace.source,
                        start_hours=start_hours,
                        work_hours=work_hours,
                        slack=slack,
                        deadline_hours=job.deadline * hours,
                        policy=name,
                        cost=outcome.cost,
                        on_demand_cost=job.on_demand_cost,
                        optimum=float(best[i, job.deadline]),
                        met=outcome.met,
                        finished_hours=None if outcome.finished_at is None else outcome.finished_at * hours,
                        spot_hours=outcome.spot_steps * hours,
                        on_demand_hours=outcome.on_demand_steps * hours,
                        preemptions=outcome.preemptions,
                        lost_hours=outcome.lost_steps * hours,
                        switched_at_hours=None if outcome.switched_at is None else outcome.switched_at * hours,
                        reason=outcome.reason,
                    )
                )
    return rows


def _run_cell(args: tuple[Trace, GridSpec, float]) -> list[Row]:
    return run_cell(*args)


def run_grid(traces: Sequence[Trace], grid: GridSpec, workers: int = 1) -> list[Row]:
    """Rows in a fixed order (trace, work, start, slack, policy), whatever the number of workers."""
    cells = [(trace, grid, work) for trace in traces for work in grid.work_hours]
    if workers <= 1 or len(cells) <= 1:
        return [row for cell in cells for row in run_cell(*cell)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return [row for rows in pool.map(_run_cell, cells) for row in rows]


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


# --- the report ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Summary:
    """One policy over the grid: costs over the feasible instances, misses over all of them."""

    policy: str
    runs: int
    feasible: int
    mean_vs_on_demand: float
    worst_vs_on_demand: float
    mean_vs_optimum: float
    """Mean of the per-instance ratios cost / optimum."""
    worst_vs_optimum: float
    bill_vs_optimum: float
    """Sum of costs over the sum of optimal costs: the whole grid's bill against the best one."""
    missed: int
    missed_feasible: int

    @property
    def miss_rate(self) -> float:
        return self.missed / self.runs if self.runs else math.nan


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def summarize(rows: Iterable[Row], policies: Sequence[str] | None = None) -> list[Summary]:
    by_policy: dict[str, list[Row]] = {}
    for row in rows:
        by_policy.setdefault(row.policy, []).append(row)
    out: list[Summary] = []
    for name in list(policies) if policies is not None else list(by_policy):
        group = by_policy.get(name, [])
        feasible = [r for r in group if r.feasible]
        best = sum(r.optimum for r in feasible)
        out.append(
            Summary(
                policy=name,
                runs=len(group),
                feasible=len(feasible),
                mean_vs_on_demand=_mean([r.vs_on_demand for r in feasible]),
                worst_vs_on_demand=max((r.vs_on_demand for r in feasible), default=math.nan),
                mean_vs_optimum=_mean([r.vs_optimum for r in feasible]),
                worst_vs_optimum=max((r.vs_optimum for r in feasible), default=math.nan),
                bill_vs_optimum=sum(r.cost for r in feasible) / best if best > 0 else math.nan,
                missed=sum(1 for r in group if not r.met),
                missed_feasible=sum(1 for r in feasible if not r.met),
            )
        )
    return out


def optimum_summary(rows: Iterable[Row]) -> Summary:
    """The offline optimum as a line of the table (it misses exactly the infeasible deadlines)."""
    instances: dict[tuple[str, float, float, float], Row] = {}
    for row in rows:
        instances.setdefault((row.trace, row.start_hours, row.work_hours, row.slack), row)
    feasible = [r for r in instances.values() if r.feasible]
    ratios = [r.optimum / r.on_demand_cost for r in feasible]
    return Summary(
        policy="optimum",
        runs=len(instances),
        feasible=len(feasible),
        mean_vs_on_demand=_mean(ratios),
        worst_vs_on_demand=max(ratios, default=math.nan),
        mean_vs_optimum=1.0,
        worst_vs_optimum=1.0,
        bill_vs_optimum=1.0,
        missed=len(instances) - len(feasible),
        missed_feasible=0,
    )


def format_table(summaries: Sequence[Summary]) -> str:
    head = (
        f"{'policy':<13} {'runs':>5} {'mean/OD':>8} {'worst/OD':>8} {'mean/opt':>8} {'worst/opt':>9} "
        f"{'bill/opt':>8} {'missed':>7} {'miss rate':>9} {'missed feasible':>15}"
    )
    lines = [head, "-" * len(head)]
    for s in summaries:
        lines.append(
            f"{s.policy:<13} {s.runs:>5} {s.mean_vs_on_demand:>8.3f} {s.worst_vs_on_demand:>8.3f} "
            f"{s.mean_vs_optimum:>8.3f} {s.worst_vs_optimum:>9.3f} {s.bill_vs_optimum:>8.3f} "
            f"{s.missed:>7} {100 * s.miss_rate:>8.1f}% {s.missed_feasible:>15}"
        )
    return "\n".join(lines)


def by_slack(rows: Iterable[Row]) -> dict[str, dict[float, tuple[float, float]]]:
    """policy -> slack -> (mean cost / optimum, miss rate), over the feasible instances."""
    groups: dict[str, dict[float, list[Row]]] = {}
    for row in rows:
        if row.feasible:
            groups.setdefault(row.policy, {}).setdefault(row.slack, []).append(row)
    return {
        policy: {
            slack: (_mean([r.vs_optimum for r in group]), sum(not r.met for r in group) / len(group))
            for slack, group in sorted(per_slack.items())
        }
        for policy, per_slack in groups.items()
    }


def slack_table(rows: Sequence[Row], policies: Sequence[str]) -> str:
    """Mean cost / optimum by slack, a column per policy: the plot's left panel as text."""
    curves = by_slack(rows)
    lines = [f"{'slack':>6} " + " ".join(f"{p:>12}" for p in policies)]
    for slack in sorted({s for per in curves.values() for s in per}):
        cells = [curves.get(p, {}).get(slack) for p in policies]
        lines.append(f"{100 * slack:>5g}% " + " ".join(f"{c[0]:>12.3f}" if c else f"{'':>12}" for c in cells))
    return "\n".join(lines)


CSV_FIELDS = (
    "trace",
    "source",
    "start_hours",
    "work_hours",
    "slack",
    "deadline_hours",
    "policy",
    "cost",
    "on_demand_cost",
    "optimum",
    "vs_on_demand",
    "vs_optimum",
    "feasible",
    "met",
    "finished_hours",
    "spot_hours",
    "on_demand_hours",
    "preemptions",
    "lost_hours",
    "switched_at_hours",
    "reason",
)
SUMMARY_FIELDS = (
    "policy",
    "runs",
    "feasible",
    "mean_vs_on_demand",
    "worst_vs_on_demand",
    "mean_vs_optimum",
    "worst_vs_optimum",
    "bill_vs_optimum",
    "missed",
    "miss_rate",
    "missed_feasible",
)


def _csv_value(value: object) -> object:
    if isinstance(value, float):
        return "" if math.isnan(value) else ("inf" if math.isinf(value) else f"{value:.6g}")
    return "" if value is None else value


def write_csv(records: Iterable[object], fields: Sequence[str], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(fields)
        for record in records:
            writer.writerow([_csv_value(getattr(record, name)) for name in fields])


PLOT_STYLE: dict[str, tuple[str, str]] = {
    "on-demand": ("#7f7f7f", "-"),
    "spot-no-ckpt": ("#d62728", ":"),
    "spot-ckpt": ("#ff7f0e", ":"),
    "greedy": ("#2ca02c", "--"),
    "uniform": ("#9467bd", "--"),
    "spotline": ("#1f77b4", "-"),
}


def plot(rows: Sequence[Row], path: Path, title: str) -> None:
    """Mean cost / optimum against slack, a line per policy, and the deadline-miss rate beside it."""
    import matplotlib  # noqa: PLC0415 (only when plotting)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    curves = by_slack(rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.4), gridspec_kw={"width_ratios": [3, 2]})
    never_missed = []
    for policy, per_slack in curves.items():
        color, style = PLOT_STYLE.get(policy, ("black", "-"))
        xs = [100 * s for s in per_slack]
        width = 2.8 if policy == "spotline" else 1.6
        costs = [v[0] for v in per_slack.values()]
        misses = [100 * v[1] for v in per_slack.values()]
        left.plot(xs, costs, style, color=color, lw=width, marker="o", ms=3.5, label=policy)
        right.plot(xs, misses, style, color=color, lw=width, marker="o", ms=3.5, label=policy)
        if not any(misses):
            never_missed.append(policy)
    left.axhline(1.0, color="black", lw=0.8)
    left.annotate("offline optimum", (0.01, 1.0), xycoords=("axes fraction", "data"), va="bottom", fontsize=8)
    left.set_yscale("log")
    ticks = [0.6, 0.8, 1, 1.15, 1.5, 2, 3]
    left.set_yticks(ticks, [f"{v:g}x" for v in ticks])
    left.minorticks_off()
    left.set_xlabel("deadline slack (% of the work)")
    left.set_ylabel("mean cost / offline optimum (log scale)")
    left.set_title(
        "Cost against the best possible (feasible deadlines;\na missed job counts what it paid until its deadline)"
    )
    left.grid(True, alpha=0.3)
    right.set_xlabel("deadline slack (% of the work)")
    right.set_ylabel("deadlines missed (%)")
    right.set_title("Deadlines missed")
    right.set_ylim(-3, 103)
    right.grid(True, alpha=0.3)
    right.legend(loc="upper right", frameon=False)
    if never_missed:
        right.annotate(f"none missed: {', '.join(never_missed)}", (0.02, 0.06), xycoords="axes fraction", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


@dataclass(frozen=True, slots=True)
class Report:
    rows: list[Row]
    summaries: list[Summary]
    runs_csv: Path
    summary_csv: Path
    png: Path | None
    seconds: float

    @property
    def table(self) -> str:
        return format_table(self.summaries)


def run(traces: Sequence[Trace], grid: GridSpec, out_dir: Path, *, workers: int = 1, with_plot: bool = True) -> Report:
    """The grid, its table, `runs.csv`, `summary.csv` and `cost_vs_slack.png` in `out_dir`."""
    began = time.perf_counter()
    rows = run_grid(traces, grid, workers=workers)
    summaries = [*summarize(rows, grid.policies), optimum_summary(rows)]
    out_dir.mkdir(parents=True, exist_ok=True)
    runs_csv, summary_csv = out_dir / "runs.csv", out_dir / "summary.csv"
    write_csv(rows, CSV_FIELDS, runs_csv)
    write_csv(summaries, SUMMARY_FIELDS, summary_csv)
    png = None
    if with_plot and rows:
        png = out_dir / "cost_vs_slack.png"
        plot(rows, png, grid.describe(len(traces)))
    return Report(rows, summaries, runs_csv, summary_csv, png, time.perf_counter() - began)


# --- the command -----------------------------------------------------------------------------

EXIT_OK, EXIT_USAGE = 0, 2
DEFAULT_OUT_DIR = REPO_ROOT / "out" / "simulate"


def grid_from_args(args: argparse.Namespace) -> GridSpec:
    return GridSpec(
        work_hours=tuple(float(w) for w in args.work_hours),
        slacks=tuple(float(s) / 100 for s in args.slack),
        start_every_hours=float(args.start_every_hours),
        overhead_seconds=float(args.overhead_minutes) * 60,
        checkpoint_seconds=float(args.checkpoint_minutes) * 60,
        step_seconds=int(args.step_seconds),
        spot_price_ratio=float(args.spot_price_ratio),
        overhead_billed=bool(args.bill_overhead),
        work_error=float(args.work_error) / 100,
    )


def main(args: argparse.Namespace) -> int:
    """`spotline simulate` (arguments from spotline_dev.cli)."""
    folder = Path(args.traces) if args.traces else DEFAULT_TRACES_DIR
    out_dir = Path(args.out) if args.out else DEFAULT_OUT_DIR
    try:
        grid = grid_from_args(args)
        if min(grid.work_hours) <= 0 or min(grid.slacks) <= 0 or grid.start_every_hours <= 0:
            raise ValueError("work hours, slack and --start-every-hours must be positive")
        results = read_logs(folder)
    except (ValueError, OSError) as exc:
        print(f"spotline simulate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    traces = all_traces(results)
    print(f"spot availability logs in {folder} (read in place):")
    for result in results:
        print(f"  {result.summary()}")
    instances = sum(len(grid.starts(t, w)) for t in traces for w in grid.work_hours) * len(grid.slacks)
    print(f"grid: {grid.describe(len(traces))}: {instances} jobs x {len(grid.policies)} policies")
    if not instances:
        print("spotline simulate: no job fits in these traces; try shorter --work-hours", file=sys.stderr)
        return EXIT_USAGE
    report = run(traces, grid, out_dir, workers=max(1, int(args.jobs or default_workers())), with_plot=not args.no_plot)
    print()
    print(report.table)
    print()
    print("mean cost / optimum by deadline slack (feasible deadlines):")
    print(slack_table(report.rows, grid.policies))
    print()
    print("mean/OD, worst/OD: cost against on-demand from the start; mean/opt, worst/opt: against the offline")
    print("optimum, per job; bill/opt: all costs over all optimal costs. Costs over feasible deadlines; a missed")
    print("job counts what it paid until its deadline.")
    written = [report.runs_csv, report.summary_csv, *([report.png] if report.png else [])]
    print(f"wrote {', '.join(str(p) for p in written)} in {report.seconds:.1f}s")
    return EXIT_OK
