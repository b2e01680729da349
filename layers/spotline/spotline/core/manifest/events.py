"""Events from outside Spotline, checked at the door (pure).

The preprocessing pipeline's "Dataset Ready" and "Training Requested" events and S3's "Object
Created" are validated against their JSON Schemas (`schemas/*-v1.schema.json`; dataset names and
S3 URIs are the manifest schema's own definitions), then against the rules a schema cannot
express: the ingest bucket, a manifest key, a real timestamp, the size of the whole detail.

A bad event becomes a `Rejection`: every problem named by its path (`detail.location`) with a
message that shows at most a short prefix of the offending value, so logs and the dead-letter
message never carry an oversized value. Unknown detail fields are accepted (pipelines add fields
as they evolve) within 32 fields in all and MAX_EXTRA_BYTES; they are never stored nor passed on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from spotline.core.common import json_schemas
from spotline.core.common.errors import ManifestError
from spotline.core.common.json_schemas import show
from spotline.core.common.naming import ManifestLocation, manifest_location

DATASET_READY = "Dataset Ready"
TRAINING_REQUESTED = "Training Requested"
OBJECT_CREATED = "Object Created"
SCHEMAS = {
    DATASET_READY: "dataset-ready-v1.schema.json",
    TRAINING_REQUESTED: "training-requested-v1.schema.json",
    OBJECT_CREATED: "s3-object-created-v1.schema.json",
}
EVENT = "(event)"
"""Path used for problems with the event as a whole (not an object)."""
MAX_EXTRA_BYTES = 16 * 1024
"""The fields of a pipeline event's detail that its schema does not name, as UTF-8 JSON."""
MAX_REPORTED_ERRORS = 10
CLIPPED_CHARACTERS = 1024
DEAD_LETTER_EVENT_BYTES = 64 * 1024
"""What a dead-letter message copies of the event, well under SQS's 256 KiB message limit."""


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why an event of `event_type` is refused; retrying cannot fix it."""

    event_type: str
    errors: tuple[ManifestError, ...]

    @classmethod
    def of(cls, event_type: str, path: str, message: str) -> Rejection:
        return cls(event_type, (ManifestError(path, message),))

    @property
    def reason(self) -> str:
        shown = [str(e) for e in self.errors[:MAX_REPORTED_ERRORS]]
        if len(self.errors) > MAX_REPORTED_ERRORS:
            shown.append(f"... and {len(self.errors) - MAX_REPORTED_ERRORS} more")
        return f"{self.event_type} event rejected: " + "; ".join(shown)

    def error_dicts(self) -> list[dict[str, str]]:
        return [e.to_dict() for e in self.errors[:MAX_REPORTED_ERRORS]]


@dataclass(frozen=True, slots=True)
class DatasetReady:
    """What DatasetGate records: only these fields, whatever else the detail carried."""

    dataset: str
    location: str | None
    produced_at: str | None


@dataclass(frozen=True, slots=True)
class TrainingRequest:
    """A manifest to train (version None: the current one), not yet checked against S3."""

    location: ManifestLocation
    allow_non_current_version: bool
    received_at: str


@dataclass(frozen=True, slots=True)
class ManifestUpload:
    """An upload to the ingest bucket; `location` is None when the key is not a manifest."""

    key: str
    location: ManifestLocation | None
    etag: str | None
    received_at: str


def check_dataset_ready(event: Any) -> DatasetReady | Rejection:
    """A "Dataset Ready" event: the fields DatasetGate records, or every reason it cannot."""
    errors = _schema_errors(DATASET_READY, event)
    detail = _detail(event)
    errors += _unknown_fields_errors(DATASET_READY, detail)
    errors += _timestamp_errors(detail, "producedAt", "detail.producedAt", errors)
    if errors:
        return _rejection(DATASET_READY, errors)
    return DatasetReady(detail["dataset"], detail.get("location"), detail.get("producedAt"))


def check_training_requested(event: Any, *, ingest_bucket: str) -> TrainingRequest | Rejection:
    """A "Training Requested" event naming a manifest in the ingest bucket (whether that version
    exists and is current is for the caller to ask S3), or every reason it cannot be used."""
    errors = _schema_errors(TRAINING_REQUESTED, event)
    detail = _detail(event)
    errors += _unknown_fields_errors(TRAINING_REQUESTED, detail)
    errors += _timestamp_errors(event, "time", "time", errors)
    bucket, key = detail.get("bucket"), detail.get("key")
    errors += _bucket_errors(bucket, "detail.bucket", ingest_bucket, errors)
    location = None
    if isinstance(key, str) and not _reported("detail.key", errors):
        location = manifest_location(str(bucket), key, detail.get("versionId"))
        if location is None:
            errors.append(ManifestError("detail.key", f"{show(key)} is not a manifest (.yaml, .yml or .json)"))
    if errors or location is None:
        return _rejection(TRAINING_REQUESTED, errors)
    return TrainingRequest(location, detail.get("allowNonCurrentVersion") is True, event["time"])


def check_object_created(event: Any, *, ingest_bucket: str) -> ManifestUpload | Rejection:
    """S3's "Object Created" for the ingest bucket, or why not (another bucket, a malformed event)."""
    errors = _schema_errors(OBJECT_CREATED, event)
    detail = _detail(event)
    errors += _timestamp_errors(event, "time", "time", errors)
    bucket = detail.get("bucket", {}).get("name") if isinstance(detail.get("bucket"), dict) else None
    errors += _bucket_errors(bucket, "detail.bucket.name", ingest_bucket, errors)
    if errors:
        return _rejection(OBJECT_CREATED, errors)
    obj = detail["object"]
    location = manifest_location(ingest_bucket, obj["key"], obj.get("version-id"))
    return ManifestUpload(obj["key"], location, obj.get("etag"), event["time"])


