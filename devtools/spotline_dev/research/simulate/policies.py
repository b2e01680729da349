"""The online policies the simulator replays: Spotline's production policy and the baselines.

**Policies** (`POLICIES`):

- `on-demand`: on-demand from the start.
- `spot-no-ckpt`: spot for as long as it takes, no checkpoints, no fallback (what the product
  exists to prevent); `spot-ckpt`: the same with checkpoints.
- `greedy`: spot (waiting out gaps) until the last safe moment, then on-demand for good.
- `uniform`: Uniform Progress as in Wu et al., "Can't Be Late", NSDI 2024 (`UniformProgress`).
- `declared`: the rule before issue 14, kept as a baseline: the production policy planning with
  the declared work (expectedDuration) and its 5 % margin throughout, as if progress.json
  recorded no training seconds.
- `ross`, `ross-hedged`: ROSS (arXiv 2601.14612), randomized: one run per seed
  (`spotline_dev.research.simulate.ross`, `RANDOMIZED`).
- `spotline`: the production policy: `spotline.core.capacity.assess.assess`, the function the
  CheckTrainingStatus Lambda calls, on an `Observation` built from the trace as the Lambda would
  read it (the normalized status; progress.json as the checkpoints left it; no queue ahead of it,
  no instance-type alternatives, no training plan), asked at the Lambda's cadence:
  `FIRST_POLL_SECONDS` after the submission, then at the assessment's next check, and at once
  when its spot job is interrupted (the SageMaker event TrainingEventGate turns into a wake-up).
  It never sees spot capacity directly. Spot endings (MaxWaitTimeExceeded, capacity errors) are
  not modelled: a spot attempt waits for capacity as managed spot does within MaxWait (2 x
  maxRuntime by default, past every deadline here), so the next step is keep-waiting,
  switch-to-on-demand or (across regions) a move, never resubmit.

The baselines see the same checkpointed progress and the true restart overhead, decide at every
step (and at every event), and look at spot capacity whenever they like, as in the paper's
simulator: advantages Spotline does not have.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from spotline.core.capacity.assess import Assessment, assess
from spotline.core.capacity.observation import Attempt, FleetRecord, History, Observation, QueueLimits
from spotline.core.capacity.policy import JobClock
from spotline.core.regions.regions import Sighting
from spotline.core.spec.model import JobSpec
from spotline.core.training.status import State, TrainingStatus
from spotline_dev.research.simulate.model import (
    NEVER,
    SIGHTING_SECONDS,
    Capacity,
    Command,
    Job,
    Outcome,
    Phase,
    Policy,
    View,
    simulate,
)
from spotline_dev.research.simulate.ross import ross, ross_hedged

Tier = Literal["spot", "on-demand"]
FIRST_POLL_SECONDS = 60
"""SubmitTrainingJob's firstPollSeconds (functions/submit_training_job/app.py)."""
HOME = "us-east-1"
"""The region of a run in one region."""


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

    def restart(self, job: Job) -> int:
        """The restart the last safe moment leaves room for."""
        return job.overhead

    def decide(self, view: View) -> Command:
        job = view.job
        last_safe = math.ceil(job.deadline - view.remaining - self.restart(job) - 1e-9)
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
    "copying": "queued",  # the checkpoint copy before a submission in another region
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
    """The production policy through the CheckTrainingStatus Lambda's interface: at each check, an
    `Observation` of what the Lambda would read (the normalized status, progress.json as the
    checkpoints left it, no queue ahead of it), the run's attempts, and the same
    `spotline.core.capacity.assess.assess` the Lambda calls; `next_check` in its answer for the next check.
    Woken by every event of the model, it acts only on what a real event would tell it: an
    interruption of its job."""

    name = "spotline"
    wakes_on_events = True
    regions: tuple[str, ...] = (HOME,)
    """The regions the run may use (one here)."""

    def __init__(self, job: Job, start: datetime, seed: str = "simulate", *, measures_work: bool = True) -> None:
        self.job, self.start, self.seed = job, start, seed
        self.measures_work = measures_work
        if not measures_work:
            self.name = "declared"
        self.deadline = start + timedelta(seconds=job.deadline * job.step_seconds)
        self.spec = _spec(job, self.deadline)
        self.reason = ""
        self.clocks: list[JobClock] = []
        """Every clock the policy was asked about, in order (for tests and reports)."""
        self.assessments: list[Assessment] = []
        """Every assessment of a check, in order."""
        self._wake, self._preemptions = 0, 0
        self.previous: list[Attempt] = []
        """The run's earlier attempts (one per move to another region)."""
        self.checks = 0
        """Checks in the current execution (a continuation starts again from 0)."""
        self.own: list[Sighting] = []
        """What the checks saw of spot capacity, as the Lambda adds it to the fleet's record."""
        self.overhead = float(job.overhead * job.step_seconds)
        """The restart estimate of the last check (without a checkpoint copy)."""

    def copy_seconds(self) -> float:
        """What a move to another region adds to a restart (none in one region)."""
        return 0.0

    def _at(self, step: int) -> datetime:
        return self.start + timedelta(seconds=step * self.job.step_seconds)

    def _steps(self, seconds: float) -> int:
        return max(1, math.ceil(seconds / self.job.step_seconds - 1e-9))

    def observe(self, view: View) -> tuple[Observation, History]:
        """What CheckTrainingStatus would read at this check, and the run so far."""
        step = self.job.step_seconds
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
        # progress.json as the checkpoints left it; the `declared` baseline's records no training seconds.
        progress: dict[str, Any] = {"step": view.checkpointed, "totalSteps": self.job.work}
        if self.measures_work:
            progress["trainingSeconds"] = view.checkpointed * step
        observation = Observation(
            status,
            region=self.regions[view.region],
            progress=progress,
            copy_seconds=self.copy_seconds() if self.checkpoint_size(view) else 0.0,  # nothing saved: nothing to copy
            checkpoint_bytes=self.checkpoint_size(view),
            checkpoint_region=None if view.checkpoint_region == view.region else self.regions[view.checkpoint_region],
            regions=self.regions,
        )
        current = Attempt(self._tier(view), submitted_at=self._at(view.attempt_submitted))
        history = History(current, tuple(self.previous), checks=self.checks, seed=self.seed)
        return observation, history

    def checkpoint_size(self, view: View) -> int:
        """The checkpoint's bytes (none to copy in one region)."""
        return 0

    def _attempt(self, view: View, tier: Tier) -> Attempt:
        """The attempt ending now as the execution state keeps it: its tier, its submission and its
        wait for instances (what `restart_overhead` measures an on-demand restart from)."""
        started = view.attempt_started
        wait = None if started is None else (started - view.attempt_submitted) * self.job.step_seconds
        return Attempt(tier, submitted_at=self._at(view.attempt_submitted), queue_wait_seconds=wait)

    @staticmethod
    def _tier(view: View) -> Tier:
        """The current attempt's capacity as the execution state records it."""
        return "on-demand" if view.capacity == "on-demand" else "spot"

    def fleet(self, view: View) -> FleetRecord:
        """The fleet's record of spot capacity: its latest sightings (`View.sighted`, `SIGHTING_SECONDS`
        old at most) and this job's own."""
        seen = self._at(view.t - view.t % max(1, SIGHTING_SECONDS // self.job.step_seconds))
        fleet = [Sighting(region, seen, up) for region, up in zip(self.regions, view.sighted, strict=True)]
        return FleetRecord.of([*fleet, *self.own], self._at(view.t))

    def assess(self, view: View) -> Assessment:
        """`assess` as the Lambda calls it: again with the fleet's record when it asks for it."""
        now = self._at(view.t)
        observation, history = self.observe(view)
        assessed = assess(self.spec, observation, history, QueueLimits(), now)
        if assessed.sighting is not None:
            self.own.append(assessed.sighting)
        if assessed.needs:  # read only when asked, as the Lambda does (no training plans here)
            fleet = self.fleet(view) if "fleet" in assessed.needs else None
            plans = () if "plans" in assessed.needs else None
            assessed = assess(self.spec, replace(observation, fleet=fleet, plans=plans), history, QueueLimits(), now)
        self.assessments.append(assessed)
        self.clocks.append(assessed.clock)
        self.overhead = assessed.restart_overhead_seconds
        self.checks = 0 if assessed.step.action == "continue-in-new-execution" else assessed.checks
        return assessed

    def decide(self, view: View) -> Command:
        if view.capacity == "none":  # SubmitTrainingJob (spot-first), then WaitForJobToStart
            return Command("spot", view.t + self._steps(FIRST_POLL_SECONDS))
        tier = self._tier(view)
        if view.t < self._wake and view.preemptions_in_attempt == self._preemptions:
            return Command(tier, self._wake)  # a change no Batch or SageMaker event announces
        self._preemptions = view.preemptions_in_attempt
        assessed = self.assess(view)
        if assessed.step.action in ("switch-to-on-demand", "return-to-spot"):  # StopSpotJob, SubmitTrainingJob
            self.reason = assessed.decision.reason
            self.previous.append(self._attempt(view, tier))
            self._wake, self._preemptions = view.t + self._steps(FIRST_POLL_SECONDS), 0
            return Command("spot" if assessed.step.next_capacity == "spot" else "on-demand", self._wake)
        if tier == "on-demand":
            self._wake = view.t + self._steps(assessed.upcoming.seconds)
            return Command("on-demand", self._wake)
        if assessed.next_region is not None:  # SubmitTrainingJob there, from a copy of the checkpoint
            self.previous.append(self._attempt(view, "spot"))
            self._wake = view.t + self._steps(FIRST_POLL_SECONDS)
            self._preemptions = 0
            return Command("spot", self._wake, region=self.regions.index(assessed.next_region))
        self._wake = view.t + self._steps(assessed.upcoming.seconds)
        return Command("spot", self._wake)


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
SeededPolicyFactory = Callable[[Job, datetime, int], Policy]

RANDOMIZED: dict[str, SeededPolicyFactory] = {"ross": ross, "ross-hedged": ross_hedged}
"""The randomized policies: the grid runs each `GridSpec.seeds` times per job, seeds 0, 1, ..."""


def _spotline(job: Job, start: datetime) -> Policy:
    return SpotlinePolicy(job, start)


def _declared(job: Job, start: datetime) -> Policy:
    return SpotlinePolicy(job, start, measures_work=False)


POLICIES: dict[str, PolicyFactory] = {
    "on-demand": lambda job, start: OnDemandOnly(),
    "spot-no-ckpt": lambda job, start: SpotOnly("spot-no-ckpt"),
    "spot-ckpt": lambda job, start: SpotOnly("spot-ckpt"),
    "greedy": lambda job, start: Greedy(),
    "uniform": lambda job, start: UniformProgress(),
    "declared": _declared,
    "ross": lambda job, start: ross(job, start, 0),
    "ross-hedged": lambda job, start: ross_hedged(job, start, 0),
    "spotline": _spotline,
}
"""Every online policy of the table by name (`spot-no-ckpt` runs its job without checkpoints)."""


def run_policy(name: str, job: Job, available: npt.NDArray[np.bool_], start: datetime, seed: int = 0) -> Outcome:
    """One run; `seed` picks the draw of a randomized policy (`RANDOMIZED`), the others ignore it."""
    if name == "spot-no-ckpt":
        job = replace(job, checkpoint=None)
    policy = RANDOMIZED[name](job, start, seed) if name in RANDOMIZED else POLICIES[name](job, start)
    return simulate(job, available, policy)
