"""One check of a training attempt, decided (pure): `assess(spec, observation, history, limits, now)`
turns what AWS said into an `Assessment`: the deadline policy's verdict, the next step, the
priority raise to make, the region move, the training plan to fall back onto, the next check and
whether DeadlineAtRisk is due. Nothing is done here: CheckTrainingStatus (`spotline.aws.capacity.checking`)
applies the assessment, and `spotline simulate` replays the same function on a trace.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import pairwise
from typing import Any, Literal

from spotline.core.capacity.lifecycle import (
    CapacityWait,
    NextStep,
    may_return,
    next_step,
    returns_to_spot,
    within_history_budget,
)
from spotline.core.capacity.observation import Attempt, History, Observation, QueueLimits, progress_figures
from spotline.core.capacity.policy import (
    DEFAULT_RESTART_OVERHEAD_SECONDS,
    Decision,
    JobClock,
    decide,
    describe_work_left,
    estimate_spread,
    may_return_to_spot,
    no_option_left,
    on_demand_needs,
    out_of_reach,
    remaining_work,
    work_left_at_best,
)
from spotline.core.capacity.queue import Escalation, escalation
from spotline.core.capacity.speeds import fastest_speed, slowest_speed
from spotline.core.capacity.training_plans import PlanView, fallback_plan, plan_step
from spotline.core.capacity.zones import next_zone
from spotline.core.common.durations import format_duration
from spotline.core.regions.regions import (
    Departure,
    RegionChoice,
    RegionEstimate,
    RegionRecord,
    Sighting,
    blocked_regions,
    choose_region,
)
from spotline.core.spec.model import JobSpec, to_rfc3339
from spotline.core.state.execution_state import MAX_REASON, clip
from spotline.core.training.polling import NextCheck, next_check
from spotline.core.training.status import TrainingStatus, waits_for_capacity
from spotline.core.training.training_request import pending_limit

STARTUP_AFTER_ACQUIRE_SECONDS = 600.0
"""Image download and start-up after instances are acquired (on top of the measured queue wait)."""

Need = Literal["fleet", "plans"]


@dataclass(frozen=True, slots=True)
class AtRisk:
    """DeadlineAtRisk, due now: no capacity tier can meet the deadline while it is still ahead."""

    at: datetime
    cause: str
    work_left_seconds: float
    spread_seconds: float
    estimated: bool
    """The work left is estimated from a measured pace (not the declared duration)."""

    def record(self, notified: bool) -> dict[str, Any]:
        """The notice kept in the state (`$.status.deadlineAtRisk`)."""
        return {
            "at": to_rfc3339(self.at),
            "cause": clip(self.cause, MAX_REASON),
            "notified": notified,
            "workLeftSeconds": round(self.work_left_seconds),
            "workLeftSpreadSeconds": round(self.spread_seconds),
            "workLeftEstimated": self.estimated,
        }


@dataclass(frozen=True, slots=True)
class Assessment:
    """What one check decided; the adapter acts on it (raise, record, publish) and reports it."""

    status: TrainingStatus
    instance_type: str
    """The attempt's type (the manifest's until SageMaker selects one)."""
    queue_wait_seconds: float | None
    """How long the attempt waited for instances (None: not started)."""
    restart_overhead_seconds: float
    queue_wait_now_seconds: float
    progress: dict[str, Any]
    clock: JobClock
    decision: Decision
    escalation: Escalation | None
    """The priority raise to make (only a job queued for room, short of slack)."""
    priority: int
    """The job's priority from now on."""
    step: NextStep
    sighting: Sighting | None
    """What this check saw of spot capacity (to add to the fleet's record)."""
    region_choice: RegionChoice | None
    next_region: str | None
    plan: PlanView | None
    upcoming: NextCheck
    capacity_wait_seconds: float
    max_pending_seconds: int | None
    at_risk: AtRisk | None
    """DeadlineAtRisk to send now (None: not due, or sent already)."""
    checks: int
    needs: frozenset[Need] = frozenset()
    """What the observation lacks for the rest of the decision: gather it and assess again."""


