"""ValidateResources across regions: which of `spec.capacity.regions` a run may use.

A region other than home qualifies when the team's replicas place every resource of the job
there (`spotline.core.regions.replicas`), those replicas exist (`check_in_region`), and each input's
replica is not behind its home prefix: S3 replication copies only objects written after it is
set up, asynchronously, so a replica may lack the newest objects. A job that mounts a file system
qualifies only where the team's replicas name one of the same type there, listed in its
`fileSystems` too, that the stack in that region reaches (`spotline.aws.datasets.file_systems`, with that
stack's subnets and security groups); the subnets that reach it are kept per region. A region that
does not qualify is left out with the field and the reason, never the run refused: it still runs
in the regions that qualify, the home region at least.
"""

from __future__ import annotations

from collections.abc import Collection

from spotline.aws.datasets.file_systems import mount_plan
from spotline.aws.regions.regions import prefix_contents
from spotline.aws.training import training_settings
from spotline.aws.training.cluster_checks import cluster_zones, efa_problems, security_group_problems
from spotline.aws.training.resources import check_in_region
from spotline.core.common.errors import ManifestError
from spotline.core.regions.regions import arn_in_region, home_region_missing
from spotline.core.regions.replicas import Replicas, place, spec_in
from spotline.core.spec.model import JobSpec
from spotline.core.state import ExcludedRegion, RegionPlanState


def home_only(home: str) -> RegionPlanState:
    """The plan of a run that stays in its home region."""
    return RegionPlanState(home=home, allowed=[home], excluded=())


def plan_regions(
    spec: JobSpec, home: str, replicas: Replicas, queue: str, file_systems: Collection[str] = ()
) -> tuple[RegionPlanState, list[ManifestError]]:
    """The regions the run may use, and the problems that refuse it (only a list without home);
    `file_systems` the ones the team may mount (its `fileSystems`)."""
    if not spec.regions:
        return home_only(home), []
    if problem := home_region_missing(spec.regions, home):
        return home_only(home), [problem]
    allowed, excluded, subnets = [], [], dict[str, list[str]]()
    zones: dict[str, dict[str, list[str]]] = {}
    for region in spec.regions:
        if region == home:
            allowed.append(region)
            continue
        placed, problems = place(spec, region, home, replicas)
        if placed is not None:
            there = spec_in(spec, placed)
            problems = check_in_region(there, region, arn_in_region(queue, region)) or _behind(spec, there, region)
            if not problems and any(channel.on_file_system for channel in there.inputs):
                problems, reaching = _mounts(there, region, file_systems)
                subnets[region] = list(reaching)
            if not problems and there.multi_node:
                problems, by_zone = _cluster(there, region, tuple(subnets.get(region) or ()))
                if by_zone:
                    zones[region] = by_zone
        if problems:
            excluded.append(ExcludedRegion(region=region, field=problems[0].path, reason=problems[0].message))
            subnets.pop(region, None)
            zones.pop(region, None)
        else:
            allowed.append(region)
    plan = RegionPlanState(
        home=home, allowed=allowed, excluded=tuple(excluded), subnets=subnets or None, zones=zones or None
    )
    return plan, []


def _cluster(
    there: JobSpec, region: str, reaching: tuple[str, ...]
) -> tuple[list[ManifestError], dict[str, list[str]] | None]:
    """A job of many instances in `region`: the types it asks EFA of have it there, the stack's
    security groups there admit themselves, and its subnets there by zone (the file systems' when
    it mounts any)."""
    settings = training_settings.in_region(region)
    problems = efa_problems(there, region) + security_group_problems(there, settings.security_group_ids, region)
    if problems:
        return problems, None
    return [], cluster_zones(there, reaching or settings.subnet_ids, region)


def _mounts(there: JobSpec, region: str, file_systems: Collection[str]) -> tuple[list[ManifestError], tuple[str, ...]]:
    """The job's file systems in `region`: the team's, reached by the stack there."""
    for index, channel in enumerate(there.inputs):
        if channel.on_file_system and channel.file_system_id not in file_systems:
            path = f"spec.inputs[{index}].fileSystem"
            return [
                ManifestError(path, f"its replica {channel.file_system_id} is not a file system the team may mount")
            ], ()
    settings = training_settings.in_region(region)
    if not settings.subnet_ids:
        return [ManifestError("spec.inputs", f"the stack in {region} runs its jobs in no VPC (TrainingSubnetIds)")], ()
    plan = mount_plan(there, settings.subnet_ids, settings.security_group_ids, region)
    return plan.problems, plan.subnets or ()


def _behind(spec: JobSpec, there: JobSpec, region: str) -> list[ManifestError]:
    """An input whose replica lacks objects, or holds fewer bytes, than its home prefix."""
    for index, (home_channel, channel) in enumerate(zip(spec.inputs, there.inputs, strict=True)):
        if channel.on_file_system:
            continue  # a file system replica is the team's to keep in step; S3 says nothing of it
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
