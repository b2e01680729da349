"""A run's attempts across regions: where each runs, its resources there, the fleet's record
of spot capacity per region, and the checkpoint copy before an attempt starts elsewhere.

The run stays in its home region (the stack that received the manifest): its execution, tables,
report, metrics and notifications. An attempt in another region uses that region's Spotline
queue (the same stack deployed there, so the same queue name) and the team's replicas of its
resources (`spotline.core.regions.replicas`); its Batch and SageMaker calls go to that region
(`spotline.aws.common.clients.in_region`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from boto3.dynamodb.conditions import Key

from spotline.aws.common import clock
from spotline.aws.common.clients import client, resource, split_s3_uri
from spotline.aws.teams.team_registry import allowance_of
from spotline.core.capacity.policy import DEFAULT_RESTART_OVERHEAD_SECONDS
from spotline.core.regions.regions import (
    RECORD_WINDOW_SECONDS,
    Sighting,
    choose_region,
    latest_sightings,
    region_of_arn,
    region_records,
)
from spotline.core.regions.replicas import place, spec_in
from spotline.core.spec.model import JobSpec, to_rfc3339
from spotline.core.state import ResourceCheck, RunStatus, Training
from spotline.core.teams.team_policy import TeamPolicyInvalid

SIGHTINGS_TABLE = "CAPACITY_SIGHTINGS_TABLE"
SIGHTINGS_READ = 300
"""Sightings read per region and type for a decision (the newest first: a busy fleet's last day)."""
SIGHTING_TTL = timedelta(days=2)
PREFIX_KEYS_READ = 1000
"""Keys of a prefix counted and sized (one page): an input against its replica, a checkpoint."""
COPY_BATCH_OBJECTS = 1000
"""Objects one invocation copies at most (besides its time budget): a larger checkpoint is copied
over several invocations of SubmitTrainingJob (CheckpointCopyIncomplete)."""


def home_region() -> str:
    return os.environ.get("AWS_REGION", "us-east-1")


def allowed_regions(state: Mapping[str, Any]) -> list[str]:
    """The regions ValidateResources let the run use (`$.resources.regions.allowed`), home first."""
    resources = ResourceCheck.in_state(state)
    return list((resources.regions.allowed if resources else None) or [home_region()])


def spec_at(spec: JobSpec, region: str | None) -> JobSpec:
    """The job as it runs in `region`, through its team's replicas (its registry entry's)."""
    home = home_region()
    if not region or region == home:
        return spec
    try:
        allowance = allowance_of(spec.team)
    except TeamPolicyInvalid:
        allowance = None  # an entry changed by hand: no replicas (ValidateResources reports it)
    placed, problems = place(spec, region, home, allowance.replicas if allowance else {})
    if placed is None:
        raise ValueError(f"the job has no place in {region}: {problems[0].path}: {problems[0].message}")
    return spec_in(spec, placed)


# --- the fleet's record of spot capacity ---------------------------------------------------------


def _table() -> Any | None:
    name = os.environ.get(SIGHTINGS_TABLE)
    return resource("dynamodb").Table(name) if name else None


def record_sighting(sighting: Sighting, execution: str) -> None:
    """One sighting (best effort: the record informs a choice, it never blocks a check)."""
    table = _table()
    if table is None:
        return
    table.put_item(
        Item={
            "pk": f"{sighting.region}#{sighting.instance_type}",
            "sk": f"{to_rfc3339(sighting.at)}#{execution.rsplit(':', 1)[-1]}",
            "spot": sighting.spot,
            "interruption": sighting.interruption,
            "instances": sighting.instances,
            "expiresAt": int((sighting.at + SIGHTING_TTL).timestamp()),
        }
    )


def recent_sightings(regions: Sequence[str], instance_type: str, now: datetime, instances: int = 1) -> list[Sighting]:
    """The fleet's sightings of the last day in each region for `instance_type`, newest first, of
    those that tell about a job of `instances` (`Sighting.tells_about`; one written before counts
    were recorded counts as one instance)."""
    table = _table()
    if table is None:
        return []
    since = to_rfc3339(now - timedelta(seconds=RECORD_WINDOW_SECONDS))
    found: list[Sighting] = []
    for region in regions:
        page = table.query(
            KeyConditionExpression=Key("pk").eq(f"{region}#{instance_type}") & Key("sk").gte(since),
            ScanIndexForward=False,
            Limit=SIGHTINGS_READ,
        )
        for item in page.get("Items", []):
            at = datetime.fromisoformat(str(item["sk"]).split("#", 1)[0])
            seen = Sighting(
                region,
                at,
                bool(item["spot"]),
                instance_type,
                bool(item.get("interruption")),
                int(item.get("instances", 1)),
            )
            if seen.tells_about(instances):
                found.append(seen)
    return found


def prefix_contents(uri: str, region: str | None = None) -> tuple[int, int]:
    """(objects, bytes) under an S3 prefix, from one page of its keys."""
    bucket, prefix = split_s3_uri(uri)
    page = client("s3", region).list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=PREFIX_KEYS_READ)
    contents = page.get("Contents", [])
    return len(contents), sum(int(item.get("Size", 0)) for item in contents)


