"""The stack's VPC as EC2 describes it: subnets (their VPC, zone and range) and security groups
(their rules). Read by the file-system and cluster checks of ValidateResources."""

from __future__ import annotations

from typing import Any

from spotline.aws.common.clients import client


def subnets_of(subnet_ids: list[str], region: str | None) -> dict[str, dict[str, str]]:
    """Each subnet's VPC, Availability Zone and IPv4 range (EC2 DescribeSubnets)."""
    if not subnet_ids:
        return {}
    found = client("ec2", region).describe_subnets(SubnetIds=sorted(set(subnet_ids)))["Subnets"]
    return {str(s["SubnetId"]): {key: str(s[key]) for key in ("VpcId", "AvailabilityZone", "CidrBlock")} for s in found}


def security_group_rules(group_ids: set[str], region: str | None) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Each security group's inbound and outbound rules (EC2 DescribeSecurityGroups)."""
    if not group_ids:
        return {}
    found = client("ec2", region).describe_security_groups(GroupIds=sorted(group_ids))["SecurityGroups"]
    return {
        str(g["GroupId"]): {"in": list(g.get("IpPermissions") or []), "out": list(g.get("IpPermissionsEgress") or [])}
        for g in found
    }
