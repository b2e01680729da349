"""How scoring manifests start their runs. A ScoringJob manifest without `dependsOn` starts one
run on upload; one with `dependsOn` is registered against each of its datasets (the datasets
table, `sk = SCORING#<team>/<job>`: the latest upload of a job replaces its registration), and
each "Dataset Ready" event that leaves all of a registered job's datasets ready starts that
night's run. A run's execution name comes from the job and the moment its data was ready, so a
redelivered event, or two events seeing the same datasets ready, start it once."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.conditions import Key

from spotline.aws.common.clients import client, error_code, resource
from spotline.aws.common.observability import logger
from spotline.aws.manifest.intake import manifest_source
from spotline.aws.manifest.manifest_store import read_manifest
from spotline.aws.manifest.s3_answers import is_missing
from spotline.core.common.errors import ManifestError
from spotline.core.common.naming import ManifestLocation
from spotline.core.manifest.loader import ManifestLoadError, parse_manifest
from spotline.core.teams.team_policy import within_prefix

SCORING_STATE_MACHINE = "SCORING_STATE_MACHINE_ARN"
DATASETS_TABLE = "DATASETS_TABLE"
REGISTRATION = "SCORING#"


@dataclass(frozen=True, slots=True)
class ManifestKind:
    kind: str  # TrainingJob | ScoringJob
    job: str | None = None
    datasets: tuple[str, ...] = ()


def kind_of(location: ManifestLocation) -> ManifestKind:
    """The manifest version's kind, job name and datasets, as far as it parses; anything that
    does not read as a scoring job goes to the training lifecycle, whose LoadManifest reports it."""
    try:
        document = parse_manifest(read_manifest(location.bucket, location.key, location.version_id))
    except (ManifestLoadError, ValueError):
        return ManifestKind("TrainingJob")
    except Exception as exc:
        if is_missing(exc):  # deleted since: LoadManifest says so (ManifestNotFound)
            return ManifestKind("TrainingJob")
        raise
    if not isinstance(document, dict) or document.get("kind") != "ScoringJob":
        return ManifestKind("TrainingJob")
    spec, metadata = document.get("spec"), document.get("metadata")
    depends = spec.get("dependsOn") if isinstance(spec, dict) else None
    datasets = tuple(
        str(d["dataset"])
        for d in (depends if isinstance(depends, list) else [])
        if isinstance(d, dict) and isinstance(d.get("dataset"), str)
    )
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return ManifestKind("ScoringJob", str(name) if name else None, datasets[:20])


def register(location: ManifestLocation, kind: ManifestKind, *, etag: str | None, received_at: str) -> dict[str, Any]:
    """The job's registration against each of its datasets (the latest upload wins)."""
    table = resource("dynamodb").Table(os.environ[DATASETS_TABLE])
    for dataset in kind.datasets:
        table.put_item(
            Item={
                "pk": f"DATASET#{dataset}",
                "sk": f"{REGISTRATION}{location.team}/{kind.job}",
                **manifest_source(location, etag=etag, received_at=received_at),
                "datasets": list(kind.datasets),
            }
        )
    logger.info("Scoring job registered", extra={"key": location.key, "datasets": list(kind.datasets)})
    return {"status": "registered", "datasets": list(kind.datasets)}


