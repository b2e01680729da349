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
- A file system is usable once available: FSx Lifecycle AVAILABLE, EFS LifeCycleState available
  (and the mount target's).
Security groups are the stack's (TrainingSecurityGroupIds); whether their rules reach the file
system's ports (Lustre 988, NFS 2049) is not checked here.
"""

from __future__ import annotations

from dataclasses import dataclass

from spotline.aws.clients import client, error_code
from spotline.core.errors import ManifestError
from spotline.core.model import InputChannel, JobSpec

NOT_FOUND = {"FileSystemNotFound"}
KINDS = {"fsx-lustre": "FSx for Lustre", "efs": "EFS"}


@dataclass(frozen=True, slots=True)
class FileSystemView:
    """A file system as its service describes it: where it can be reached from."""

    file_system_id: str
    unavailable: str | None  # why it cannot be mounted now; None: it can
    vpc_id: str | None
    zones: frozenset[str]  # the Availability Zones a job can reach it from
    mount_name: str | None = None  # FSx for Lustre
    other_type: str | None = None  # FSx: a type SageMaker does not mount (ONTAP, OPENZFS, WINDOWS)


@dataclass(frozen=True, slots=True)
class MountPlan:
    """The job's mounts checked: what is wrong, and the stack's subnets that reach every file
    system the job mounts (None when it mounts none: the stack's subnets as they are)."""

    problems: list[ManifestError]
    subnets: tuple[str, ...] | None
    zones: tuple[str, ...] = ()


def describe(channel: InputChannel) -> FileSystemView | None:
    """The channel's file system as FSx or EFS describes it; None when it does not exist."""
    file_system_id = str(channel.file_system_id)
    try:
        if channel.file_system_type == "fsx-lustre":
            return _fsx(file_system_id)
        return _efs(file_system_id)
    except Exception as exc:
        if error_code(exc) in NOT_FOUND:
            return None
        raise


def _fsx(file_system_id: str) -> FileSystemView:
    (found,) = client("fsx").describe_file_systems(FileSystemIds=[file_system_id])["FileSystems"]
    subnets = list(found.get("SubnetIds") or [])
    zones = {str(s["AvailabilityZone"]) for s in _subnets(subnets).values()} if subnets else set()
    state = str(found.get("Lifecycle") or "unknown")
    kind = str(found.get("FileSystemType") or "")
    return FileSystemView(
        file_system_id,
        None if state == "AVAILABLE" else f"its lifecycle is {state}, not AVAILABLE",
        found.get("VpcId"),
        frozenset(zones),
        mount_name=(found.get("LustreConfiguration") or {}).get("MountName"),
        other_type=None if kind == "LUSTRE" else kind,
    )


def _efs(file_system_id: str) -> FileSystemView:
    efs = client("efs")
    (found,) = efs.describe_file_systems(FileSystemId=file_system_id)["FileSystems"]
    targets = efs.describe_mount_targets(FileSystemId=file_system_id).get("MountTargets") or []
    usable = [t for t in targets if t.get("LifeCycleState") == "available"]
    state = str(found.get("LifeCycleState") or "unknown")
    if state != "available":
        unavailable: str | None = f"its state is {state}, not available"
    else:
        unavailable = None if usable else "it has no available mount target"
    return FileSystemView(
        file_system_id,
        unavailable,
        str(usable[0]["VpcId"]) if usable and usable[0].get("VpcId") else None,
        frozenset(str(t["AvailabilityZoneName"]) for t in usable if t.get("AvailabilityZoneName")),
    )


def _subnets(subnet_ids: list[str]) -> dict[str, dict[str, str]]:
    """Each subnet's VPC and Availability Zone (EC2 DescribeSubnets)."""
    if not subnet_ids:
        return {}
    found = client("ec2").describe_subnets(SubnetIds=subnet_ids)["Subnets"]
    return {
        str(s["SubnetId"]): {"VpcId": str(s["VpcId"]), "AvailabilityZone": str(s["AvailabilityZone"])} for s in found
    }


def mount_plan(spec: JobSpec, stack_subnets: tuple[str, ...]) -> MountPlan:
    """Every file-system channel of `spec` checked against its file system and the stack's
    subnets; the subnets the job must run in to reach them all."""
    mounted = [(index, channel) for index, channel in enumerate(spec.inputs) if channel.on_file_system]
    if not mounted or not stack_subnets:
        return MountPlan([], None)
    subnets = _subnets(list(stack_subnets))
    usable = set(subnets)
    problems: list[ManifestError] = []
    for index, channel in mounted:
        where = f"spec.inputs[{index}].fileSystem"
        view = describe(channel)
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
        elif not reach & usable:
            problems.append(
                ManifestError(f"{where}.id", "no subnet of the stack reaches this file system and the job's others too")
            )
        usable &= reach
    if problems:
        return MountPlan(problems, None)
    chosen = tuple(s for s in stack_subnets if s in usable)
    return MountPlan([], chosen, tuple(sorted({subnets[s]["AvailabilityZone"] for s in chosen})))


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
