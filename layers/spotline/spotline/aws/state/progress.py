"""Reading `progress.json`, which the training code's checkpoint helper keeps beside its
checkpoints, to know real progress (work that survives an interruption)."""

from __future__ import annotations

import json
from typing import Any

from spotline.aws.common.clients import client, error_code, split_s3_uri

PROGRESS_FILE = "progress.json"
MISSING = {"NoSuchKey", "404", "NoSuchBucket", "AccessDenied"}
MAX_TRAINING_SECONDS = 28 * 86400 * 100  # beyond any chain of 28-day jobs: not a real figure


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
    return progress
