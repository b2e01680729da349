"""Events checked at the door: schemas, paths, bounded messages, dead-letter envelopes."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conftest import sample_event
from spotline.core.common.errors import ManifestError
from spotline.core.manifest import events
from spotline.core.manifest.events import (
    DATASET_READY,
    MAX_EXTRA_BYTES,
    MAX_REPORTED_ERRORS,
    OBJECT_CREATED,
    TRAINING_REQUESTED,
    DatasetReady,
    ManifestUpload,
    Rejection,
    TrainingRequest,
    check_dataset_ready,
    check_object_created,
    check_training_requested,
    dead_letter_body,
)
from spotline.core.manifest.manifest import schema as manifest_schema

INGEST = "spotline-ingest-123456789012-us-east-1"  # the bucket the sample events name
SQS_MESSAGE_LIMIT = 256 * 1024
HUGE_LOCATION = "s3://search-ranking-data/" + "x" * 140 * 1024


def _dataset_ready(**detail: Any) -> dict[str, Any]:
    event = sample_event("dataset_ready.json")
    event["detail"] |= detail
    return event


def _request(**detail: Any) -> dict[str, Any]:
    event = sample_event("training_requested.json")
    event["detail"] |= detail
    return event


def _errors(result: object) -> list[tuple[str, str]]:
    assert isinstance(result, Rejection), result
    return [(e.path, e.message) for e in result.errors]


def test_the_sample_events_pass() -> None:
    assert check_dataset_ready(sample_event("dataset_ready.json")) == DatasetReady(
        "clicks-2026-11-28", "s3://search-ranking-data/clicks/2026-11-28/", "2026-11-29T05:38:12Z"
    )
    request = check_training_requested(sample_event("training_requested.json"), ingest_bucket=INGEST)
    assert isinstance(request, TrainingRequest)
    assert (request.location.team, request.location.version_id) == (
        "search-ranking",
        "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
    )
    assert (request.allow_non_current_version, request.received_at) == (False, "2026-11-29T05:41:00Z")
    upload = check_object_created(sample_event("s3_manifest_created.json"), ingest_bucket=INGEST)
    assert isinstance(upload, ManifestUpload)
    assert upload.location and upload.location.key == "manifests/search-ranking/ranker-v2.yaml"
    assert upload.etag == "b1946ac92492d2347c6235b4d2611184"


@pytest.mark.parametrize("kind", sorted(events.SCHEMAS))
def test_the_schema_files_are_draft_2020_12(kind: str) -> None:
    Draft202012Validator.check_schema(events.schema(kind))


@pytest.mark.parametrize(
    ("detail", "expected"),
    [
        (
            {"location": HUGE_LOCATION},
            ("detail.location", f"must be at most 1024 characters, got {len(HUGE_LOCATION)}"),
        ),
        ({"location": 1.5}, ("detail.location", "must be an S3 URI: s3://<bucket>/<prefix> (got 1.5)")),
        (
            {"location": "https://example.com/x"},
            (
                "detail.location",
                "must be an S3 URI: s3://<bucket>/<prefix> (got 'https://example.com/x'; it must begin with s3://)",
            ),
        ),
        (
            {"dataset": "no spaces"},
            (
                "detail.dataset",
                "dataset names are 1-128 characters of letters, digits, '.', '_' and '-' (got 'no spaces')",
            ),
        ),
        (
            {"dataset": 42},
            ("detail.dataset", "dataset names are 1-128 characters of letters, digits, '.', '_' and '-' (got 42)"),
        ),
        (
            {"producedAt": "2026-11-29T05:38:12"},
            (
                "detail.producedAt",
                'must be an RFC 3339 timestamp with an offset, e.g. "2026-11-29T05:38:12Z" '
                "(got '2026-11-29T05:38:12')",
            ),
        ),
        (
            {"producedAt": "2026-02-30T05:38:12Z"},
            ("detail.producedAt", "'2026-02-30T05:38:12Z' is not a real date and time"),
        ),
        (
            {"producedAt": "2026-11-29T05:38:12." + "1" * 60 + "Z"},
            ("detail.producedAt", "must be at most 40 characters, got 81"),
        ),
    ],
)
def test_each_bad_dataset_ready_field_is_named_by_its_path(detail: dict[str, Any], expected: tuple[str, str]) -> None:
    assert expected in _errors(check_dataset_ready(_dataset_ready(**detail)))


def test_a_detail_that_is_not_an_object_or_lacks_the_dataset_is_rejected() -> None:
    event = sample_event("dataset_ready.json")
    assert _errors(check_dataset_ready(event | {"detail": "clicks-2026-11-28"})) == [
        ("detail", 'must be an object: {"dataset", "location", "producedAt"} (got \'clicks-2026-11-28\')')
    ]
    assert _errors(check_dataset_ready(event | {"detail": {"location": "s3://b-1/x/"}})) == [
        ("detail.dataset", "is required")
    ]
    assert _errors(check_dataset_ready({k: v for k, v in event.items() if k != "detail"})) == [
        ("detail", "is required")
    ]
    assert _errors(check_dataset_ready("not an event")) == [("(event)", "must be a mapping, got 'not an event'")]


def test_unknown_fields_are_accepted_but_not_kept_and_bounded_in_size() -> None:
    accepted = check_dataset_ready(_dataset_ready(rows=1200, pipelineRun={"id": "r-17"}))
    assert accepted == DatasetReady(
        "clicks-2026-11-28", "s3://search-ranking-data/clicks/2026-11-28/", "2026-11-29T05:38:12Z"
    )
    too_big = _errors(check_dataset_ready(_dataset_ready(notes="n" * MAX_EXTRA_BYTES, rows=1)))
    assert too_big == [
        (
            "detail",
            f"""fields Spotline does not use (["notes", "rows"]) are {MAX_EXTRA_BYTES + 24} bytes of JSON; """
            f"at most {MAX_EXTRA_BYTES} are accepted",
        )
    ]
    assert _errors(check_dataset_ready(_dataset_ready(location=HUGE_LOCATION))) == [
        ("detail.location", f"must be at most 1024 characters, got {len(HUGE_LOCATION)}")
    ]  # the known fields have their own bounds
    many = {f"extra{i}": i for i in range(40)}
    assert _errors(check_dataset_ready(_dataset_ready(**many))) == [("detail", "allows at most 32 entries, got 43")]


def test_messages_never_carry_an_oversized_value() -> None:
    rejection = check_dataset_ready(_dataset_ready(location=HUGE_LOCATION, dataset="y" * 100_000))
    assert isinstance(rejection, Rejection)
    assert len(rejection.reason) < 600
    assert "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" not in rejection.reason


def test_dataset_names_are_exactly_the_manifests_depends_on_names() -> None:
    in_manifest = Draft202012Validator(
        manifest_schema()["$defs"]["trainingSpec"]["properties"]["dependsOn"]["items"]["properties"]["dataset"]
    )
    for name in ("clicks-2026-11-28", "a", "A.b_c-9", "x" * 128, "x" * 129, "", "no/slash", "é", "a b"):
        assert in_manifest.is_valid(name) == isinstance(check_dataset_ready(_dataset_ready(dataset=name)), DatasetReady)


@pytest.mark.parametrize(
    ("detail", "expected"),
    [
        (
            {"bucket": "someone-elses-bucket"},
            ("detail.bucket", f"'someone-elses-bucket' is not the ingest bucket {INGEST}"),
        ),
        (
            {"key": "notes/readme.txt"},
            (
                "detail.key",
                "must be a manifest key under manifests/<team>/, at most 1024 characters (got 'notes/readme.txt')",
            ),
        ),
        (
            {"key": "manifests/search-ranking/notes.txt"},
            ("detail.key", "'manifests/search-ranking/notes.txt' is not a manifest (.yaml, .yml or .json)"),
        ),
        ({"key": "manifests/t/" + "k" * 1100 + ".yaml"}, ("detail.key", "must be at most 1024 characters, got 1117")),
        ({"versionId": "v" * 1025}, ("detail.versionId", "must be at most 1024 characters, got 1025")),
        ({"versionId": ""}, ("detail.versionId", "must be at least 1 character(s), got 0")),
        ({"allowNonCurrentVersion": "yes"}, ("detail.allowNonCurrentVersion", "must be true or false, got 'yes'")),
        ({"bucket": 7}, ("detail.bucket", "must be an S3 bucket name (got 7)")),
    ],
)
def test_each_bad_training_request_field_is_named_by_its_path(
    detail: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert expected in _errors(check_training_requested(_request(**detail), ingest_bucket=INGEST))


def test_a_training_request_needs_a_bucket_a_key_and_a_time() -> None:
    event = sample_event("training_requested.json")
    del event["time"]
    event["detail"] = {"versionId": "v1"}
    assert _errors(check_training_requested(event, ingest_bucket=INGEST)) == [
        ("detail.bucket", "is required"),
        ("detail.key", "is required"),
        ("time", "is required"),
    ]


def test_allow_non_current_version_is_carried_only_when_true() -> None:
    allowed = check_training_requested(_request(allowNonCurrentVersion=True), ingest_bucket=INGEST)
    assert isinstance(allowed, TrainingRequest) and allowed.allow_non_current_version
    refused = check_training_requested(_request(allowNonCurrentVersion=False), ingest_bucket=INGEST)
    assert isinstance(refused, TrainingRequest) and not refused.allow_non_current_version


def test_an_upload_elsewhere_than_the_ingest_bucket_is_rejected_and_other_keys_are_no_manifest() -> None:
    event = sample_event("s3_manifest_created.json")
    assert _errors(check_object_created(event, ingest_bucket="spotline-ingest-other")) == [
        ("detail.bucket.name", f"'{INGEST}' is not the ingest bucket spotline-ingest-other")
    ]
    event["detail"]["object"]["key"] = "manifests/search-ranking/notes.txt"
    upload = check_object_created(event, ingest_bucket=INGEST)
    assert isinstance(upload, ManifestUpload) and upload.location is None
    del event["detail"]["object"]["key"]
    assert _errors(check_object_created(event, ingest_bucket=INGEST)) == [("detail.object.key", "is required")]


def test_the_reason_names_every_error_up_to_a_cap() -> None:
    errors = tuple(ManifestError(f"detail.f{i:02}", "is wrong") for i in range(MAX_REPORTED_ERRORS + 3))
    rejection = Rejection(DATASET_READY, errors)
    assert rejection.reason.startswith("Dataset Ready event rejected: detail.f00: is wrong; detail.f01: is wrong")
    assert rejection.reason.endswith("... and 3 more")
    assert len(rejection.error_dicts()) == MAX_REPORTED_ERRORS


def test_the_dead_letter_envelope_clips_long_values_and_stays_under_the_sqs_limit() -> None:
    event = _dataset_ready(location=HUGE_LOCATION)
    rejection = check_dataset_ready(event)
    assert isinstance(rejection, Rejection)
    body = dead_letter_body(rejection, event)
    assert len(body.encode()) < 8 * 1024
    envelope = json.loads(body)
    assert envelope["reason"] == rejection.reason
    assert envelope["eventType"] == DATASET_READY
    assert {
        "path": "detail.location",
        "message": f"must be at most 1024 characters, got {len(HUGE_LOCATION)}",
    } in envelope["errors"]
    assert envelope["event"]["id"] == event["id"]
    assert envelope["event"]["detail"]["location"].endswith(f"... (clipped, {len(HUGE_LOCATION)} characters)")


def test_a_dead_letter_copy_too_large_even_clipped_is_cut_and_marked() -> None:
    event = copy.deepcopy(sample_event("training_requested.json"))
    event["detail"] = {f"field{i}": "é" * 1000 for i in range(250)}  # ~1.5 MB of escaped JSON
    rejection = check_training_requested(event, ingest_bucket=INGEST)
    assert isinstance(rejection, Rejection)
    body = dead_letter_body(rejection, event)
    envelope = json.loads(body)
    assert len(body.encode()) < SQS_MESSAGE_LIMIT
    assert body.isascii()
    assert envelope["eventTruncated"] is True
    assert envelope["eventBytes"] > len(envelope["event"])
    assert envelope["event"].startswith('{"version": "0"')
    assert envelope["eventType"] == TRAINING_REQUESTED


def test_kinds_have_their_own_schema() -> None:
    assert {events.schema(kind)["properties"]["detail-type"]["const"] for kind in events.SCHEMAS} == {
        DATASET_READY,
        TRAINING_REQUESTED,
        OBJECT_CREATED,
    }
