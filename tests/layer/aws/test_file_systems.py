"""The file systems a job mounts, checked as SageMaker needs them (spotline.aws.file_systems):
EFS and EC2 through moto; FSx for Lustre through botocore's Stubber, which checks every answer
against the FSx service model (moto's FSx answers carry no Lifecycle, VpcId or MountName)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from spotline.aws import clients
from spotline.aws.file_systems import mount_plan
from spotline.core.model import InputChannel, JobSpec

REGION = "us-east-1"
FSX = "fs-0123456789abcdef0"


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A VPC with a subnet in us-east-1a and one in us-east-1b, and another VPC with one subnet."""
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

        yield {
            "vpc": vpc,
            "a": subnet(vpc, "10.0.1.0/24", "us-east-1a"),
            "b": subnet(vpc, "10.0.2.0/24", "us-east-1b"),
            "other": subnet(other, "10.1.1.0/24", "us-east-1a"),
        }
        clients.reset_clients()


def _spec(*channels: InputChannel) -> JobSpec:
    from conftest import example_spec

    return replace(example_spec(), inputs=channels)


def _efs_channel(file_system_id: str) -> InputChannel:
    return InputChannel("train", "", file_system_type="efs", file_system_id=file_system_id, file_system_path="/data")


def _efs(subnets: list[str]) -> str:
    efs = boto3.client("efs", region_name=REGION)
    made = efs.create_file_system(CreationToken=f"t-{len(subnets)}-{'-'.join(subnets)}")["FileSystemId"]
    for subnet in subnets:
        efs.create_mount_target(FileSystemId=made, SubnetId=subnet)
    return str(made)


def test_an_efs_file_system_pins_the_job_to_the_zones_of_its_mount_targets(network: dict[str, str]) -> None:
    file_system = _efs([network["b"]])
    plan = mount_plan(_spec(_efs_channel(file_system)), (network["a"], network["b"]))
    assert (plan.problems, plan.subnets, plan.zones) == ([], (network["b"],), ("us-east-1b",))
    assert mount_plan(_spec(_efs_channel(file_system)), ()).subnets is None  # no VPC: refused elsewhere


def test_an_efs_file_system_without_mount_targets_or_in_another_vpc_or_missing_is_refused(
    network: dict[str, str],
) -> None:
    bare = _efs([])
    (problem,) = mount_plan(_spec(_efs_channel(bare)), (network["a"],)).problems
    assert (problem.path, problem.message) == (
        "spec.inputs[0].fileSystem.id",
        f"{bare} cannot be mounted: it has no available mount target",
    )
    elsewhere = _efs([network["other"]])
    (problem,) = mount_plan(_spec(_efs_channel(elsewhere)), (network["a"], network["b"])).problems
    assert problem.path == "spec.inputs[0].fileSystem.id"
    assert "is reached from vpc-" in problem.message and f"(TrainingSubnetIds, in {network['vpc']}) is there" in (
        problem.message
    )
    (problem,) = mount_plan(_spec(_efs_channel("fs-0000000000")), (network["a"],)).problems
    assert problem.message == "fs-0000000000 is not an EFS file system of this region"


def _fsx_answer(network: dict[str, str], **overrides: Any) -> dict[str, Any]:
    described = {
        "FileSystemId": FSX,
        "FileSystemType": "LUSTRE",
        "Lifecycle": "AVAILABLE",
        "VpcId": network["vpc"],
        "SubnetIds": [network["a"]],
        "LustreConfiguration": {"MountName": "abcdwbmv", "DeploymentType": "PERSISTENT_2"},
        **overrides,
    }
    return {"FileSystems": [described]}


def _fsx_plan(network: dict[str, str], path: str, **overrides: Any) -> Any:
    channel = InputChannel("train", "", file_system_type="fsx-lustre", file_system_id=FSX, file_system_path=path)
    with Stubber(clients.client("fsx")) as fsx:
        fsx.add_response("describe_file_systems", _fsx_answer(network, **overrides), {"FileSystemIds": [FSX]})
        return mount_plan(_spec(channel), (network["a"], network["b"]))


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
    assert problem.message == f"{FSX} cannot be mounted: its lifecycle is CREATING, not AVAILABLE"
    (problem,) = _fsx_plan(network, "/abcdwbmv", FileSystemType="ONTAP", LustreConfiguration={}).problems
    assert (problem.path, problem.message) == (
        "spec.inputs[0].fileSystem.type",
        f"{FSX} is an FSx for ONTAP file system; SageMaker mounts FSx for Lustre",
    )
    (problem,) = _fsx_plan(network, "/abcdwbmv", SubnetIds=[network["other"]], VpcId="vpc-0fffffff").problems
    assert "no subnet of the stack (TrainingSubnetIds" in problem.message