def restart_overhead(previous: tuple[Attempt, ...], current_wait: float | None, current_capacity: str) -> float:
    """What moving to on-demand costs in time: the longest measured on-demand wait for instances
    plus start-up, else a default. Spot waits are not used: they include waiting for spot
    capacity, which an on-demand restart does not."""
    waits = [a.queue_wait_seconds for a in previous if a.capacity == "on-demand" and a.queue_wait_seconds is not None]
    if current_wait is not None and current_capacity == "on-demand":
        waits.append(current_wait)
    return max(waits) + STARTUP_AFTER_ACQUIRE_SECONDS if waits else DEFAULT_RESTART_OVERHEAD_SECONDS


def is_spot_missing(status: TrainingStatus, seconds_since_submit: float, overhead: float) -> bool:
    """Waiting for spot capacity: queued short of it, interrupted, or still starting after the
    time a start normally takes."""
    return (
        status.capacity_short
        or status.state == "interrupted"
        or (status.state in ("queued", "starting") and seconds_since_submit > overhead)
    )


def capacity_wait_seconds(status: TrainingStatus, submitted: datetime, now: datetime) -> float:
    """How long the attempt has waited for capacity of its type so far (0 when not waiting)."""
    if not (status.capacity_short or waits_for_capacity(status.state, status.reason)):
        return 0.0
    since = status.state_since if status.state_since and status.state == "starting" else submitted
    return max(0.0, (now - since).total_seconds())


def _tried(spec: JobSpec, history: History, status: TrainingStatus) -> str:
    """Each attempt's tier and type (an on-demand one not yet selected: every type it asked for)."""
    current = replace(history.current, instance_type=status.instance_type or history.current.instance_type)
    any_type = "/".join(option.instance_type for option in spec.instance_options)

    def where(attempt: Attempt) -> str:
        fallback = any_type if attempt.capacity == "on-demand" else spec.instance_type
        return f"{attempt.capacity} on {attempt.instance_type or fallback}"

    return ", ".join(where(a) for a in [*history.previous, current])


def at_risk_due(spec: JobSpec, history: History, clock: JobClock, status: TrainingStatus) -> AtRisk | None:
    """DeadlineAtRisk, once per run, as soon as no capacity tier can meet the deadline while it is
    still ahead: cause, what was tried, what is left."""
    running = status.state == "training"
    if history.at_risk or status.finished or not no_option_left(clock, running=running):
        return None
    left = (clock.deadline - clock.now).total_seconds() if clock.deadline else 0.0
    work = work_left_at_best(clock, running=running)
    cause = (
        f"{format_duration(left)} left before the deadline; {describe_work_left(clock, running=running)}"
        f"{'' if running else ', plus a restart'}: even at best it ends after the deadline, on any capacity "
        f"(tried: {_tried(spec, history, status)})"
    )
    return AtRisk(clock.now, cause, work, work * estimate_spread(clock), clock.pace_measured_seconds > 0)


def sighting_of(
    status: TrainingStatus, clock: JobClock, *, where: str, instance_type: str, instances: int = 1
) -> Sighting | None:
    """What this check saw of spot capacity where the attempt runs, for `instances` of the type
    (None: nothing either way)."""
    if status.state == "training":
        return Sighting(where, clock.now, True, instance_type, instances=instances)
    if clock.spot_missing:
        interrupted = status.state == "interrupted"
        return Sighting(where, clock.now, False, instance_type, interruption=interrupted, instances=instances)
    return None


@dataclass(frozen=True, slots=True)
class Moved:
    """`look_elsewhere`'s answer: the step, what was seen, the region choice and the region to move to."""

    step: NextStep
    sighting: Sighting | None = None
    choice: RegionChoice | None = None
    region: str | None = None
    needs_fleet: bool = False


MOVES_PER_OTHER_REGION = 4
"""A run moves between regions at most this many times per region beyond the first. Every move is a
spot attempt, so `retry.maxAttempts` bounds them too (`lifecycle.CHECKS_PER_EXECUTION`)."""


def region_moves(history: History, home: str) -> list[Departure]:
    """The run's moves between regions so far: each spot attempt followed by a spot attempt in
    another region left its region for lack of spot, after waiting there (its time less its training)."""
    moves = []
    for before, after in pairwise([*history.previous, history.current]):
        left, went = before.region or home, after.region or home
        if left == went or before.capacity != "spot" or after.capacity != "spot" or after.submitted_at is None:
            continue
        since = before.submitted_at or after.submitted_at
        waited = (after.submitted_at - since).total_seconds() - before.training_seconds
        moves.append(Departure(left, after.submitted_at, max(0.0, waited)))
    return moves


