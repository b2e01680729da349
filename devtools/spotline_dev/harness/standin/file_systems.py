"""FSx for Lustre and EFS file systems as their APIs describe them, for the local stack: moto's
FSx answers carry no Lifecycle, VpcId or mount name, and moto's EFS ids cannot be chosen, so a
manifest's `fileSystem.id` could never be found. The sandbox registers the file systems a
scenario's manifests name (in the local stack's VPC); DescribeFileSystems (FSx, EFS) and
DescribeMountTargets (EFS) are answered from them, every answer checked against botocore's output
shape; DescribeMountTargetSecurityGroups (EFS) too. Other FSx and EFS calls go to moto, and a file
system's network interfaces and security groups are moto's EC2 ones the sandbox creates.

Rules, from the API references:
- FSx DescribeFileSystems: "FileSystemNotFound: No Amazon FSx file systems were found based upon
  supplied parameters." (400)
- EFS DescribeFileSystems / DescribeMountTargets: "FileSystemNotFound: Returned if the specified
  FileSystemId value doesn't exist in the requester's AWS account." (404)
- EFS DescribeMountTargetSecurityGroups: "MountTargetNotFound: Returned if there is no mount
  target with the specified ID found in the caller's AWS account." (404)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import boto3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse

from spotline_dev.harness.standin.base.http_answers import (
    ApiError,
    StandInAnswerInvalid,
    answer,
    json_body,
    shape,
    shape_problems,
    target_of,
)

FSX_TARGET = "AWSSimbaAPIService_v20180301.DescribeFileSystems"
EFS_PATHS = {"/2015-02-01/file-systems": "DescribeFileSystems", "/2015-02-01/mount-targets": "DescribeMountTargets"}
MOUNT_TARGET_GROUPS = re.compile(r"^/2015-02-01/mount-targets/(?P<id>[^/]+)/security-groups$")


@dataclass
class MountTarget:
    subnet_id: str
    vpc_id: str
    zone: str


@dataclass
class FileSystemRecord:
    file_system_id: str
    kind: str  # fsx-lustre | efs
    vpc_id: str
    mount_targets: list[MountTarget] = field(default_factory=list)  # EFS; FSx: its one subnet
    mount_name: str | None = None  # FSx for Lustre
    state: str = "available"
    security_groups: list[str] = field(default_factory=list)  # EFS: every mount target's
    network_interfaces: list[str] = field(default_factory=list)  # FSx: moto EC2 interfaces
    region: str = ""  # where it is: "" for the stand-in's own region, else a peer region


class FileSystemsStandIn:
    def __init__(self, account: str, region: str, created: float) -> None:
        self.account, self.region, self.created = account, region, created
        self.file_systems: dict[str, FileSystemRecord] = {}
        self._serial = 0
        self._lock = threading.Lock()

    def register(self, record: FileSystemRecord) -> None:
        self.file_systems[record.file_system_id] = record

    def _in(self, request: AWSPreparedRequest, file_system_id: str) -> FileSystemRecord | None:
        """The file system, if it is in the region `request` went to (FSx and EFS are regional)."""
        record = self.file_systems.get(file_system_id)
        host = urlsplit(request.url).hostname or ""
        return record if record is not None and f".{record.region or self.region}." in f".{host}." else None

    def install(self, session: boto3.Session) -> None:
        events = session.events
        events.register_first(
            "before-send.fsx", cast(Callable[..., None], self._on_fsx), unique_id=f"fs-fsx-{id(self)}"
        )
        events.register_first(
            "before-send.efs", cast(Callable[..., None], self._on_efs), unique_id=f"fs-efs-{id(self)}"
        )

    # --- FSx ---------------------------------------------------------------------------------

    def _on_fsx(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        if target_of(request) != FSX_TARGET:
            return None
        ids = [str(i) for i in json_body(request).get("FileSystemIds") or []]
        found = [self._in(request, i) for i in ids]
        return self._answer(request, "json", "fsx", "DescribeFileSystems", lambda: self._fsx(ids, found))

    def _fsx(self, ids: list[str], found: list[FileSystemRecord | None]) -> dict[str, Any]:
        # AWS: fsx FileSystemNotFound: "No Amazon FSx file systems were found based upon supplied parameters."
        if not ids or any(f is None or f.kind != "fsx-lustre" for f in found):
            raise ApiError(
                "FileSystemNotFound", "No Amazon FSx file systems were found based upon supplied parameters."
            )
        return {"FileSystems": [self._fsx_description(f) for f in found if f is not None]}

    def _fsx_description(self, record: FileSystemRecord) -> dict[str, Any]:
        region = record.region or self.region
        return {
            "OwnerId": self.account,
            "CreationTime": self.created,
            "FileSystemId": record.file_system_id,
            "FileSystemType": "LUSTRE",
            "Lifecycle": record.state.upper(),
            "StorageCapacity": 1200,
            "StorageType": "SSD",
            "VpcId": record.vpc_id,
            "SubnetIds": [t.subnet_id for t in record.mount_targets[:1]],
            "NetworkInterfaceIds": list(record.network_interfaces),
            "DNSName": f"{record.file_system_id}.fsx.{region}.amazonaws.com",
            "ResourceARN": f"arn:aws:fsx:{region}:{self.account}:file-system/{record.file_system_id}",
            "LustreConfiguration": {"DeploymentType": "PERSISTENT_2", "MountName": str(record.mount_name)},
        }

    # --- EFS ---------------------------------------------------------------------------------

    def _on_efs(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        parts = urlsplit(request.url)
        path = parts.path.rstrip("/")
        if request.method == "GET" and (groups_of := MOUNT_TARGET_GROUPS.match(path)):
            target = groups_of["id"]
            here = [r for r in self.file_systems.values() if self._in(request, r.file_system_id)]
            return self._answer(
                request, "rest-json", "efs", "DescribeMountTargetSecurityGroups", lambda: self._groups_of(target, here)
            )
        operation = EFS_PATHS.get(path)
        if operation is None or request.method != "GET":
            return None
        file_system_id = (parse_qs(parts.query).get("FileSystemId") or [""])[0]
        record = self._in(request, file_system_id)
        return self._answer(
            request, "rest-json", "efs", operation, lambda: self._efs(operation, file_system_id, record)
        )

    def _efs(self, operation: str, file_system_id: str, record: FileSystemRecord | None) -> dict[str, Any]:
        # AWS: efs FileSystemNotFound: "Returned if the specified FileSystemId value doesn't exist in the requester's"
        if record is None or record.kind != "efs":
            raise ApiError("FileSystemNotFound", f"File system '{file_system_id}' does not exist.", status=404)
        if operation == "DescribeMountTargets":
            return {"MountTargets": [self._mount_target(record, n, t) for n, t in enumerate(record.mount_targets)]}
        return {
            "FileSystems": [
                {
                    "OwnerId": self.account,
                    "CreationToken": f"spotline-sandbox-{file_system_id}",
                    "FileSystemId": file_system_id,
                    "CreationTime": self.created,
                    "LifeCycleState": record.state,
                    "NumberOfMountTargets": len(record.mount_targets),
                    "SizeInBytes": {"Value": 6144},
                    "PerformanceMode": "generalPurpose",
                    "Tags": [],
                }
            ]
        }

    def _groups_of(self, mount_target_id: str, here: list[FileSystemRecord]) -> dict[str, Any]:
        for record in here:
            if record.kind == "efs" and any(
                _mount_target_id(record, n) == mount_target_id for n in range(len(record.mount_targets))
            ):
                return {"SecurityGroups": list(record.security_groups)}
        # AWS: efs MountTargetNotFound: "Returned if there is no mount target with the specified ID found"
        raise ApiError("MountTargetNotFound", f"Mount target '{mount_target_id}' does not exist.", status=404)

    def _mount_target(self, record: FileSystemRecord, number: int, target: MountTarget) -> dict[str, Any]:
        return {
            "MountTargetId": _mount_target_id(record, number),
            "FileSystemId": record.file_system_id,
            "SubnetId": target.subnet_id,
            "LifeCycleState": "available",
            "AvailabilityZoneName": target.zone,
            "VpcId": target.vpc_id,
        }

    # --- answering ---------------------------------------------------------------------------

    def _answer(
        self,
        request: AWSPreparedRequest,
        protocol: str,
        service: str,
        operation: str,
        run: Callable[[], dict[str, Any]],
    ) -> AWSResponse:
        def checked() -> dict[str, Any]:
            result = run()
            problems = shape_problems(result, shape(service, operation, "output"), operation)
            if problems:
                raise StandInAnswerInvalid("; ".join(problems[:5]))
            return result

        with self._lock:
            self._serial += 1
            return answer(request, protocol, self._serial, checked)


def _mount_target_id(record: FileSystemRecord, number: int) -> str:
    return f"fsmt-{record.file_system_id[3:]}{number:02d}"