# --- the checkpoint copy ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckpointCopy:
    source: str
    target: str
    source_region: str
    target_region: str
    objects: int
    bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "fromRegion": self.source_region,
            "toRegion": self.target_region,
            "objects": self.objects,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
        }


class CheckpointCopyIncomplete(Exception):
    """The invocation's share of a checkpoint copy is done, not the whole copy. SubmitTrainingJob's
    Retry on this error runs the task again at once, and the copy goes on where it stopped: every
    object already copied is skipped (`copy_checkpoint`)."""


def copy_checkpoint(
    source_uri: str, target_uri: str, source_region: str, target_region: str, *, until: float | None = None
) -> CheckpointCopy:
    """Every object under `source_uri` to the same key under `target_uri` (server-side; the
    managed copy goes multipart above its threshold), listed and written each in its own region.

    Bounded: at most COPY_BATCH_OBJECTS objects are copied, and none after the first is started
    after `until` (time.monotonic()); then CheckpointCopyIncomplete, and the next call goes on (each
    call copies one object at least, so the copy always ends). A target object of
    the same size written since its source (LastModified) is the copy already made, so it is
    skipped; any other is copied (again), so a retried or resumed copy never keeps a stale object.

    Its `seconds` are read on the handlers' clock (`spotline.aws.common.clock`): the real time deployed, the
    virtual clock in the sandbox and tests, so two replays of a scenario report the same copy."""
    began = clock.now()
    src_bucket, src_prefix = split_s3_uri(source_uri)
    dst_bucket, dst_prefix = split_s3_uri(target_uri)
    made = _objects_under(dst_bucket, dst_prefix, target_region)
    s3 = client("s3", target_region)
    objects = size = copied = 0
    pages = client("s3", source_region).get_paginator("list_objects_v2").paginate(Bucket=src_bucket, Prefix=src_prefix)
    for page in pages:
        for item in page.get("Contents", []):
            key, item_size = str(item["Key"]), int(item.get("Size", 0))
            there = made.get(key[len(src_prefix) :])
            if there is None or there[0] != item_size or there[1] < item["LastModified"]:
                if copied >= COPY_BATCH_OBJECTS or (copied and until is not None and time.monotonic() >= until):
                    raise CheckpointCopyIncomplete(
                        f"copied {copied} objects of {source_uri} ({source_region}) to {target_uri} "
                        f"({target_region}) in this invocation, {objects} in place so far: the copy goes on"
                    )
                s3.copy({"Bucket": src_bucket, "Key": key}, dst_bucket, dst_prefix + key[len(src_prefix) :])
                copied += 1
            objects += 1
            size += item_size
    seconds = (clock.now() - began).total_seconds()
    return CheckpointCopy(source_uri, target_uri, source_region, target_region, objects, size, seconds)


def _objects_under(bucket: str, prefix: str, region: str) -> dict[str, tuple[int, datetime]]:
    """The objects under a prefix: key after the prefix -> (size, LastModified)."""
    found: dict[str, tuple[int, datetime]] = {}
    for page in client("s3", region).get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            found[str(item["Key"])[len(prefix) :]] = (int(item.get("Size", 0)), item["LastModified"])
    return found


# --- where the next attempt runs ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Placement:
    region: str
    choice: dict[str, Any] | None
    """The region decision, when one was made here (the first spot attempt of a job free to move)."""


def place_attempt(
    training: Training | None,
    status: RunStatus | None,
    *,
    allowed: list[str],
    spec: JobSpec,
    capacity: str,
    now: datetime,
) -> Placement:
    """The region of the next attempt: the one the last check chose (`$.status.nextRegion`); for
    the first spot attempt of a job allowed several (`allowed`), the best by the fleet's record;
    else where the last attempt ran (its checkpoint is there: on-demand never pays a copy), home at first."""
    home = home_region()
    decided = status.next_capacity if status else None
    chosen = status.next_region if status and decided else None
    plan = status.next_training_plan if status and decided == "training-plan" else None
    if plan:
        # A plan's capacity is in its own region (`spotline.core.capacity.training_plans`): the attempt goes there.
        return Placement(region_of_arn(plan.arn), None)
    if chosen in allowed:
        return Placement(str(chosen), None)
    if training or capacity != "spot" or len(allowed) < 2:
        return Placement((training.region if training else None) or home, None)
    sightings = recent_sightings(allowed, spec.instance_type, now)
    choice = choose_region(
        situation="placing",
        current=home,
        allowed=allowed,
        sightings=latest_sightings(sightings, now),
        restart_seconds=DEFAULT_RESTART_OVERHEAD_SECONDS,
        checkpoint_bytes=0,
        checkpoint_region=home,
        remaining_seconds=float(spec.expected_duration_seconds or spec.max_runtime_seconds),
        checkpoint_interval_seconds=60.0 * spec.checkpoint_interval_minutes,
        records=region_records(sightings, now),
    )
    return Placement(choice.region, choice.to_dict())
