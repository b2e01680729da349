"""Security group rules read as EC2 applies them (spotline.core.datasets.network_reach)."""

from __future__ import annotations

from typing import Any

import pytest

from spotline.core.datasets.network_reach import FILE_SYSTEM_PORTS, Peer, ranges, unreached_ports

JOB = Peer(frozenset({"sg-job"}), "10.0.1.0/24")


def _rule(protocol: str, low: int | None = None, high: int | None = None, **source: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {"IpProtocol": protocol, **source}
    if low is not None:
        rule |= {"FromPort": low, "ToPort": high if high is not None else low}
    return rule


@pytest.mark.parametrize(
    ("rules", "closed"),
    [
        ([], [988, 1018, 1019, 1020, 1021, 1022, 1023]),
        ([_rule("tcp", 988, UserIdGroupPairs=[{"GroupId": "sg-job"}])], [1018, 1019, 1020, 1021, 1022, 1023]),
        (
            [
                _rule("tcp", 988, UserIdGroupPairs=[{"GroupId": "sg-job"}]),
                _rule("6", 1018, 1020, IpRanges=[{"CidrIp": "10.0.0.0/16"}]),
                _rule("tcp", 1021, 1023, UserIdGroupPairs=[{"GroupId": "sg-job"}]),
            ],
            [],
        ),
        ([_rule("-1", UserIdGroupPairs=[{"GroupId": "sg-job"}])], []),
        ([_rule("-1", IpRanges=[{"CidrIp": "0.0.0.0/0"}])], []),
        # UDP, another group, a narrower range than the job's subnet: none opens a Lustre port.
        ([_rule("udp", 0, 65535, UserIdGroupPairs=[{"GroupId": "sg-job"}])], list(FILE_SYSTEM_PORTS["fsx-lustre"])),
        ([_rule("tcp", 0, 65535, UserIdGroupPairs=[{"GroupId": "sg-other"}])], list(FILE_SYSTEM_PORTS["fsx-lustre"])),
        ([_rule("tcp", 0, 65535, IpRanges=[{"CidrIp": "10.0.1.0/25"}])], list(FILE_SYSTEM_PORTS["fsx-lustre"])),
        ([_rule("tcp", 0, 65535, PrefixListIds=[{"PrefixListId": "pl-1"}])], list(FILE_SYSTEM_PORTS["fsx-lustre"])),
    ],
)
def test_each_lustre_port_needs_a_tcp_rule_from_the_jobs_group_or_a_range_holding_its_subnet(
    rules: list[dict[str, Any]], closed: list[int]
) -> None:
    assert unreached_ports(rules, FILE_SYSTEM_PORTS["fsx-lustre"], JOB) == closed


def test_ports_read_as_short_ranges() -> None:
    assert ranges([1023, 988, 1018, 1019, 1020, 1021, 1022]) == "988, 1018-1023"
    assert ranges([2049]) == "2049"
