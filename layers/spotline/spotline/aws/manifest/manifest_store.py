"""Reading manifest versions from S3 and writing reports beside them. Manifests are only
ever read: the bucket is versioned and a report goes under reports/, never over the file.
A version deleted before it is read is "missing" (ManifestNotFound); a 403 is not
(`spotline.aws.manifest.s3_answers`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from spotline.aws.common.clients import client
from spotline.aws.manifest.reports import write_report
from spotline.aws.manifest.s3_answers import is_missing, manifest_uri, unreadable
from spotline.aws.manifest.spec_store import store_spec
from spotline.core.common.errors import DOCUMENT, ManifestError
from spotline.core.common.naming import report_key
from spotline.core.manifest.loader import MAX_BYTES, too_big
from spotline.core.manifest.manifest import ValidationResult, validate_bytes
from spotline.core.spec.model import to_rfc3339
from spotline.core.state import JobSummary, ManifestCheck, RunInput


def read_manifest(bucket: str, key: str, version_id: str | None) -> bytes:
    """At most MAX_BYTES + 1 bytes of that exact version (enough to know it is too big)."""
    return read_manifest_and_size(bucket, key, version_id)[0]


def read_manifest_and_size(bucket: str, key: str, version_id: str | None) -> tuple[bytes, int]:
    """`read_manifest`, and the version's whole size: GetObject's ContentLength ("Size of the body
    in bytes"; no Range asked, so the whole object's), for the report of one too big."""
    request: dict[str, Any] = {"Bucket": bucket, "Key": key}
    if version_id and version_id != "null":
        request["VersionId"] = version_id
    answer = client("s3").get_object(**request)
    body = answer["Body"]
    try:
        data: bytes = body.read(MAX_BYTES + 1)
    finally:
        body.close()
    return data, int(answer.get("ContentLength") or len(data))


def load_and_validate(source: RunInput, *, execution: str, now: datetime) -> ManifestCheck:
    """The LoadManifest result (`$.manifest`).

    A valid manifest's normalized spec goes to the ingest bucket (`spotline.aws.manifest.spec_store`):
    the state carries its reference and a bounded summary (`job`), never the spec itself. A
    rejected one keeps its first errors in the state and all of them in the report."""
    bucket, key, version_id = source.bucket, source.manifest_key, source.version_id
    try:
        data, size = read_manifest_and_size(bucket, key, version_id)
    except Exception as exc:
        if not is_missing(exc):
            raise unreadable(exc, manifest_uri(bucket, key, version_id), "LoadManifest") from exc
        return missing(bucket, key, version_id)
    result = validate_bytes(data, now=now, expected_team=source.team)
    if len(data) > MAX_BYTES:  # read only to the limit: the report gives the upload's own size
        result = ValidationResult(None, [ManifestError(DOCUMENT, too_big(max(size, len(data))))])
    if result.spec is not None:
        return ManifestCheck.accepted(JobSummary.of(result.spec), store_spec(bucket, execution, result.spec))
    errors = result.errors or [
        # A valid scoring manifest reaches the training lifecycle only if started by hand: Intake
        # starts its runs in the scoring state machine (spotline.aws.manifest.scoring_intake).
        ManifestError("kind", "ScoringJob manifests run in the scoring state machine, not the training lifecycle")
    ]
    report = {
        "outcome": "rejected",
        "manifest": {"bucket": bucket, "key": key, "versionId": version_id, "etag": source.etag},
        "execution": execution,
        "checkedAt": to_rfc3339(now),
        "errors": [e.to_dict() for e in errors],
        "help": "Fix every error listed and upload the manifest again; `spotline validate FILE` checks it locally.",
    }
    location = write_report(bucket, report_key(key, "rejected"), report)
    return ManifestCheck.rejected(errors, report=location)


def missing(bucket: str, key: str, version_id: str | None) -> ManifestCheck:
    """The LoadManifest result for a manifest version deleted before it was read (the execution
    ends in ManifestNotFound). No report: it would land beside a key whose current version may
    be another upload, with its own execution and report."""
    message = (
        f"{manifest_uri(bucket, key, version_id)} no longer exists: it was deleted before Spotline read it. "
        "Nothing was queued; upload the manifest again if the run is still wanted."
    )
    return ManifestCheck.rejected([ManifestError(DOCUMENT, message)], report=None, missing=True, summary=message)
