"""Which security group rules let a job's instances talk to each other (and over EFA)."""

from __future__ import annotations

from typing import Any

from spotline.core.training.cluster_network import closed_directions

ALL_FROM_SELF = {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": "sg-jobs"}]}
ALL_TO_ANYWHERE = {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}
TCP_FROM_SELF = {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "UserIdGroupPairs": [{"GroupId": "sg-jobs"}]}


def _rules(inbound: list[dict[str, Any]], outbound: list[dict[str, Any]]) -> dict[str, Any]:
    return {"sg-jobs": {"in": inbound, "out": outbound}}


def test_a_group_that_admits_itself_is_open_both_ways_with_and_without_efa() -> None:
    rules = _rules([ALL_FROM_SELF], [ALL_FROM_SELF])
    assert closed_directions(rules, ["sg-jobs"], efa=False) == []
    assert closed_directions(rules, ["sg-jobs"], efa=True) == []


def test_the_default_egress_serves_plain_tcp_but_not_efa() -> None:
    rules = _rules([ALL_FROM_SELF], [ALL_TO_ANYWHERE])
    assert closed_directions(rules, ["sg-jobs"], efa=False) == []
    assert closed_directions(rules, ["sg-jobs"], efa=True) == ["outbound"]


def test_a_port_rule_is_not_all_traffic_and_no_rule_shuts_both_ways() -> None:
    assert closed_directions(_rules([TCP_FROM_SELF], [ALL_FROM_SELF]), ["sg-jobs"], efa=False) == ["inbound"]
    assert closed_directions(_rules([], []), ["sg-jobs"], efa=True) == ["inbound", "outbound"]


def test_a_rule_of_one_group_naming_another_of_the_job_counts() -> None:
    """Every instance carries all the VpcConfig's groups."""
    rules = {
        "sg-jobs": {"in": [], "out": [ALL_TO_ANYWHERE]},
        "sg-cluster": {"in": [ALL_FROM_SELF], "out": [ALL_FROM_SELF]},
    }
    assert closed_directions(rules, ["sg-jobs", "sg-cluster"], efa=True) == []
    assert closed_directions(rules, ["sg-cluster"], efa=True) == ["inbound", "outbound"]
