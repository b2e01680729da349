"""ValidateResources for a job of many instances: the types it asks EFA of have it, and the stack's
security groups let its instances talk to each other (`spotline.core.training.cluster_network`)."""

from __future__ import annotations

from spotline.aws.capacity.training_plans import AUTO, describe_plan
from spotline.aws.common.clients import client, error_code
from spotline.aws.common.vpc import security_group_rules, subnets_of
from spotline.core.capacity.training_plans import PLAN_PATH
from spotline.core.capacity.zones import by_zone
from spotline.core.common.errors import STACK_PATH, ManifestError
from spotline.core.regions.regions import region_of_arn
from spotline.core.spec.model import JobSpec
from spotline.core.teams.team_policy import option_paths
from spotline.core.training.cluster_network import closed_directions


def efa_problems(spec: JobSpec, region: str | None = None) -> list[ManifestError]:
    """Every type the job may run on supports EFA, when it asks for EFA. SageMaker training instance
    types are EC2's with an `ml.` prefix; whether one supports EFA is EC2's NetworkInfo.EfaSupported
    (DescribeInstanceTypes: "Indicates whether Elastic Fabric Adapter (EFA) is supported")."""
    if spec.distribution is None or not spec.distribution.efa:
        return []
    problems = []
    known = _efa_support({o.instance_type.removeprefix("ml.") for o in spec.instance_options}, region)
    for where, option in option_paths(spec):
        path, instance_type = f"{where}.instanceType", option.instance_type
        supported = known.get(instance_type.removeprefix("ml."))
        if supported is None:
            problems.append(ManifestError(path, f"{instance_type}: EC2 knows no such instance type, so no EFA"))
        elif not supported:
            problems.append(
                ManifestError(
                    path,
                    f"{instance_type} has no Elastic Fabric Adapter (spec.distribution.efa is true): choose a "
                    "type with EFA such as ml.p4d.24xlarge or ml.p5.48xlarge, or set efa to false",
                )
            )
    return problems


def _efa_support(ec2_types: set[str], region: str | None) -> dict[str, bool]:
    """{type: EfaSupported} in one DescribeInstanceTypes call; a type EC2 does not know is left out
    (the call refuses the whole list for it: InvalidInstanceType, then each type is asked alone)."""
    ec2 = client("ec2", region)
    try:
        found = ec2.describe_instance_types(InstanceTypes=sorted(ec2_types))["InstanceTypes"]
    except Exception as exc:
        if error_code(exc) != "InvalidInstanceType":
            raise
        if len(ec2_types) == 1:
            return {}
        return {k: v for t in ec2_types for k, v in _efa_support({t}, region).items()}
    return {str(t["InstanceType"]): bool((t.get("NetworkInfo") or {}).get("EfaSupported")) for t in found}


def security_group_problems(
    spec: JobSpec, group_ids: tuple[str, ...], region: str | None = None
) -> list[ManifestError]:
    """The stack's security groups allow all traffic among the job's instances (and, with EFA, out
    to themselves too), for a job that may run on more than one instance in the stack's VPC."""
    if not spec.multi_node or not group_ids:
        return []
    efa = spec.distribution is not None and spec.distribution.efa
    rules = security_group_rules(set(group_ids), region)
    closed = closed_directions(rules, group_ids, efa)
    if not closed:
        return []
    groups, most = ", ".join(group_ids), max(o.instance_count for o in spec.instance_options)
    need = "all traffic to and from themselves (EFA)" if efa else "all traffic from themselves"
    return [
        ManifestError(
            STACK_PATH,
            f"the stack's TrainingSecurityGroupIds ({groups}) do not admit themselves "
            f"({' and '.join(closed)} closed): a job on {most} instances needs {need}; "
            "ask the platform team to add the rule",
        )
    ]


def plan_zone_problems(spec: JobSpec, zones_by_region: dict[str, dict[str, list[str]]]) -> list[ManifestError]:
    """A job of many instances on the plan it names runs in the plan's zone ("AvailabilityZone: The
    availability zone for the reserved capacity", ReservedCapacitySummary): the stack of the plan's
    region needs a subnet there (`zones_by_region`: each region's subnets by zone), else no attempt
    on the plan has a choice of zone."""
    if spec.training_plan in (None, AUTO):
        return []
    zones = zones_by_region.get(region_of_arn(str(spec.training_plan)))
    if not zones:
        return []
    plan = describe_plan(str(spec.training_plan))
    if plan is None or plan.zone is None or plan.zone in zones:
        return []
    return [
        ManifestError(
            PLAN_PATH,
            f"{plan.name}'s reserved capacity is in {plan.zone}, and the stack's subnets (TrainingSubnetIds) are in "
            f"{', '.join(zones)}: an attempt of {max(o.instance_count for o in spec.instance_options)} instances on "
            f"it could not run in one zone; ask the platform team for a subnet in {plan.zone}, or name another plan",
        )
    ]


def cluster_zones(spec: JobSpec, subnets: tuple[str, ...], region: str | None = None) -> dict[str, list[str]] | None:
    """The subnets a job of many instances may use, by zone (EC2 DescribeSubnets), for one zone per
    attempt (`spotline.core.capacity.zones`); None for a job of one instance or outside a VPC."""
    if not spec.multi_node or not subnets:
        return None
    return by_zone({s: info["AvailabilityZone"] for s, info in subnets_of(list(subnets), region).items()}, subnets)
