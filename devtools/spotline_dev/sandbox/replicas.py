"""Plays a team's replicas in the stack's peer regions (scenario `regions:`): the TeamPolicy
`replicas` entry of the team (each bucket of the manifest as `<bucket>-<region>`, its image
registry as the same account's registry in that region), and the replicas themselves (buckets
created in the region with the same input objects, the image pushed there). A field a region's
`missing:` names has no replica there."""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterable
from typing import Any

from spotline.aws.clients import split_s3_uri
from spotline.core.images import parse_image
from spotline.core.model import JobSpec
from spotline.core.replicas import Replicas, replica_of, resources
from spotline_dev.local.handles import LocalStack
from spotline_dev.sandbox.account import INPUT_OBJECTS, SOURCE_ARCHIVE, ensure_image
from spotline_dev.sandbox.scenario import Scenario


def played_replicas(spec: JobSpec, home: str, regions: Iterable[str]) -> dict[str, dict[str, str]]:
    """The team's `replicas`: every bucket and the image registry the spec uses, in each region."""
    regions = [r for r in regions if r != home]
    replicas: dict[str, dict[str, str]] = {}
    for path, uri in resources(spec):
        if path == "spec.image":
            image = parse_image(uri)
            if image is None or image.is_deep_learning_container:
                continue
            registry = f"{image.account}.dkr.ecr.{image.region}.amazonaws.com/"
            replicas[registry] = {r: registry.replace(f".{image.region}.", f".{r}.") for r in regions}
        else:
            bucket, _ = split_s3_uri(uri)
            replicas[f"s3://{bucket}/"] = {r: f"s3://{bucket}-{r}/" for r in regions}
    return replicas


def prepare_replicas(
    client: Any, spec: JobSpec, region: str, replicas: Replicas, missing: Collection[str] = ()
) -> None:
    """`client(service, region)` returns a boto3 client of the local stack in `region`."""
    s3 = client("s3", region)
    for path, uri in resources(spec):
        there = replica_of(uri, region, replicas)
        if there is None or path in missing:
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
