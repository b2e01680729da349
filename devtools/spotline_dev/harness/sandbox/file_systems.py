"""The file systems a scenario's manifests mount, played in the local stack's VPC: an FSx for
Lustre file system in the first zone's subnet (its mount name the path's first segment), an EFS
one with a mount target in every zone. Each has its own security group (moto's EC2) that admits
its ports from the stack's training security group, as the FSx and EFS guides set them up; an
FSx one has a network interface in that group. Scenario `missing:` takes
`spec.inputs[N].fileSystem` for one the account lacks; `closed` (tests) leaves that one's group
without rules."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from spotline.core.datasets.network_reach import FILE_SYSTEM_PORTS
from spotline.core.regions.replicas import Replicas, file_system_uri, mounted_at, replica_of
from spotline.core.spec.model import JobSpec
from spotline_dev.harness.sandbox.scenario import ScenarioError
from spotline_dev.harness.standin.file_systems import FileSystemRecord, MountTarget

if TYPE_CHECKING:
    from spotline_dev.harness.local.handles import LocalStack


def needs_vpc(specs: Collection[JobSpec | None]) -> bool:
    """Whether any of the jobs mounts a file system or is a distributed job of many instances (then
    the stack needs a VPC: the file system's subnets, or one zone's subnets per attempt)."""
    return any(
        any(channel.on_file_system for channel in spec.inputs) or (spec.distribution is not None and spec.multi_node)
        for spec in specs
        if spec
    )


def check_zones(zones: Collection[str], region: str, in_vpc: bool) -> None:
    """Scenario `zones:` names zones the played stack's VPC has, and only for jobs in it."""
    if zones and not in_vpc:
        raise ScenarioError(
            "zones: a zone's capacity reaches only the jobs in the stack's VPC, those that mount a file "
            "system or run distributed on many instances; no manifest of this scenario does"
        )
    there = (f"{region}a", f"{region}b")
    if unknown := sorted(set(zones) - set(there)):
        raise ScenarioError(f"zones.{unknown[0]}: the sandbox's VPC has subnets in {' and '.join(there)} only")


def play_file_systems(
    stack: LocalStack,
    spec: JobSpec,
    missing: Collection[str] = (),
    closed: Collection[str] = (),
    *,
    region: str | None = None,
    replicas: Replicas | None = None,
) -> None:
    """The file systems `spec` mounts, at home; in a peer `region`, their `replicas` there."""
    assert stack.file_systems is not None
    peer = region not in (None, stack.region)
    ec2 = stack.session.client("ec2", region_name=region) if peer else stack.client("ec2")
    network = stack.peer_networks[str(region)] if peer else stack.network
    for index, named in enumerate(spec.inputs):
        where = f"spec.inputs[{index}].fileSystem"
        if not named.on_file_system or where in missing:
            continue
        mapped = replica_of(file_system_uri(named), str(region), replicas or {}) if peer else None
        if peer and mapped is None:
            continue
        channel = mounted_at(named, mapped) if mapped else named
        kind, file_system_id = str(channel.file_system_type), str(channel.file_system_id)
        zones = sorted(network["subnets"])
        lustre = kind == "fsx-lustre"
        targets = [
            MountTarget(network["subnets"][zone], network["vpc"], zone) for zone in (zones[:1] if lustre else zones)
        ]
        group = ec2.create_security_group(
            GroupName=f"spotline-{file_system_id}", Description=f"{file_system_id} clients", VpcId=network["vpc"]
        )["GroupId"]
        if where not in closed:
            ec2.authorize_security_group_ingress(
                GroupId=group,
                IpPermissions=[
                    {
                        "IpProtocol": "tcp",
                        "FromPort": port,
                        "ToPort": port,
                        "UserIdGroupPairs": [{"GroupId": network["group"]}],
                    }
                    for port in FILE_SYSTEM_PORTS[kind]
                ],
            )
        interfaces = (
            [
                ec2.create_network_interface(SubnetId=targets[0].subnet_id, Groups=[group])["NetworkInterface"][
                    "NetworkInterfaceId"
                ]
            ]
            if lustre
            else []
        )
        mount_name = str(channel.file_system_path).strip("/").split("/")[0] if lustre else None
        stack.file_systems.register(
            FileSystemRecord(
                file_system_id,
                kind,
                network["vpc"],
                targets,
                mount_name,
                security_groups=[] if lustre else [group],
                network_interfaces=interfaces,
                region=str(region) if peer else "",
            )
        )
