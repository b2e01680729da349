"""Whether a multi-instance job's security groups let its instances talk to each other (pure).

What AWS says, as the check uses it:
- "In distributed training, you must allow communication between the different containers in the
  same training job. To do that, configure a rule for your security group that allows inbound
  connections between members of the same security group" (SageMaker developer guide, "Give
  SageMaker training jobs access to resources in your Amazon VPC", Configure the VPC security group).
  Collective libraries (NCCL, MPI) open ports of their own choosing, so the rule counted is one
  for all traffic (IpProtocol "-1").
- EFA: "An EFA requires a security group that allows all inbound and outbound traffic to and from
  the security group itself" (EC2 user guide, "Get started with EFA and MPI", step 1: prepare an
  EFA-enabled security group). EFA's OS-bypass traffic is not IP, so an outbound rule to
  0.0.0.0/0 does not stand in for the rule to the group (EKS user guide, cluster security group:
  "an outbound rule that allows Elastic Fabric Adapter (EFA) traffic with the destination of the
  same security group").
- The instances carry every group of the job's VpcConfig, so a rule of any of them that names any
  of them counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def _all_traffic_with(rule: Mapping[str, Any], groups: frozenset[str]) -> bool:
    return str(rule.get("IpProtocol")) == "-1" and any(
        pair.get("GroupId") in groups for pair in rule.get("UserIdGroupPairs") or []
    )


def _all_traffic_out(rule: Mapping[str, Any]) -> bool:
    return str(rule.get("IpProtocol")) == "-1" and any(
        str(r.get("CidrIp")) == "0.0.0.0/0" for r in rule.get("IpRanges") or []
    )


def closed_directions(
    rules: Mapping[str, Mapping[str, Iterable[Mapping[str, Any]]]], groups: Iterable[str], efa: bool
) -> list[str]:
    """What `groups` (their rules: {group: {"in": IpPermissions, "out": IpPermissionsEgress}}) do not
    allow between the job's own instances: "inbound", "outbound", both, or nothing."""
    own = frozenset(groups)
    inbound = [rule for group in own for rule in rules.get(group, {}).get("in", [])]
    outbound = [rule for group in own for rule in rules.get(group, {}).get("out", [])]
    closed = []
    if not any(_all_traffic_with(rule, own) for rule in inbound):
        closed.append("inbound")
    if not any(_all_traffic_with(rule, own) or (not efa and _all_traffic_out(rule)) for rule in outbound):
        closed.append("outbound")
    return closed
