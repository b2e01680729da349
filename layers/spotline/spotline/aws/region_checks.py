"""ValidateResources across regions: which of `spec.capacity.regions` a run may use.

A region other than home qualifies when the team's replicas place every resource of the job
there (`spotline.core.replicas`), those replicas exist (`check_in_region`), and each input's
replica is not behind its home prefix: S3 replication copies only objects written after it is
set up, asynchronously, so a replica may lack the newest objects. A region that does not
qualify is left out with the field and the reason, never the run refused: it still runs in the
regions that qualify, the home region at least.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spotline.aws.regions import prefix_contents
from spotline.aws.resources import check_in_region
from spotline.core.errors import ManifestError
from spotline.core.model import JobSpec
from spotline.core.regions import arn_in_region
from spotline.core.replicas import Replicas, place, spec_in

REGIONS_PATH = "spec.capacity.regions"


@dataclass(frozen=True, slots=True)
class Excluded:
    region: str
    field: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"region": self.region, "field": self.field, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class RegionPlan:
    home: str
    allowed: tuple[str, ...]
    excluded: tuple[Excluded, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"home": self.home, "allowed": list(self.allowed), "excluded": [e.to_dict() for e in self.excluded]}


def plan_regions(spec: JobSpec, home: str, replicas: Replicas, queue: str) -> tuple[RegionPlan, list[ManifestError]]:
    """The regions the run may use, and the problems that refuse it (only a list without home)."""
    if not spec.regions:
        return RegionPlan(home, (home,)), []
    if home not in spec.regions:
        problem = ManifestError(
            REGIONS_PATH,
            f"must include {home}, the region the manifest was dropped in: the run, its on-demand fallback "
            "and its records stay there",
        )
        return RegionPlan(home, (home,)), [problem]
    allowed, excluded = [], []
    for region in spec.regions:
        if region == home:
            allowed.append(region)
            continue
        placed, problems = place(spec, region, home, replicas)
        if placed is not None:
            there = spec_in(spec, placed)
            problems = check_in_region(there, region, arn_in_region(queue, region)) or _behind(spec, there, region)
        if problems:
            excluded.append(Excluded(region, problems[0].path, problems[0].message))
        else:
            allowed.append(region)
    return RegionPlan(home, tuple(allowed), tuple(excluded)), []


def _behind(spec: JobSpec, there: JobSpec, region: str) -> list[ManifestError]:
    """An input whose replica lacks objects, or holds fewer bytes, than its home prefix."""
    for index, (home_channel, channel) in enumerate(zip(spec.inputs, there.inputs, strict=True)):
        home_count, home_bytes = prefix_contents(home_channel.s3_uri, None)
        count, size = prefix_contents(channel.s3_uri, region)
        if count < home_count or size < home_bytes:
            return [
                ManifestError(
                    f"spec.inputs[{index}].s3Uri",
                    f"the replica {channel.s3_uri} in {region} is behind: {count} of {home_count} objects, "
                    f"{size:,} of {home_bytes:,} bytes (replication copies new objects asynchronously)",
                )
            ]
    return []