def look_elsewhere(
    spec: JobSpec,
    observation: Observation,
    status: TrainingStatus,
    clock: JobClock,
    step: NextStep,
    *,
    capacity: str,
    instance_type: str,
    restart_seconds: float,
    history: History,
) -> Moved:
    """A spot attempt stuck where it runs moves to another of the run's regions when the fleet's
    record says it would finish sooner there (`spotline.core.regions.regions.choose_region`). An
    interrupted attempt first waits a restart plus the copy where it is (one interruption shows spot
    there) unless the fleet sees spot elsewhere now; regions the run left are blocked
    (`blocked_regions`); at most `MOVES_PER_OTHER_REGION` moves per other region."""
    where = observation.region
    if capacity != "spot":
        return Moved(step)
    seen = sighting_of(
        status, clock, where=where, instance_type=instance_type, instances=spec.option(instance_type).instance_count
    )
    if step.action != "keep-waiting" or not clock.spot_missing:
        return Moved(step, seen)
    allowed = observation.regions
    left_out = "; ".join(f"{e.region} left out ({e.field}: {e.reason})" for e in observation.excluded)
    if len(allowed) < 2:
        if left_out:
            step = replace(step, explanation=f"{step.explanation}; spot waits in {where}: {left_out}")
        return Moved(step, seen)
    stuck_seconds = (clock.now - status.state_since).total_seconds() if status.state_since else 0.0
    patience = clock.restart_overhead_seconds  # the restart, with the copy a move adds
    just_interrupted = status.state == "interrupted" and stuck_seconds < patience
    moves = region_moves(history, allowed[0])
    bound = MOVES_PER_OTHER_REGION * (len(allowed) - 1)
    if len(moves) >= bound:
        why = f"region moves: {len(moves)} of {bound} made, the spot attempt stays in {where}"
        return Moved(replace(step, explanation=f"{step.explanation}; {why}"), seen)
    if observation.fleet is None:
        return Moved(step, seen, needs_fleet=True)
    blocked = blocked_regions(moves, observation.fleet.latest, observation.fleet.records, clock.now)
    waits = (
        f"spot interrupted in {where} {format_duration(round(stuck_seconds))} ago, where it ran until then: "
        f"it waits there up to {format_duration(round(patience))} (a restart plus the copy) unless spot is "
        "seen elsewhere now"
    )
    if just_interrupted:  # only a region where the fleet sees spot now is worth a move yet
        latest = observation.fleet.latest
        unseen = {r: "no spot seen there lately" for r in allowed if not (r in latest and latest[r].spot)}
        blocked = {**unseen, **blocked}
    choice = choose_region(
        situation="stuck",
        current=where,
        allowed=allowed,
        sightings=observation.fleet.latest,
        restart_seconds=restart_seconds,
        checkpoint_bytes=observation.checkpoint_bytes,
        checkpoint_region=observation.checkpoint_region or where,
        remaining_seconds=remaining_work(clock),
        checkpoint_interval_seconds=60.0 * spec.checkpoint_interval_minutes,
        records=observation.fleet.records,
        stuck_since=status.state_since,
        stuck_seconds=stuck_seconds,
        blocked=blocked,
    )
    choice = replace(choice, moves_made=len(moves), moves_allowed=bound)
    if not choice.moves:
        extra = f"; {left_out}" if left_out else ""
        stays = waits if just_interrupted else f"stays in {where}: {choice.reason}"
        return Moved(replace(step, explanation=f"{step.explanation}; {stays}{extra}"), seen, choice)
    return Moved(
        NextStep(
            "move-to-another-region",
            f"{_seen_here(status, clock, choice.estimates, where, observation.fleet.records.get(where))}; "
            f"the spot attempt moves to {choice.reason}, from a copy of its last checkpoint, before any "
            f"on-demand is spent (region move {len(moves) + 1} of {bound})",
            next_capacity="spot",
        ),
        seen,
        choice,
        choice.region,
    )


