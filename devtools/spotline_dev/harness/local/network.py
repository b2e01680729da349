"""The VPC the local stack's training jobs run in, in its region and each peer region: what a
platform team gives as TrainingSubnetIds and TrainingSecurityGroupIds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def build_network(session: Any, region: str) -> dict[str, Any]:
    """A VPC for the stack's training jobs: a subnet in each of two zones and a security group
    (moto's EC2), as a platform team gives TrainingSubnetIds and TrainingSecurityGroupIds. The group
    admits itself both ways, all traffic, as jobs of many instances need (and EFA: "An EFA requires
    a security group that allows all inbound and outbound traffic to and from the security group
    itself", EC2 user guide)."""
    ec2 = session.client("ec2", region_name=region)
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    subnets = {
        zone: ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for zone, cidr in ((f"{region}a", "10.20.1.0/24"), (f"{region}b", "10.20.2.0/24"))
    }
    group = ec2.create_security_group(GroupName="spotline-training", Description="training jobs", VpcId=vpc)["GroupId"]
    itself = [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group}]}]
    ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=itself)
    ec2.authorize_security_group_egress(GroupId=group, IpPermissions=itself)
    return {"vpc": vpc, "subnets": subnets, "group": group}


def network_parameters(network: Mapping[str, Any]) -> dict[str, str]:
    return {"TrainingSubnetIds": ",".join(network["subnets"].values()), "TrainingSecurityGroupIds": network["group"]}
