"""The file systems a job mounts, checked as SageMaker needs them (spotline.aws.datasets.file_systems):
EFS and EC2 (subnets, security groups, network interfaces) through moto; FSx for Lustre through
botocore's Stubber, which checks every answer against the FSx service model (moto's FSx answers
carry no Lifecycle, VpcId or MountName)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from spotline.aws.common import clients
from spotline.aws.datasets.file_systems import mount_plan
from spotline.core.spec.model import InputChannel, JobSpec

REGION = "us-east-1"
FSX = "fs-0123456789abcdef0"


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A VPC with a subnet in us-east-1a and one in us-east-1b, the stack's training security
    group `job` and a file-system group `fs` open to it on Lustre's and NFS's ports, and another
    VPC with one subnet."""
    for name, value in {"AWS_ACCESS_KEY_ID": "t", "AWS_SECRET_ACCESS_KEY": "t", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        clients.reset_clients()
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        other = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]

        def subnet(vpc_id: str, cidr: str, zone: str) -> str:
            made = ec2.create_subnet(VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=zone)
            return str(made["Subnet"]["SubnetId"])

        job = ec2.create_security_group(GroupName="job", Description="training", VpcId=vpc)["GroupId"]
        fs = _group(ec2, vpc, "fs", [_tcp(port, {"UserIdGroupPairs": [{"GroupId": job}]}) for port in (988, 2049)])
        ec2.authorize_security_group_ingress(
            GroupId=fs, IpPermissions=[_tcp((1018, 1023), {"UserIdGroupPairs": [{"GroupId": job}]})]
        )
        yield {
            "vpc": vpc,
            "a": subnet(vpc, "10.0.1.0/24", "us-east-1a"),
            "b": subnet(vpc, "10.0.2.0/24", "us-east-1b"),
            "other": subnet(other, "10.1.1.0/24", "us-east-1a"),
            "job": job,
            "fs": fs,
        }
        clients.reset_clients()


def _tcp(ports: int | tuple[int, int], source: dict[str, Any]) -> dict[str, Any]:
    low, high = ports if isinstance(ports, tuple) else (ports, ports)
    return {"IpProtocol": "tcp", "FromPort": low, "ToPort": high, **source}


def _group(ec2: Any, vpc: str, name: str, inbound: list[dict[str, Any]]) -> str:
    group = str(ec2.create_security_group(GroupName=name, Description=name, VpcId=vpc)["GroupId"])
    if inbound:
        ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=inbound)
    return group


def _spec(*channels: InputChannel) -> JobSpec:
    from conftest import example_spec

    return replace(example_spec(), inputs=channels)


def _efs_channel(file_system_id: str) -> InputChannel:
    return InputChannel("train", "", file_system_type="efs", file_system_id=file_system_id, file_system_path="/data")


def _efs(subnets: list[str], groups: dict[str, str] | None = None) -> str:
    """An EFS file system with a mount target in each of `subnets`, in the security group that
    `groups` gives for that subnet."""
    efs = boto3.client("efs", region_name=REGION)
    made = efs.create_file_system(CreationToken=f"t-{len(subnets)}-{'-'.join(subnets)}")["FileSystemId"]
    for subnet in subnets:
        efs.create_mount_target(FileSystemId=made, SubnetId=subnet, SecurityGroups=[(groups or {})[subnet]])
    return str(made)


def test_an_efs_file_system_pins_the_job_to_the_zones_of_its_mount_targets(network: dict[str, str]) -> None:
    file_system = _efs([network["b"]], {network["b"]: network["fs"]})
    plan = mount_plan(_spec(_efs_channel(file_system)), (network["a"], network["b"]), (network["job"],))
    assert (plan.problems, plan.subnets, plan.zones) == ([], (network["b"],), ("us-east-1b",))
    assert mount_plan(_spec(_efs_channel(file_system)), ()).subnets is None  # no VPC: refused elsewhere


