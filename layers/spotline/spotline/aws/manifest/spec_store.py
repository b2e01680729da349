"""The normalized spec travels by reference: LoadManifest writes it once to the ingest bucket
(`specs/<execution name>.json`, `spotline.core.common.naming.spec_key`) and every later step reads
that exact version back with `spec_of(state)`.

The state carries `$.manifest.specRef` = `{bucket, key, versionId, sha256}`. Reading pins the
version LoadManifest wrote and checks the digest, so neither a later write to the key nor an
edit of the object changes a running job. A process keeps what it read (Lambda runtimes are
reused between status checks), keyed by that reference.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from spotline.aws.common.clients import client, error_code
from spotline.core.common.errors import SpotlineError
from spotline.core.common.naming import spec_key
from spotline.core.spec.model import JobSpec
from spotline.core.state import ManifestCheck, SpecRef

SHA256_METADATA = "sha256"
CACHED_SPECS = 16
MISSING_CODES = {"NoSuchKey", "NoSuchVersion", "404"}


class SpecUnavailable(SpotlineError):
    """The spec LoadManifest stored cannot be read back, or is no longer what it wrote."""


def spec_bytes(spec: JobSpec) -> bytes:
    """The stored form: compact JSON with sorted keys, so the same spec gives the same bytes."""
    return json.dumps(spec.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def store_spec(bucket: str, execution: str, spec: JobSpec) -> SpecRef:
    """Write the spec once for this execution; returns the reference the state carries.

    Idempotent: a rerun of LoadManifest (a Lambda retry) finds the copy it wrote (S3 refuses
    the conditional write) and returns that version instead of writing another."""
    body = spec_bytes(spec)
    digest = hashlib.sha256(body).hexdigest()
    key = spec_key(execution)
    s3 = client("s3")
    request: dict[str, Any] = {
        "Bucket": bucket,
        "Key": key,
        "Body": body,
        "ContentType": "application/json",
        "ServerSideEncryption": "AES256",
        "Metadata": {SHA256_METADATA: digest},
    }
    try:
        version = s3.put_object(**request, IfNoneMatch="*").get("VersionId")
    except Exception as exc:
        if error_code(exc) != "PreconditionFailed":
            raise
        existing = s3.head_object(Bucket=bucket, Key=key)
        if existing.get("Metadata", {}).get(SHA256_METADATA) == digest:
            version = existing.get("VersionId")
        else:  # left by an older execution of the same name (names are unique for 90 days only)
            version = s3.put_object(**request).get("VersionId")
    return SpecRef(bucket=bucket, spec_key=key, version_id=version, sha256=digest)


def load_spec(ref: SpecRef) -> JobSpec:
    """The spec a reference names: that version, checked against its sha256 (kept per process)."""
    return _load(ref.bucket, ref.spec_key, ref.version_id, ref.sha256)


@lru_cache(maxsize=CACHED_SPECS)
def _load(bucket: str, key: str, version_id: str | None, digest: str) -> JobSpec:
    where = f"s3://{bucket}/{key}" + (f" (version {version_id})" if version_id else "")
    request = {"Bucket": bucket, "Key": key}
    if version_id and version_id != "null":
        request["VersionId"] = version_id
    try:
        body = client("s3").get_object(**request)["Body"].read()
    except Exception as exc:
        if error_code(exc) not in MISSING_CODES:
            raise
        raise SpecUnavailable(f"the spec LoadManifest stored at {where} no longer exists") from None
    if hashlib.sha256(body).hexdigest() != digest:
        raise SpecUnavailable(
            f"the spec at {where} is not the one LoadManifest stored (sha256 differs): "
            "it was changed after validation; upload the manifest again"
        )
    return JobSpec.from_dict(json.loads(body))


def spec_of(state: Mapping[str, Any]) -> JobSpec:
    """The normalized spec of the execution whose state this is (`$.manifest.specRef`)."""
    manifest = ManifestCheck.in_state(state)
    if manifest is None or manifest.spec_ref is None:
        raise SpecUnavailable("the execution state has no $.manifest.specRef (was the manifest accepted?)")
    return load_spec(manifest.spec_ref)