def registrations(dataset: str) -> list[dict[str, Any]]:
    """The scoring jobs registered against `dataset`."""
    table = resource("dynamodb").Table(os.environ[DATASETS_TABLE])
    query: dict[str, Any] = {
        "KeyConditionExpression": Key("pk").eq(f"DATASET#{dataset}") & Key("sk").begins_with(REGISTRATION),
        "ConsistentRead": True,
    }
    found: list[dict[str, Any]] = []
    while True:
        page = table.query(**query)
        found += page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return found
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def start_run(
    source: dict[str, Any], *, ready_at: str, dataset: dict[str, Any] | None, name: str | None = None
) -> dict[str, Any]:
    """Start the scoring run of the night whose data was ready at `ready_at` (once). A run a
    dataset event starts is named after the night; one an upload starts, `name`, after the
    manifest version as a training run is (`core.common.naming.execution_name`), so that `spotline
    submit` knows it before it exists."""
    machine = os.environ[SCORING_STATE_MACHINE]
    if name is None:
        identity = f"{source['team']}/{source['key']}/{source.get('versionId')}@{ready_at}"
        stem = re.sub(r"[^A-Za-z0-9_-]", "-", str(source["key"]).rsplit("/", 1)[-1].rsplit(".", 1)[0])
        night = re.sub(r"[^0-9T]", "", ready_at[:16])
        name = f"{source['team']}-{stem}"[:50] + f"-{night}-" + hashlib.sha256(identity.encode()).hexdigest()[:8]
    payload = {
        **{k: source.get(k) for k in ("bucket", "key", "versionId", "etag", "team", "receivedAt")},
        "readyAt": ready_at,
        "dataset": dataset,
    }
    arn = f"{machine.replace(':stateMachine:', ':execution:')}:{name}"
    try:
        client("stepfunctions").start_execution(stateMachineArn=machine, name=name, input=json.dumps(payload))
    except Exception as exc:
        if error_code(exc) != "ExecutionAlreadyExists":
            raise
        return {"status": "duplicate", "name": name, "executionArn": arn}
    logger.info("Scoring run started", extra={"executionName": name, "key": source["key"], "readyAt": ready_at})
    return {"status": "started", "name": name, "executionArn": arn}


def start_ready_runs(dataset: str, ready: Any, now: str) -> list[dict[str, Any]]:
    """Each registered job whose datasets are all ready now: its night's run (DatasetGate). The
    night is the latest of its datasets' producedAt (else now); the first dataset's location, if
    the event gave one, is the night's input."""
    started = []
    for registration in registrations(dataset):
        if not _still_registered(registration):
            continue
        datasets = [str(d) for d in registration.get("datasets") or [dataset]]
        states = ready(datasets)
        if len(states) < len(datasets):
            continue
        ready_at = max(str(states[d].get("producedAt") or now) for d in datasets)
        first = states[datasets[0]]
        started.append(
            start_run(
                registration,
                ready_at=ready_at,
                dataset={"name": datasets[0], "location": first.get("location")} if first.get("location") else None,
            )
        )
    return started


def night_input(registered_input: str, location: str | None) -> tuple[str, list[ManifestError]]:
    """The night's input: the Dataset Ready event's location, which must lie under the input
    prefix the manifest registered (`spec.input.s3Uri`), not merely under one of the team's: an
    event names where the night's data is, never what else of the team's a job reads."""
    if not location:
        return registered_input, []
    uri = location.rstrip("/") + "/"
    if within_prefix(uri, registered_input):
        return uri, []
    return registered_input, [
        ManifestError(
            "spec.input.s3Uri",
            f"the Dataset Ready event's location {location} is outside the input the manifest registered "
            f"({registered_input}): a night reads only under it",
        )
    ]


def _still_registered(registration: dict[str, Any]) -> bool:
    """Whether the registered manifest version is still the current one at its key. A manifest
    deleted since (its key now a delete marker) unregisters the job: a team stops its nights by
    deleting the manifest, as it started them by uploading it. A version replaced by one that does
    not register under the same job starts nothing either (the new version registered itself if it
    should)."""
    bucket, key = str(registration["bucket"]), str(registration["key"])
    try:
        current = client("s3").head_object(Bucket=bucket, Key=key).get("VersionId")
    except Exception as exc:
        if not is_missing(exc):
            raise
        table = resource("dynamodb").Table(os.environ[DATASETS_TABLE])
        for dataset in registration.get("datasets") or []:
            table.delete_item(Key={"pk": f"DATASET#{dataset}", "sk": registration["sk"]})
        logger.info("Scoring job unregistered: its manifest was deleted", extra={"key": key})
        return False
    if registration.get("versionId") not in (None, current):
        logger.info("Scoring registration superseded", extra={"key": key, "current": current})
        return False
    return True