def _seen_here(
    status: TrainingStatus,
    clock: JobClock,
    estimates: Iterable[RegionEstimate],
    where: str,
    record: RegionRecord | None,
) -> str:
    """What this check and the fleet's record saw where the attempt is stuck, and the estimate made
    from it: `spot interrupted in us-east-1 25m ago, none since; spot last seen there at 07:30: ...`.
    The reason cites what was observed, never more (one interruption is not "no spot capacity")."""
    waited = format_duration(round((clock.now - status.state_since).total_seconds() if status.state_since else 0.0))
    if status.state == "interrupted":
        seen = f"spot interrupted in {where} {waited} ago, none since"
    else:
        seen = f"waited {waited} without spot in {where}"
    if record is not None and record.last_spot_at is not None:
        seen += f"; spot last seen there at {record.last_spot_at:%H:%M}"
    note = next((e.note for e in estimates if e.region == where), None)
    return f"{seen}: {note}" if note else seen


def job_clock(
    spec: JobSpec,
    observation: Observation,
    history: History,
    progress: dict[str, Any],
    now: datetime,
    *,
    overhead: float,
) -> JobClock:
    """What the deadline policy knows at this check (`spotline.core.capacity.policy`)."""
    status, current = observation.status, history.current
    submitted = _submitted(history)
    first = (history.previous[0].submitted_at if history.previous else None) or submitted
    capacity = current.capacity
    copy = observation.copy_seconds if capacity == "spot" else 0.0
    return JobClock(
        now=now,
        started_at=first,
        deadline=spec.deadline_at,
        total_work_seconds=float(
            progress["estimatedWorkSeconds"] or spec.expected_duration_seconds or spec.max_runtime_seconds
        )
        / slowest_speed(progress),
        fastest_speed=fastest_speed(progress) / slowest_speed(progress),
        progress=progress["fraction"],
        capacity="spot" if capacity == "spot" else "on-demand",  # a plan's attempt never goes back to spot
        spot_missing=is_spot_missing(status, (now - submitted).total_seconds(), overhead),
        restart_overhead_seconds=overhead + copy,  # a move to another region copies the checkpoint first
        queue_wait_seconds=observation.queue_wait_now_seconds,
        work_measured=progress["estimatedWorkSeconds"] is not None,
        trained_since_checkpoint=(progress["estimatedFraction"] or progress["fraction"]) - progress["fraction"],
        since_checkpoint_seconds=float(progress["trainingSinceCheckpointSeconds"] or 0),
        pace_measured_seconds=float(progress["trainingSeconds"] or 0) if progress["estimatedWorkSeconds"] else 0.0,
        checkpoint_interval_seconds=spec.checkpoint_interval_minutes * 60.0,
    )


def _submitted(history: History) -> datetime:
    if history.current.submitted_at is None:
        raise ValueError("the current attempt has no submission time")
    return history.current.submitted_at


def _priority(
    spec: JobSpec, observation: Observation, decision: Decision, raised: Escalation | None, limits: QueueLimits
) -> int:
    """The job's priority from now on: as raised; the team's maximum for an on-demand fallback
    forced by the deadline (it must not wait behind lower-priority work); the manifest's again for a
    return to spot (raised later if its slack runs short in the queue); else as it is."""
    current = int(observation.priority or spec.priority)
    if raised:
        return raised.raised
    if decision.verdict == "return-to-spot":
        return int(spec.priority)
    if decision.verdict == "switch-to-on-demand":
        return max(current, limits.max_priority or current)
    return current