def test_a_mount_target_whose_security_group_admits_no_nfs_from_the_jobs_leaves_its_zone_out(
    network: dict[str, str],
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    ssh_only = _group(ec2, network["vpc"], "ssh-only", [_tcp(22, {"UserIdGroupPairs": [{"GroupId": network["job"]}]})])
    file_system = _efs([network["a"], network["b"]], {network["a"]: ssh_only, network["b"]: network["fs"]})
    plan = mount_plan(_spec(_efs_channel(file_system)), (network["a"], network["b"]), (network["job"],))
    assert (plan.problems, plan.subnets) == ([], (network["b"],))  # us-east-1a's mount target is closed
    closed = _efs([network["a"]], {network["a"]: ssh_only})
    (problem,) = mount_plan(_spec(_efs_channel(closed)), (network["a"], network["b"]), (network["job"],)).problems
    assert (problem.path, problem.message) == (
        "spec.inputs[0].fileSystem.id",
        f"{closed}'s security groups ({ssh_only}) do not admit TCP 2049 (NFS) from the stack's "
        f"TrainingSecurityGroupIds ({network['job']}) or 10.0.1.0/24: port 2049 closed",
    )


def test_a_rule_for_the_jobs_subnet_range_admits_them_and_closed_egress_refuses_them(network: dict[str, str]) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    by_range = _group(ec2, network["vpc"], "by-range", [_tcp(2049, {"IpRanges": [{"CidrIp": "10.0.0.0/16"}]})])
    file_system = _efs([network["a"]], {network["a"]: by_range})
    plan = mount_plan(_spec(_efs_channel(file_system)), (network["a"],), (network["job"],))
    assert (plan.problems, plan.subnets) == ([], (network["a"],))
    ec2.revoke_security_group_egress(
        GroupId=network["job"], IpPermissions=[{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]
    )
    (problem,) = mount_plan(_spec(_efs_channel(file_system)), (network["a"],), (network["job"],)).problems
    assert problem.message == (
        f"the stack's TrainingSecurityGroupIds ({network['job']}) do not allow TCP 2049 (NFS) out to "
        f"{file_system} ({by_range}, 10.0.1.0/24): port 2049 closed"
    )


def test_an_efs_file_system_without_mount_targets_or_in_another_vpc_or_missing_is_refused(
    network: dict[str, str],
) -> None:
    bare = _efs([])
    (problem,) = mount_plan(_spec(_efs_channel(bare)), (network["a"],)).problems
    assert (problem.path, problem.message) == (
        "spec.inputs[0].fileSystem.id",
        f"{bare} cannot be mounted: it has no available mount target",
    )
    elsewhere = _efs(
        [network["other"]],
        {network["other"]: _group(boto3.client("ec2", region_name=REGION), _vpc_of(network["other"]), "o", [])},
    )
    (problem,) = mount_plan(_spec(_efs_channel(elsewhere)), (network["a"], network["b"])).problems
    assert problem.path == "spec.inputs[0].fileSystem.id"
    assert "is reached from vpc-" in problem.message and f"(TrainingSubnetIds, in {network['vpc']}) is there" in (
        problem.message
    )
    (problem,) = mount_plan(_spec(_efs_channel("fs-0000000000")), (network["a"],)).problems
    assert problem.message == "fs-0000000000 is not an EFS file system of this region"


def _vpc_of(subnet: str) -> str:
    (found,) = boto3.client("ec2", region_name=REGION).describe_subnets(SubnetIds=[subnet])["Subnets"]
    return str(found["VpcId"])


def _fsx_answer(network: dict[str, str], **overrides: Any) -> dict[str, Any]:
    interface = boto3.client("ec2", region_name=REGION).create_network_interface(
        SubnetId=network["a"], Groups=[overrides.pop("group", network["fs"])]
    )["NetworkInterface"]["NetworkInterfaceId"]
    described = {
        "FileSystemId": FSX,
        "FileSystemType": "LUSTRE",
        "Lifecycle": "AVAILABLE",
        "VpcId": network["vpc"],
        "SubnetIds": [network["a"]],
        "NetworkInterfaceIds": [interface],
        "LustreConfiguration": {"MountName": "abcdwbmv", "DeploymentType": "PERSISTENT_2"},
        **overrides,
    }
    return {"FileSystems": [described]}


def _fsx_plan(network: dict[str, str], path: str, **overrides: Any) -> Any:
    channel = InputChannel("train", "", file_system_type="fsx-lustre", file_system_id=FSX, file_system_path=path)
    with Stubber(clients.client("fsx")) as fsx:
        fsx.add_response("describe_file_systems", _fsx_answer(network, **overrides), {"FileSystemIds": [FSX]})
        return mount_plan(_spec(channel), (network["a"], network["b"]), (network["job"],))


def test_an_fsx_file_system_being_updated_is_mounted(network: dict[str, str]) -> None:
    """FSx Lifecycle UPDATING: "The file system is undergoing a customer-initiated update"; clients'
    file operations meanwhile "transparently retry and eventually succeed" (Lustre user guide)."""
    plan = _fsx_plan(network, "/abcdwbmv/clicks/train", Lifecycle="UPDATING")
    assert (plan.problems, plan.subnets) == ([], (network["a"],))


def test_an_fsx_for_lustre_file_system_pins_the_job_to_its_zone_and_its_path_to_its_mount_name(
    network: dict[str, str],
) -> None:
    plan = _fsx_plan(network, "/abcdwbmv/clicks/train")
    assert (plan.problems, plan.subnets, plan.zones) == ([], (network["a"],), ("us-east-1a",))
    (problem,) = _fsx_plan(network, "/clicks/train").problems
    assert (problem.path, problem.message) == (
        "spec.inputs[0].fileSystem.path",
        "/clicks/train: an FSx for Lustre path begins with the file system's mount name, /abcdwbmv",
    )
    (problem,) = _fsx_plan(network, "/abcdwbmv", Lifecycle="CREATING").problems
    assert problem.message == f"{FSX} cannot be mounted: its lifecycle is CREATING, not AVAILABLE or UPDATING"
    (problem,) = _fsx_plan(network, "/abcdwbmv", FileSystemType="ONTAP", LustreConfiguration={}).problems
    assert (problem.path, problem.message) == (
        "spec.inputs[0].fileSystem.type",
        f"{FSX} is an FSx for ONTAP file system; SageMaker mounts FSx for Lustre",
    )
    (problem,) = _fsx_plan(network, "/abcdwbmv", SubnetIds=[network["other"]], VpcId="vpc-0fffffff").problems
    assert "no subnet of the stack (TrainingSubnetIds" in problem.message


def test_an_fsx_for_lustre_file_system_needs_every_lustre_port_open_to_the_jobs(network: dict[str, str]) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    only_988 = _group(ec2, network["vpc"], "988", [_tcp(988, {"UserIdGroupPairs": [{"GroupId": network["job"]}]})])
    (problem,) = _fsx_plan(network, "/abcdwbmv", group=only_988).problems
    assert problem.message.endswith(": ports 1018-1023 closed")
    everything = _group(
        ec2, network["vpc"], "all", [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": network["job"]}]}]
    )
    assert _fsx_plan(network, "/abcdwbmv", group=everything).problems == []
