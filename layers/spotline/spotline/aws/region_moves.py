"""CheckTrainingStatus across regions: the fleet's record of spot capacity, written at each
check of a spot attempt, and the move of a stuck spot attempt to another of the run's regions
(`spotline.core.regions.choose_region`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from spotline.aws.observability import logger
from spotline.aws.regions import allowed_regions, prefix_contents, recent_sightings, record_sighting
from spotline.core.durations import format_duration
from spotline.core.lifecycle import NextStep
from spotline.core.model import JobSpec
from spotline.core.policy import JobClock, remaining_work
from spotline.core.regions import (
    RegionEstimate,
    Sighting,
    choose_region,
    copy_estimate,
    latest_sightings,
    region_records,
)
from spotline.core.status import TrainingStatus


def copy_seconds(state: dict[str, Any], spec_here: JobSpec, where: str) -> tuple[float, int]:
    """(the longest checkpoint copy to another of the run's regions, the checkpoint's bytes): what
    a move adds to a restart, so the deadline policy counts it. (0, 0) for a run in one region."""
    others = [r for r in allowed_regions(state) if r != where]
    if not others or not spec_here.checkpoint_s3_uri:
        return 0.0, 0
    _, size = prefix_contents(spec_here.checkpoint_s3_uri, where)
    return max(copy_estimate(size, where, r)[0] for r in others), size


def sighting_of(status: TrainingStatus, clock: JobClock, *, where: str, instance_type: str) -> Sighting | None:
    """What this check saw of spot capacity where the attempt runs (None: nothing either way)."""
    if status.state == "training":
        return Sighting(where, clock.now, True, instance_type)
    if clock.spot_missing:
        return Sighting(where, clock.now, False, instance_type, interruption=status.state == "interrupted")
    return None


def look_elsewhere(
    state: dict[str, Any],
    spec: JobSpec,
    status: TrainingStatus,
    clock: JobClock,
    step: NextStep,
    *,
    where: str,
    execution: str,
    size: int,
    restart_seconds: float,
) -> tuple[NextStep, dict[str, Any] | None, str | None]:
    """The step, the region choice made (if any) and the region to move to (if any)."""
    training = state["training"]
    instance_type = status.instance_type or training.get("instanceType") or spec.instance_type
    if training["capacity"] != "spot":
        return step, None, None
    seen = sighting_of(status, clock, where=where, instance_type=instance_type)
    if seen is not None:
        try:
            record_sighting(seen, execution)
        except Exception:  # the record informs choices; a failed write never fails the check
            logger.exception("Capacity sighting not recorded")
    if step.action != "keep-waiting" or not clock.spot_missing:
        return step, None, None
    allowed = allowed_regions(state)
    excluded = ((state.get("resources") or {}).get("regions") or {}).get("excluded") or []
    left_out = "; ".join(f"{e['region']} left out ({e['field']}: {e['reason']})" for e in excluded)
    if len(allowed) < 2:
        if left_out:
            step = replace(step, explanation=f"{step.explanation}; spot waits in {where}: {left_out}")
        return step, None, None
    sightings = recent_sightings(allowed, instance_type, clock.now)
    choice = choose_region(
        situation="stuck",
        current=where,
        allowed=allowed,
        sightings=latest_sightings(sightings, clock.now),
        restart_seconds=restart_seconds,
        checkpoint_bytes=size,
        checkpoint_region=where,
        remaining_seconds=remaining_work(clock),
        checkpoint_interval_seconds=60.0 * spec.checkpoint_interval_minutes,
        records=region_records(sightings, clock.now),
        stuck_since=status.state_since,
        stuck_seconds=(clock.now - status.state_since).total_seconds() if status.state_since else 0.0,
    )
    if not choice.moves:
        extra = f"; {left_out}" if left_out else ""
        return (
            replace(step, explanation=f"{step.explanation}; stays in {where}: {choice.reason}{extra}"),
            choice.to_dict(),
            None,
        )
    return (
        NextStep(
            "move-to-another-region",
            f"{_seen_here(status, clock, choice.estimates, where)}; the spot attempt moves to {choice.reason}, "
            "from a copy of its last checkpoint, before any on-demand is spent",
            next_capacity="spot",
        ),
        choice.to_dict(),
        choice.region,
    )


def _seen_here(status: TrainingStatus, clock: JobClock, estimates: Iterable[RegionEstimate], where: str) -> str:
    """What this check and the fleet's record saw where the attempt is stuck, and the estimate made
    from it: `spot interrupted in us-east-1: waits here ..., seen: 1 interruption in 1h14m, ...`.
    The reason cites what was observed, never more (one interruption is not "no spot capacity")."""
    if status.state == "interrupted":
        seen = f"spot interrupted in {where}"
    else:
        waited = (clock.now - status.state_since).total_seconds() if status.state_since else 0.0
        seen = f"no spot capacity in {where} for {format_duration(round(waited))}"
    note = next((e.note for e in estimates if e.region == where), None)
    return f"{seen}: {note}" if note else seen
