"""ValidateResources: the role, image, data, buckets, team allowance and job queue the
spec depends on, all checked before anything is queued; every problem reported at once."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common.observability import bind_execution, logger
from spotline.aws.datasets.file_systems import MountPlan, mount_plan
from spotline.aws.manifest.spec_store import spec_of
from spotline.aws.teams.team_registry import admission_policy
from spotline.aws.training.cluster_checks import cluster_zones, plan_zone_problems
from spotline.aws.training.region_checks import home_only, plan_regions
from spotline.aws.training.resources import ResourceSettings, check_resources
from spotline.core.common.errors import summarize
from spotline.core.state import Problem, RegionPlanState, ResourceCheck
from spotline.core.teams.team_policy import TeamPolicy, TeamPolicyInvalid


def _available(plan: RegionPlanState) -> str:
    """All resources available, and where the run may go when a region was left out."""
    if not plan.excluded:
        return "all resources available"
    left_out = "; ".join(f"{e.region} left out: {e.field}: {e.reason}" for e in plan.excluded)
    return f"all resources available in {', '.join(plan.allowed)}; {left_out}"


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    spec = spec_of(event["input"])
    settings = ResourceSettings.from_environment()
    try:
        policy: TeamPolicy | TeamPolicyInvalid = admission_policy(spec.team)
    except TeamPolicyInvalid as exc:
        policy = exc
    problems = check_resources(spec, settings, policy)
    mounts = (
        mount_plan(spec, settings.training_subnet_ids, settings.training_security_group_ids)
        if not problems
        else MountPlan([], None)
    )
    problems += mounts.problems
    home = os.environ.get("AWS_REGION", "us-east-1")
    plan = home_only(home)
    allowance = None if isinstance(policy, TeamPolicyInvalid) else policy.allowance(spec.team)
    if not problems and allowance is not None:
        plan, refused = plan_regions(spec, home, allowance.replicas, settings.job_queue, allowance.file_systems)
        problems += refused
        for left_out in plan.excluded:
            logger.info("Region left out", extra=left_out.to_state())
    zones = None if problems else cluster_zones(spec, mounts.subnets or settings.training_subnet_ids)
    problems += plan_zone_problems(spec, ({home: zones} if zones else {}) | (plan.zones or {}))
    if problems:
        logger.warning("Resource validation failed", extra={"problems": [str(p) for p in problems]})
    return ResourceCheck(
        valid=not problems,
        problems=tuple(Problem.of(p) for p in problems),
        summary=summarize(problems) if problems else _available(plan) + _pinned(mounts, plan) + _zoned(zones),
        regions=plan,
        # The stack's subnets that reach every file system the job mounts (SubmitTrainingJob's
        # VpcConfig); null when it mounts none.
        subnets=list(mounts.subnets) if mounts.subnets is not None else None,
        # A job of many instances: its subnets by zone, one zone per attempt (SubmitTrainingJob).
        zones=zones,
    ).to_state()


def _pinned(mounts: MountPlan, plan: RegionPlanState) -> str:
    if mounts.subnets is None:
        return ""
    elsewhere = "".join(f"; in {region} to {', '.join(ids)}" for region, ids in (plan.subnets or {}).items())
    return f"; its file systems pin it to {', '.join(mounts.zones)} ({', '.join(mounts.subnets)}){elsewhere}"


def _zoned(zones: dict[str, list[str]] | None) -> str:
    return f"; one zone per attempt, of {', '.join(zones)}" if zones else ""
