"""The file systems a job's channels mount (FSx for Lustre, EFS), checked as SageMaker will need
them, and the subnets of the stack the job must run in to reach them.

What AWS imposes, as the checks use it:
- SageMaker mounts a file system only for a job in a VPC that reaches it (the job's VpcConfig).
- An FSx for Lustre file system lives in one subnet, hence one Availability Zone (FSx
  CreateFileSystem, SubnetIds: "For deployment types other than MULTI_AZ, provide exactly one
  subnet ID"); its paths begin with its mount name (FSx Lustre user guide, mounting:
  "/mountname"). SageMaker mounts FSx for Lustre only (FileSystemType FSxLustre): not ONTAP,
  OpenZFS or Windows.
- An EFS file system is reached through a mount target in the client's Availability Zone (EFS
  user guide: "create one mount target in each Availability Zone").
- A file system is usable once available: FSx Lifecycle AVAILABLE or UPDATING, EFS LifeCycleState
  available (and the mount target's). FSx API reference, FileSystem.Lifecycle: "UPDATING - The file
  system is undergoing a customer-initiated update"; FSx for Lustre user guide, "Managing storage
  capacity": while scaling "the file system status is set to UPDATING", and "File operations issued
  by clients while the file system is unavailable will transparently retry and eventually succeed".
  CREATING, FAILED, DELETING and MISCONFIGURED* are refused.
- The job's security groups are the stack's (TrainingSecurityGroupIds); the file system's are
  those of its network interfaces (FSx DescribeFileSystems NetworkInterfaceIds, EC2
  DescribeNetworkInterfaces) or of its mount target (EFS DescribeMountTargetSecurityGroups). A
  subnet serves the job only where the rules open the file system's ports both ways
  (spotline.core.datasets.network_reach).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spotline.aws.common.clients import client, error_code
from spotline.aws.common.vpc import security_group_rules, subnets_of
from spotline.core.common.errors import ManifestError
from spotline.core.datasets.network_reach import FILE_SYSTEM_PORTS, PORT_NAMES, Peer, ranges, unreached_ports
from spotline.core.spec.model import InputChannel, JobSpec

NOT_FOUND = {"FileSystemNotFound"}
KINDS = {"fsx-lustre": "FSx for Lustre", "efs": "EFS"}

FSX_USABLE = frozenset({"AVAILABLE", "UPDATING"})
"""FSx lifecycles a job may mount in (an update keeps the file system usable; see above)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a job reaches a file system in one Availability Zone."""

    subnet_id: str
    cidr: str
    groups: frozenset[str]  # the security groups of its network interface(s)


@dataclass(frozen=True, slots=True)
class FileSystemView:
    """A file system as its service describes it: where it can be reached from."""

    file_system_id: str
    unavailable: str | None  # why it cannot be mounted now; None: it can
    vpc_id: str | None
    endpoints: Mapping[str, Endpoint]  # by the Availability Zone a job can reach it from
    mount_name: str | None = None  # FSx for Lustre
    other_type: str | None = None  # FSx: a type SageMaker does not mount (ONTAP, OPENZFS, WINDOWS)

    @property
    def zones(self) -> frozenset[str]:
        return frozenset(self.endpoints)


@dataclass(frozen=True, slots=True)
class MountPlan:
    """The job's mounts checked: what is wrong, and the stack's subnets that reach every file
    system the job mounts (None when it mounts none: the stack's subnets as they are)."""

    problems: list[ManifestError]
    subnets: tuple[str, ...] | None
    zones: tuple[str, ...] = ()


def describe(channel: InputChannel, region: str | None = None) -> FileSystemView | None:
    """The channel's file system as FSx or EFS describes it; None when it does not exist."""
    file_system_id = str(channel.file_system_id)
    try:
        if channel.file_system_type == "fsx-lustre":
            return _fsx(file_system_id, region)
        return _efs(file_system_id, region)
    except Exception as exc:
        if error_code(exc) in NOT_FOUND:
            return None
        raise


def _fsx(file_system_id: str, region: str | None) -> FileSystemView:
    (found,) = client("fsx", region).describe_file_systems(FileSystemIds=[file_system_id])["FileSystems"]
    interfaces = list(found.get("NetworkInterfaceIds") or [])
    groups = frozenset(
        str(group["GroupId"])
        for interface in (
            client("ec2", region).describe_network_interfaces(NetworkInterfaceIds=interfaces)["NetworkInterfaces"]
            if interfaces
            else []
        )
        for group in interface.get("Groups") or []
    )
    endpoints = {
        info["AvailabilityZone"]: Endpoint(subnet, info["CidrBlock"], groups)
        for subnet, info in subnets_of(list(found.get("SubnetIds") or []), region).items()
    }
    state = str(found.get("Lifecycle") or "unknown")
    kind = str(found.get("FileSystemType") or "")
    return FileSystemView(
        file_system_id,
        None if state in FSX_USABLE else f"its lifecycle is {state}, not AVAILABLE or UPDATING",
        found.get("VpcId"),
        endpoints,
        mount_name=(found.get("LustreConfiguration") or {}).get("MountName"),
        other_type=None if kind == "LUSTRE" else kind,
    )


def _efs(file_system_id: str, region: str | None) -> FileSystemView:
    efs = client("efs", region)
    (found,) = efs.describe_file_systems(FileSystemId=file_system_id)["FileSystems"]
    targets = efs.describe_mount_targets(FileSystemId=file_system_id).get("MountTargets") or []
    usable = [t for t in targets if t.get("LifeCycleState") == "available"]
    state = str(found.get("LifeCycleState") or "unknown")
    if state != "available":
        unavailable: str | None = f"its state is {state}, not available"
    else:
        unavailable = None if usable else "it has no available mount target"
    subnets = subnets_of([str(t["SubnetId"]) for t in usable], region)
    endpoints = {
        subnets[str(t["SubnetId"])]["AvailabilityZone"]: Endpoint(
            str(t["SubnetId"]),
            subnets[str(t["SubnetId"])]["CidrBlock"],
            frozenset(efs.describe_mount_target_security_groups(MountTargetId=t["MountTargetId"])["SecurityGroups"]),
        )
        for t in usable
    }
    return FileSystemView(
        file_system_id,
        unavailable,
        str(usable[0]["VpcId"]) if usable and usable[0].get("VpcId") else None,
        endpoints,
    )


def mount_plan(
    spec: JobSpec, stack_subnets: tuple[str, ...], stack_groups: tuple[str, ...] = (), region: str | None = None
) -> MountPlan:
    """Every file-system channel of `spec` checked against its file system, the stack's subnets
    and its security groups (those of the stack in `region`, default this one's); the subnets the
    job must run in to reach them all."""
    mounted = [(index, channel) for index, channel in enumerate(spec.inputs) if channel.on_file_system]
    if not mounted or not stack_subnets:
        return MountPlan([], None)
    subnets = subnets_of(list(stack_subnets), region)
    usable = set(subnets)
    problems: list[ManifestError] = []
    for index, channel in mounted:
        where = f"spec.inputs[{index}].fileSystem"
        view = describe(channel, region)
        problems += _problems(where, channel, view)
        if view is None or problems:
            continue
        reach = {
            s for s, info in subnets.items() if info["VpcId"] == view.vpc_id and info["AvailabilityZone"] in view.zones
        }
        if not reach:
            in_vpc = sorted({info["VpcId"] for info in subnets.values()})
            problems.append(
                ManifestError(
                    f"{where}.id",
                    f"{view.file_system_id} is reached from {view.vpc_id} in "
                    f"{', '.join(sorted(view.zones)) or 'no zone'}, and no subnet of the stack "
                    f"(TrainingSubnetIds, in {', '.join(in_vpc)}) is there",
                )
            )
            continue
        rules = security_group_rules(set(stack_groups).union(*(e.groups for e in view.endpoints.values())), region)
        closed = {s: why for s in sorted(reach) if (why := _closed(channel, view, subnets[s], stack_groups, rules))}
        if len(closed) == len(reach):
            problems.append(ManifestError(f"{where}.id", next(iter(closed.values()))))
        elif not (reach - set(closed)) & usable:
            problems.append(
                ManifestError(f"{where}.id", "no subnet of the stack reaches this file system and the job's others too")
            )
        usable &= reach - set(closed)
    if problems:
        return MountPlan(problems, None)
    chosen = tuple(s for s in stack_subnets if s in usable)
    return MountPlan([], chosen, tuple(sorted({subnets[s]["AvailabilityZone"] for s in chosen})))


def _closed(
    channel: InputChannel,
    view: FileSystemView,
    subnet: Mapping[str, str],
    stack_groups: tuple[str, ...],
    rules: Mapping[str, Mapping[str, list[dict[str, Any]]]],
) -> str:
    """Why the security groups keep a job in `subnet` from the file system; empty when they do not."""
    kind = str(channel.file_system_type)
    ports, endpoint = FILE_SYSTEM_PORTS[kind], view.endpoints[subnet["AvailabilityZone"]]
    inbound = [rule for group in endpoint.groups for rule in rules.get(group, {}).get("in", [])]
    outbound = [rule for group in stack_groups for rule in rules.get(group, {}).get("out", [])]
    job, file_system = Peer(frozenset(stack_groups), subnet["CidrBlock"]), Peer(endpoint.groups, endpoint.cidr)
    theirs, ours = ", ".join(sorted(endpoint.groups)) or "none", ", ".join(stack_groups) or "none"
    if shut := unreached_ports(inbound, ports, job):
        return (
            f"{view.file_system_id}'s security groups ({theirs}) do not admit {PORT_NAMES[kind]} from the stack's "
            f"TrainingSecurityGroupIds ({ours}) or {subnet['CidrBlock']}: {_ports(shut)} closed"
        )
    if shut := unreached_ports(outbound, ports, file_system):
        return (
            f"the stack's TrainingSecurityGroupIds ({ours}) do not allow {PORT_NAMES[kind]} out to "
            f"{view.file_system_id} ({theirs}, {endpoint.cidr}): {_ports(shut)} closed"
        )
    return ""


def _problems(where: str, channel: InputChannel, view: FileSystemView | None) -> list[ManifestError]:
    kind = KINDS[str(channel.file_system_type)]
    if view is None:
        return [ManifestError(f"{where}.id", f"{channel.file_system_id} is not an {kind} file system of this region")]
    if view.other_type:
        return [
            ManifestError(
                f"{where}.type",
                f"{view.file_system_id} is an FSx for {view.other_type} file system; SageMaker mounts FSx for Lustre",
            )
        ]
    if view.unavailable:
        return [ManifestError(f"{where}.id", f"{view.file_system_id} cannot be mounted: {view.unavailable}")]
    path, mount = str(channel.file_system_path), view.mount_name
    if mount and path != f"/{mount}" and not path.startswith(f"/{mount}/"):
        return [
            ManifestError(
                f"{where}.path", f"{path}: an FSx for Lustre path begins with the file system's mount name, /{mount}"
            )
        ]
    return []


def _ports(ports: list[int]) -> str:
    return f"port{'s' if len(ports) > 1 else ''} {ranges(ports)}"
