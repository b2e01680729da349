"""Whether security group rules let a training job reach a file system's ports.

What AWS says, as the check uses it:
- FSx for Lustre: "You must set up the security group to allow inbound traffic on ports 988 and
  1018-1023" (FSx for Lustre user guide, file system access control with Amazon VPC).
- EFS: the mount target's security groups must allow inbound NFS, TCP port 2049, from the
  client (EFS user guide, using VPC security groups); the client's must allow it outbound.
- Security groups are stateful (EC2 user guide: "responses to allowed inbound traffic are allowed
  to flow out"), so the client's egress and the file system's ingress are all that count.
- A rule's source is a security group (UserIdGroupPairs) or an IPv4 range (IpRanges); IpProtocol
  "-1" is every protocol and port. Prefix lists and IPv6 ranges are not counted here: a rule that
  only they satisfy reads as missing, the safe side.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FILE_SYSTEM_PORTS: dict[str, tuple[int, ...]] = {"fsx-lustre": (988, *range(1018, 1024)), "efs": (2049,)}
PORT_NAMES = {"fsx-lustre": "TCP 988 and 1018-1023 (Lustre)", "efs": "TCP 2049 (NFS)"}


@dataclass(frozen=True, slots=True)
class Peer:
    """The other end of a connection: its security groups and its subnet's IPv4 range."""

    groups: frozenset[str]
    cidr: str


def unreached_ports(rules: Iterable[Mapping[str, Any]], ports: Iterable[int], peer: Peer) -> list[int]:
    """The ports of `ports` that no rule of `rules` (IpPermissions or IpPermissionsEgress of the
    groups on one side) opens to `peer`."""
    listed = list(rules)
    return [port for port in ports if not any(_opens(rule, port, peer) for rule in listed)]


def _opens(rule: Mapping[str, Any], port: int, peer: Peer) -> bool:
    protocol = str(rule.get("IpProtocol", ""))
    if protocol not in ("-1", "tcp", "6"):
        return False
    if protocol != "-1" and not int(rule.get("FromPort", -1)) <= port <= int(rule.get("ToPort", -1)):
        return False
    if any(pair.get("GroupId") in peer.groups for pair in rule.get("UserIdGroupPairs") or []):
        return True
    network = ipaddress.IPv4Network(peer.cidr)
    return any(
        network.subnet_of(ipaddress.IPv4Network(str(allowed.get("CidrIp")), strict=False))
        for allowed in rule.get("IpRanges") or []
    )


def ranges(ports: Iterable[int]) -> str:
    """Ports as short ranges: 988, 1018-1023."""
    spans: list[list[int]] = []
    for port in sorted(ports):
        if spans and spans[-1][1] == port - 1:
            spans[-1][1] = port
        else:
            spans.append([port, port])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