def assess(spec: JobSpec, observation: Observation, history: History, limits: QueueLimits, now: datetime) -> Assessment:
    """The check's decisions. `spec`: the job as it runs in `observation.region`."""
    status, current, previous = observation.status, history.current, history.previous
    submitted = _submitted(history)
    queue_wait = (status.started_at - submitted).total_seconds() if status.started_at else None
    capacity = current.capacity
    wait_now = observation.queue_wait_now_seconds
    overhead = max(restart_overhead(previous, queue_wait, capacity), wait_now + STARTUP_AFTER_ACQUIRE_SECONDS)
    progress = progress_figures(spec, status, observation.progress, previous, now)
    clock = job_clock(spec, observation, history, progress, now, overhead=overhead)
    attempts = [*previous, current]
    spot_attempts = sum(1 for a in attempts if a.capacity == "spot")
    returns = returns_to_spot([a.capacity for a in attempts])
    open_to_return = may_return(spec, capacity, spot_attempts=spot_attempts, returns=returns)
    training = status.state == "training"
    if open_to_return:  # what a spot attempt's restart would count here (its copy in a run across regions)
        clock = replace(clock, spot_copy_seconds=observation.copy_seconds)
    returning = open_to_return and training and may_return_to_spot(clock)  # has the fleet seen spot here?
    if open_to_return and (observation.fleet is not None or not returning):
        seen = observation.fleet.latest.get(observation.region) if observation.fleet else None
        seen_spot = seen is not None and seen.spot
        clock = replace(clock, spot_seen=seen_spot, on_demand_training=training)
    decision = decide(clock)
    raised = None
    if decision.verdict == "continue" and limits.max_priority is not None:
        raised = escalation(
            status,
            current_priority=int(observation.priority or spec.priority),
            max_priority=limits.max_priority,
            slack_seconds=decision.slack_seconds,
            waited_seconds=max(0.0, (now - submitted).total_seconds()),
        )
    instance_type = status.instance_type or current.instance_type or spec.instance_type
    wait = CapacityWait(
        instance_type=instance_type,
        waited_seconds=capacity_wait_seconds(status, submitted, now),
        deadline_passed=spec.deadline_at is not None and now >= spec.deadline_at,
        plan_ended=current.plan_usable_until is not None and now >= current.plan_usable_until,
        on_demand_attempts=sum(1 for a in attempts if a.capacity == "on-demand"),
        returns_to_spot=returns,
        zone=observation.zone,
        other_zone=next_zone(
            observation.zones, observation.zone, {a.zone for a in previous if a.zone and a.region == current.region}
        ),
    )
    checks = history.checks + 1
    step = within_history_budget(
        next_step(
            spec,
            status,
            capacity=capacity,
            spot_attempts=spot_attempts,
            decision=decision,
            seed=history.seed,
            wait=wait,
        ),
        checks,
    )
    needs: set[Need] = set()
    moved = look_elsewhere(
        spec,
        observation,
        status,
        clock,
        step,
        capacity=capacity,
        instance_type=instance_type,
        restart_seconds=overhead,
        history=history,
    )
    if moved.needs_fleet or (returning and observation.fleet is None):
        needs.add("fleet")
    plan = None
    if moved.step.next_capacity == "on-demand" and capacity == "spot" and spec.training_plan:
        if observation.plans is None:
            needs.add("plans")
        else:
            plan = fallback_plan(spec, list(observation.plans), now, min_seconds=on_demand_needs(clock))
    step = plan_step(moved.step, plan) if plan is not None else moved.step
    # Only a job that may still move to on-demand has a moment of its own to look again at.
    upcoming = next_check(
        status,
        expected_duration=spec.expected_duration_seconds,
        slack_seconds=decision.slack_seconds,
        may_switch=capacity == "spot" and spec.strategy == "spot-first" and not out_of_reach(clock),
    )
    left = (spec.deadline_at - now).total_seconds() if spec.deadline_at else None
    return Assessment(
        status=status,
        instance_type=instance_type,
        queue_wait_seconds=queue_wait,
        restart_overhead_seconds=overhead,
        queue_wait_now_seconds=wait_now,
        progress=progress,
        clock=clock,
        decision=decision,
        escalation=raised,
        priority=_priority(spec, observation, decision, raised, limits),
        step=step,
        sighting=moved.sighting,
        region_choice=moved.choice,
        next_region=moved.region,
        plan=plan,
        upcoming=upcoming,
        capacity_wait_seconds=wait.waited_seconds,
        # An on-demand fallback may look for capacity as long as the deadline leaves after the work.
        max_pending_seconds=pending_limit(left - remaining_work(clock) - STARTUP_AFTER_ACQUIRE_SECONDS)
        if left is not None and step.next_capacity == "on-demand"
        else None,
        at_risk=at_risk_due(spec, history, clock, status),
        checks=checks,
        needs=frozenset(needs),
    )
