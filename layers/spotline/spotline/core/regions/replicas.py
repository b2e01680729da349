"""A job's resources in another region, through its team's replicas (pure).

A training job's input, output and checkpoint buckets and its ECR image must be in the job's
region (SageMaker CreateTrainingJob: "the S3 bucket must be in the same AWS Region as the
training job"; ECR images are pulled from the job's region). A team declares where its data and
images are in other regions (TeamPolicy `replicas`: prefix -> region -> prefix); an attempt in
another region uses the mapped URIs, the longest matching prefix winning.

A file system lives in one region too (FSx for Lustre and EFS are regional services). A mounted
channel reads as `fsx://<id><path>` or `efs://<id><path>`, so a team declares a file system
holding the same data in another region as it does a bucket: `fsx://fs-0123.../abcdwbmv/` ->
`fsx://fs-0fed.../wxyzmnt/` (an FSx path begins with its file system's mount name).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from spotline.core.common.errors import ManifestError
from spotline.core.spec.model import InputChannel, JobSpec
from spotline.core.teams.team_policy import s3_uris

Replicas = Mapping[str, Mapping[str, str]]
"""TeamPolicy `replicas`: prefix -> {region: the prefix holding the same data there}."""


@dataclass(frozen=True, slots=True)
class Placed:
    """A job's resources in one region: each manifest field's URI there."""

    region: str
    uris: dict[str, str]
    """Manifest field path (spec.inputs[0].s3Uri, spec.inputs[1].fileSystem, spec.output.s3Uri,
    spec.checkpoint.s3Uri, spec.image, spec.code.s3Uri) -> the URI in `region`."""


FILE_SYSTEM_SCHEMES = {"fsx-lustre": "fsx", "efs": "efs"}


def resources(spec: JobSpec) -> Iterator[tuple[str, str]]:
    """(field path, URI) of everything a job reads or writes that must be in its region."""
    yield from s3_uris(spec)
    for index, channel in enumerate(spec.inputs):
        if channel.on_file_system:
            yield f"spec.inputs[{index}].fileSystem", file_system_uri(channel)
    yield "spec.image", spec.image


def file_system_uri(channel: InputChannel) -> str:
    """A mounted channel as a replica key reads it: fsx://fs-0123.../abcdwbmv/clicks/."""
    path = str(channel.file_system_path).rstrip("/") + "/"
    return f"{FILE_SYSTEM_SCHEMES[str(channel.file_system_type)]}://{channel.file_system_id}{path}"


def mounted_at(channel: InputChannel, uri: str) -> InputChannel:
    """`channel` on the file system and path of `uri` (file_system_uri's inverse)."""
    rest = uri.split("://", 1)[1]
    file_system_id, _, path = rest.partition("/")
    return replace(channel, file_system_id=file_system_id, file_system_path="/" + path.rstrip("/"))


def replica_of(uri: str, region: str, replicas: Replicas) -> str | None:
    """`uri` in `region` by the longest replica prefix that covers it; None when none does."""
    matches = [p for p in replicas if uri.startswith(p) and region in replicas[p]]
    if not matches:
        return None
    prefix = max(matches, key=len)
    return replicas[prefix][region] + uri[len(prefix) :]


def place(spec: JobSpec, region: str, home: str, replicas: Replicas) -> tuple[Placed | None, list[ManifestError]]:
    """The job's resources in `region` (as they are at home), or the fields with no replica there."""
    if region == home:
        return Placed(region, dict(resources(spec))), []
    uris: dict[str, str] = {}
    problems = []
    for path, uri in resources(spec):
        mapped = replica_of(uri, region, replicas)
        if mapped is None and path.endswith(".fileSystem"):
            problems.append(
                ManifestError(
                    path,
                    f"file system {uri.split('/')[2]} is in {home}: a job that mounts it runs in {region} only "
                    f"where the team's replicas name a file system there holding {uri}",
                )
            )
        elif mapped is None:
            problems.append(ManifestError(path, f"{uri} has no replica in {region} (team policy replicas)"))
        elif path.endswith(".fileSystem") and mapped.split("://")[0] != uri.split("://")[0]:
            problems.append(ManifestError(path, f"its replica in {region}, {mapped}, is not a file system of its type"))
        else:
            uris[path] = mapped
    return (None, problems) if problems else (Placed(region, uris), [])


def spec_in(spec: JobSpec, placed: Placed) -> JobSpec:
    """The job as it runs in `placed.region`: every resource its replica there."""
    uris = placed.uris
    return replace(
        spec,
        image=uris["spec.image"],
        inputs=tuple(
            mounted_at(channel, uris[f"spec.inputs[{index}].fileSystem"])
            if channel.on_file_system
            else replace(channel, s3_uri=uris[f"spec.inputs[{index}].s3Uri"])
            for index, channel in enumerate(spec.inputs)
        ),
        output_s3_uri=uris["spec.output.s3Uri"],
        checkpoint_s3_uri=uris.get("spec.checkpoint.s3Uri"),
        code_s3_uri=uris.get("spec.code.s3Uri"),
    )