def dead_letter_body(rejection: Rejection, event: Any) -> str:
    """The JSON envelope `{"reason", "eventType", "errors", "event"}` for the events dead-letter
    queue. Long strings in the copied event are clipped; if it is still over
    DEAD_LETTER_EVENT_BYTES, the copy is the start of its JSON text and `eventTruncated` is true."""
    copy = _clipped(event, depth=0)
    text = json.dumps(copy, default=str)  # ASCII: any character SQS refuses is escaped
    body: dict[str, Any] = {
        "reason": rejection.reason,
        "eventType": rejection.event_type,
        "errors": rejection.error_dicts(),
        "event": copy,
    }
    if len(text) > DEAD_LETTER_EVENT_BYTES:
        body |= {"event": text[:DEAD_LETTER_EVENT_BYTES], "eventTruncated": True, "eventBytes": len(text)}
    return json.dumps(body)


# --- the schemas --------------------------------------------------------------------------


def schema(event_type: str) -> dict[str, Any]:
    """The schema for `event_type`, as its file says."""
    return json_schemas.load(SCHEMAS[event_type])


def _schema_errors(event_type: str, event: Any) -> list[ManifestError]:
    return json_schemas.errors_of(SCHEMAS[event_type], event, root=EVENT)


# --- rules the schemas cannot express ------------------------------------------------------


def _detail(event: Any) -> dict[str, Any]:
    detail = event.get("detail") if isinstance(event, dict) else None
    return detail if isinstance(detail, dict) else {}


def _reported(path: str, errors: list[ManifestError]) -> bool:
    return any(e.path == path for e in errors)


def _unknown_fields_errors(event_type: str, detail: dict[str, Any]) -> list[ManifestError]:
    """Fields the schema does not know (each known one has its own bound), at most MAX_EXTRA_BYTES."""
    known = schema(event_type)["properties"]["detail"]["properties"]
    extra = {key: value for key, value in detail.items() if key not in known}
    size = len(json.dumps(extra, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass"))
    if size <= MAX_EXTRA_BYTES:
        return []
    return [
        ManifestError(
            "detail",
            f"fields Spotline does not use ({show(sorted(extra))}) are {size} bytes of JSON; "
            f"at most {MAX_EXTRA_BYTES} are accepted",
        )
    ]


def _timestamp_errors(holder: Any, key: str, path: str, errors: list[ManifestError]) -> list[ManifestError]:
    text = holder.get(key) if isinstance(holder, dict) else None
    if not isinstance(text, str) or _reported(path, errors):
        return []
    try:
        datetime.fromisoformat(text.upper())
    except ValueError:
        return [ManifestError(path, f"{show(text)} is not a real date and time")]
    return []


def _bucket_errors(bucket: Any, path: str, ingest_bucket: str, errors: list[ManifestError]) -> list[ManifestError]:
    if not isinstance(bucket, str) or _reported(path, errors) or bucket == ingest_bucket:
        return []
    return [ManifestError(path, f"{show(bucket)} is not the ingest bucket {ingest_bucket}")]


def _rejection(event_type: str, errors: list[ManifestError]) -> Rejection:
    return Rejection(event_type, tuple(sorted(set(errors), key=lambda e: (e.path, e.message))))


def _clipped(value: Any, *, depth: int) -> Any:
    """A copy of a JSON value with long strings (and keys) cut to CLIPPED_CHARACTERS."""
    if isinstance(value, str):
        if len(value) <= CLIPPED_CHARACTERS:
            return value
        return f"{value[:CLIPPED_CHARACTERS]}... (clipped, {len(value)} characters)"
    if depth > 32:
        return "... (clipped, nested too deep)"
    if isinstance(value, dict):
        return {_clipped(str(k), depth=depth): _clipped(v, depth=depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_clipped(v, depth=depth + 1) for v in value]
    return value
