"""Deterministic, readable names for executions, jobs and reports."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

MANIFEST_PREFIX = "manifests/"
REPORT_PREFIX = "reports/"
SPEC_PREFIX = "specs/"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
EXECUTION_NAME_MAX = 80
TRAINING_JOB_NAME_MAX = 63


@dataclass(frozen=True, slots=True)
class ManifestLocation:
    """Where a manifest version lives, and the team its folder names."""

    bucket: str
    key: str
    version_id: str | None
    team: str


def manifest_location(bucket: str, key: str, version_id: str | None) -> ManifestLocation | None:
    """The location if `key` is a manifest (`manifests/<team>/<...>.yaml|.yml|.json`), else None."""
    if not key.startswith(MANIFEST_PREFIX) or not key.lower().endswith(MANIFEST_SUFFIXES):
        return None
    parts = key[len(MANIFEST_PREFIX) :].split("/")
    if len(parts) < 2 or not parts[0] or not parts[-1]:
        return None
    return ManifestLocation(bucket, key, version_id, parts[0])


def slug(text: str, limit: int) -> str:
    """Lowercase letters, digits and single dashes, at most `limit` characters."""
    cleaned = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return cleaned[:limit].rstrip("-")


def short_hash(*parts: str, length: int = 8) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:length]


def execution_name(location: ManifestLocation) -> str:
    """`<team>-<file stem>-<hash8>`: one name per manifest version, so S3 and EventBridge
    redeliveries map to the same execution (Step Functions names are unique for 90 days)."""
    digest = short_hash(location.bucket, location.key, location.version_id or "null")
    team = slug(location.team, 24) or "team"
    stem = slug(PurePosixPath(location.key).stem, EXECUTION_NAME_MAX - len(team) - len(digest) - 2) or "manifest"
    return f"{team}-{stem}-{digest}"


def report_key(manifest_key: str, outcome: str) -> str:
    """`manifests/a/b.yaml` -> `reports/manifests/a/b.yaml.<outcome>.json`, beside the manifest's path."""
    return f"{REPORT_PREFIX}{manifest_key}.{outcome}.json"


def spec_key(execution: str) -> str:
    """Where LoadManifest keeps an execution's normalized spec in the ingest bucket:
    `specs/<execution name>.json` (an execution ARN is reduced to its name, the last part).
    Outside `manifests/`, so writing it starts nothing; one key per execution, so a rerun of
    LoadManifest finds its own copy."""
    name = execution.rsplit(":", 1)[-1]
    if not name:
        raise ValueError(f"{execution!r} names no execution")
    return f"{SPEC_PREFIX}{name}.json"
