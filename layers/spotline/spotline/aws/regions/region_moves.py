"""CheckTrainingStatus across regions, on AWS: the checkpoint copy a move would add to a restart,
and the fleet's record of spot capacity (written at each check of a spot attempt, read when a
stuck one may move). The move itself is decided in `spotline.core.capacity.assess.look_elsewhere`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from spotline.aws.common.observability import logger
from spotline.aws.regions.regions import prefix_contents, recent_sightings, record_sighting
from spotline.core.capacity.observation import FleetRecord
from spotline.core.regions.regions import Sighting, copy_estimate
from spotline.core.spec.model import JobSpec


def copy_seconds(regions: Sequence[str], spec_here: JobSpec, where: str) -> tuple[float, int]:
    """(the longest checkpoint copy to another of the run's `regions`, the checkpoint's bytes): what
    a move adds to a restart, so the deadline policy counts it. (0, 0) for a run in one region."""
    others = [r for r in regions if r != where]
    if not others or not spec_here.checkpoint_s3_uri:
        return 0.0, 0
    _, size = prefix_contents(spec_here.checkpoint_s3_uri, where)
    return max(copy_estimate(size, where, r)[0] for r in others), size


def note_sighting(seen: Sighting, execution: str) -> None:
    """Add what this check saw to the fleet's record."""
    try:
        record_sighting(seen, execution)
    except Exception:  # the record informs choices; a failed write never fails the check
        logger.exception("Capacity sighting not recorded")


def fleet_record(regions: Sequence[str], instance_type: str, now: datetime, instances: int = 1) -> FleetRecord:
    """The fleet's sightings of `instance_type` in `regions` (the last day's) that tell about a job
    of `instances`."""
    return FleetRecord.of(recent_sightings(regions, instance_type, now, instances), now)
