"""Plays a team's replicas in the stack's peer regions (scenario `regions:`): the TeamPolicy
`replicas` entry of the team (each bucket of the manifest as `<bucket>-<region>`, its image
registry as the same account's registry in that region, each file system as one of the same type
there, `replica_file_system`), and the replicas themselves (buckets created in the region with the
same input objects, the image pushed there, the file systems in the region's VPC). A field a
region's `missing:` names has no replica there."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Collection, Iterable
from typing import Any

from spotline.aws.common.clients import split_s3_uri
from spotline.core.regions.replicas import Replicas, replica_of, resources
from spotline.core.spec.images import parse_image
from spotline.core.spec.model import JobSpec
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.sandbox.account import INPUT_OBJECTS, SOURCE_ARCHIVE, ensure_image
from spotline_dev.harness.sandbox.file_systems import play_file_systems
from spotline_dev.harness.sandbox.scenario import Scenario


def played_replicas(spec: JobSpec, home: str, regions: Iterable[str]) -> dict[str, dict[str, str]]:
    """The team's `replicas`: every bucket and the image registry the spec uses, in each region."""
    regions = [r for r in regions if r != home]
    replicas: dict[str, dict[str, str]] = {}
    for path, uri in resources(spec):
        if path.endswith(".fileSystem"):
            root = uri.split("/", 3)  # fsx:, "", fs-..., path: the replica holds the file system's root
            lustre = root[0] == "fsx:"
            prefix = "/".join(root[:3]) + "/" + (root[3].split("/")[0] + "/" if lustre else "")
            replicas[prefix] = {r: replica_file_system(prefix, r) for r in regions}
        elif path == "spec.image":
            image = parse_image(uri)
            if image is None or image.is_deep_learning_container:
                continue
            registry = f"{image.account}.dkr.ecr.{image.region}.amazonaws.com/"
            replicas[registry] = {r: registry.replace(f".{image.region}.", f".{r}.") for r in regions}
        else:
            bucket, _ = split_s3_uri(uri)
            replicas[f"s3://{bucket}/"] = {r: f"s3://{bucket}-{r}/" for r in regions}
    return replicas


def list_replica_file_systems(entry: dict[str, Any]) -> None:
    """A team mounts only the file systems its entry lists: its replicas' too."""
    replicas = entry.get("replicas") or {}
    ids = {uri.split("/")[2] for prefix, there in replicas.items() if "://fs-" in prefix for uri in there.values()}
    if ids:
        entry["fileSystems"] = sorted(set(entry.get("fileSystems") or []) | ids)


def replica_file_system(prefix: str, region: str) -> str:
    """The file system in `region` holding what `prefix` (fsx://fs-.../mount/ or efs://fs-.../)
    holds: an id and FSx mount name of its own, the same for every replay."""
    scheme, _, rest = prefix.partition("://")
    file_system_id = rest.split("/")[0]
    digest = hashlib.sha256(f"{file_system_id}:{region}".encode()).hexdigest()
    replica = f"fs-{digest[: len(file_system_id) - 3]}"
    mount = "".join(chr(ord("a") + int(c, 16) % 26) for c in digest[-8:]) + "/" if scheme == "fsx" else ""
    return f"{scheme}://{replica}/{mount}"


def prepare_replicas(
    client: Any, spec: JobSpec, region: str, replicas: Replicas, missing: Collection[str] = ()
) -> None:
    """`client(service, region)` returns a boto3 client of the local stack in `region`."""
    s3 = client("s3", region)
    for path, uri in resources(spec):
        there = replica_of(uri, region, replicas)
        if there is None or path in missing or path.endswith(".fileSystem"):  # those: play_file_systems
            continue
        if path == "spec.image":
            ensure_image(client("ecr", region), there)
            continue
        bucket, key = split_s3_uri(there)
        where = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
            s3.create_bucket(Bucket=bucket, **where)
        if path.startswith("spec.inputs["):
            for name in INPUT_OBJECTS:
                s3.put_object(Bucket=bucket, Key=f"{key.rstrip('/')}/{name}".lstrip("/"), Body=b"local data")
        elif path == "spec.code.s3Uri":
            s3.put_object(Bucket=bucket, Key=key, Body=SOURCE_ARCHIVE)


def play_replicas(stack: LocalStack, scenario: Scenario, spec: JobSpec, replicas: Replicas) -> None:
    """The team's replicas in every peer region of the scenario, but those its `missing:` names."""
    for name, region in scenario.regions.items():
        prepare_replicas(
            lambda service, where: stack.session.client(service, region_name=where),
            spec,
            name,
            replicas,
            region.missing,
        )
        if stack.peer_networks:
            play_file_systems(stack, spec, region.missing, region=name, replicas=replicas)
