"""The file systems a scenario's manifests mount, played in the local stack's VPC: an FSx for
Lustre file system in the first zone's subnet (its mount name the path's first segment), an EFS
one with a mount target in every zone. Scenario `missing:` takes `spec.inputs[N].fileSystem` for
one the account lacks."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from spotline.core.model import JobSpec
from spotline_dev.standin.file_systems import FileSystemRecord, MountTarget

if TYPE_CHECKING:
    from spotline_dev.local.handles import LocalStack


def mounts_file_systems(specs: Collection[JobSpec | None]) -> bool:
    """Whether any of the jobs mounts a file system (then the stack needs a VPC)."""
    return any(channel.on_file_system for spec in specs if spec for channel in spec.inputs)


def play_file_systems(stack: LocalStack, spec: JobSpec, missing: Collection[str] = ()) -> None:
    assert stack.file_systems is not None
    for index, channel in enumerate(spec.inputs):
        if not channel.on_file_system or f"spec.inputs[{index}].fileSystem" in missing:
            continue
        network = stack.network
        zones = sorted(network["subnets"])
        lustre = channel.file_system_type == "fsx-lustre"
        targets = [
            MountTarget(network["subnets"][zone], network["vpc"], zone) for zone in (zones[:1] if lustre else zones)
        ]
        mount_name = str(channel.file_system_path).strip("/").split("/")[0] if lustre else None
        stack.file_systems.register(
            FileSystemRecord(
                str(channel.file_system_id), str(channel.file_system_type), network["vpc"], targets, mount_name
            )
        )
