"""What S3's error answers to a manifest read mean: missing, or denied.

S3 answers a GetObject or HeadObject of a missing object with 404 (NoSuchKey, NoSuchVersion)
only when the caller also has s3:ListBucket on the bucket, and with 403 AccessDenied otherwise
(S3 API reference, GetObject and HeadObject, "Permissions"). Intake and LoadManifest have
s3:ListBucket on the ingest bucket (template.yaml) for that reason alone, so a 403 they get is a
real denial (a bucket policy, the object's KMS key, the role): it stays an error of its own,
`ManifestUnreadable`, and is never taken for a missing manifest.
"""

from __future__ import annotations

from spotline.aws.common.clients import error_code
from spotline.core.common.errors import ManifestUnreadable

MISSING_OBJECT_CODES = frozenset({"NoSuchKey", "NoSuchVersion", "404"})
"""The answers for an object or version that does not exist (HeadObject has no body: its code is
the bare status)."""
DELETE_MARKER_CODES = frozenset({"MethodNotAllowed", "405"})
"""The answer for a version id that names a delete marker: the manifest was deleted."""
ACCESS_DENIED_CODES = frozenset({"AccessDenied", "403"})


def manifest_uri(bucket: str, key: str, version_id: str | None) -> str:
    """`s3://bucket/key`, with the version when there is one: what every message names."""
    uri = f"s3://{bucket}/{key}"
    return f"version {version_id} of {uri}" if version_id and version_id != "null" else uri


def is_missing(exc: Exception) -> bool:
    """S3 says the object or version does not exist (or is a delete marker)."""
    return error_code(exc) in MISSING_OBJECT_CODES | DELETE_MARKER_CODES


def unreadable(exc: Exception, what: str, function: str) -> Exception:
    """A 403 as ManifestUnreadable, saying what to check; any other error unchanged."""
    if error_code(exc) not in ACCESS_DENIED_CODES:
        return exc
    return ManifestUnreadable(
        f"S3 denied {function} access to {what} ({exc}). Not a missing manifest: {function} may "
        "list the ingest bucket, so S3 would answer 404 for one. Check the bucket policy, the "
        f"object's encryption key and {function}'s role (s3:GetObject, s3:GetObjectVersion)."
    )
