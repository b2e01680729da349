"""Reading `progress.json`, which the training code's checkpoint helper keeps beside its
checkpoints, to know real progress (work that survives an interruption).

A progress.json with `"shards": n` comes from the sharded helper
(spotline.training.sharded_checkpoint): rank 0 writes it once every rank has its shard on its own
instance's disk, but SageMaker uploads each instance's files to S3 on its own, so S3 can hold it
before every shard. Its step is trusted only when S3 holds the markers
`checkpoint-<step>/done/shard-<r>-of-<n>` of all ranks; else the progress is that of the newest
older step whose markers are all there (what a resume would restore), or None when there is none.
The listing is bounded: MARKER_PAGES pages of markers per step, OLDER_STEPS steps."""

from __future__ import annotations

import json
import re
from datetime import UTC
from typing import Any, TypeGuard

from spotline.aws.common.clients import client, error_code, split_s3_uri

PROGRESS_FILE = "progress.json"
MISSING = {"NoSuchKey", "404", "NoSuchBucket", "AccessDenied"}
MAX_TRAINING_SECONDS = 28 * 86400 * 100  # beyond any chain of 28-day jobs: not a real figure
SHARDS = "shards"
MARKER_PAGES = 4  # of 1000 keys: a step of up to 4000 ranks is verified
OLDER_STEPS = 3  # the older steps tried when the newest is incomplete (the helper keeps 2)
_MARKER = re.compile(r"shard-(\d+)-of-(\d+)")
_STEP = re.compile(r"checkpoint-(\d+)/")


def read_progress(checkpoint_s3_uri: str | None, region: str | None = None) -> dict[str, Any] | None:
    """{"step", "totalSteps", "updatedAt"[, "trainingSeconds"]} or None when there is none (yet);
    `region`: the checkpoint bucket's (an attempt in a peer region checkpoints to its replica there)."""
    if not checkpoint_s3_uri:
        return None
    bucket, prefix = split_s3_uri(checkpoint_s3_uri)
    key = f"{prefix.rstrip('/')}/{PROGRESS_FILE}".lstrip("/")
    try:
        body = client("s3", region).get_object(Bucket=bucket, Key=key)["Body"].read()
        progress = json.loads(body)
    except Exception as exc:
        if isinstance(exc, ValueError) or error_code(exc) in MISSING:
            return None
        raise
    if not isinstance(progress, dict) or not isinstance(progress.get("totalSteps"), int) or progress["totalSteps"] <= 0:
        return None
    trained = progress.get("trainingSeconds")
    if isinstance(trained, bool) or not isinstance(trained, int | float) or not 0 <= trained < MAX_TRAINING_SECONDS:
        progress.pop("trainingSeconds", None)  # an older helper, or nonsense: the declared duration decides
    if SHARDS not in progress:
        return progress
    try:
        return _complete_step(progress, bucket, f"{prefix.strip('/')}/".lstrip("/"), region)
    except Exception as exc:
        if error_code(exc) in MISSING:
            return None  # the shards cannot be checked: the step is not trusted
        raise


def _complete_step(progress: dict[str, Any], bucket: str, base: str, region: str | None) -> dict[str, Any] | None:
    """`progress` when S3 holds every shard marker of its step; else progress at the newest older
    step that has all of its own (step, updatedAt from the markers' upload times, trainingSeconds
    in proportion, no byInstanceType: it is not known per type at that step), or None."""
    shards, step = progress.get(SHARDS), progress.get("step")
    if not _count(shards) or not _count(step, least=0):
        return None
    s3 = client("s3", region)
    if _markers_complete(s3, bucket, f"{base}checkpoint-{step}/", shards) is not None:
        return progress
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"{base}checkpoint-", Delimiter="/", MaxKeys=1000)
    steps = [
        int(m.group(1)) for p in listed.get("CommonPrefixes", []) if (m := _STEP.fullmatch(p["Prefix"][len(base) :]))
    ]
    for older in sorted((s for s in steps if s < step), reverse=True)[:OLDER_STEPS]:
        uploaded = _markers_complete(s3, bucket, f"{base}checkpoint-{older}/", None)
        if uploaded is None:
            continue
        kept = {k: v for k, v in progress.items() if k != "byInstanceType"}
        kept["step"] = older
        kept["updatedAt"] = uploaded
        if "trainingSeconds" in kept:
            kept["trainingSeconds"] = round(kept["trainingSeconds"] * older / step, 1) if step else 0.0
        return kept
    return None


def _markers_complete(s3: Any, bucket: str, step_prefix: str, world: int | None) -> str | None:
    """When the last marker of a complete set under `step_prefix` was uploaded (ISO 8601, UTC), or
    None when no set is complete; `world`: the number of ranks expected (None: any set)."""
    ranks: dict[int, set[int]] = {}
    latest: dict[int, Any] = {}
    pages = s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket,
        Prefix=f"{step_prefix}done/shard-",
        PaginationConfig={"MaxItems": 1000 * MARKER_PAGES, "PageSize": 1000},
    )
    for page in pages:
        for item in page.get("Contents", []):
            if m := _MARKER.fullmatch(item["Key"][len(step_prefix) + len("done/") :]):
                rank, size = int(m.group(1)), int(m.group(2))
                if rank < size:
                    ranks.setdefault(size, set()).add(rank)
                    latest[size] = max(latest.get(size, item["LastModified"]), item["LastModified"])
    for size, found in ranks.items():
        if (world is None or size == world) and len(found) == size:
            return str(latest[size].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return None


def _count(value: object, least: int = 1) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least
