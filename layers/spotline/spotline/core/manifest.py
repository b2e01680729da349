"""Manifest validation: the JSON Schema (the one definition of the shape) plus the rules a
schema cannot express, all reported together, each naming its field by path."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from spotline.core import catalog
from spotline.core.durations import MAX_SECONDS, format_duration, parse_duration
from spotline.core.errors import DOCUMENT, ManifestError
from spotline.core.loader import ManifestLoadError, parse_manifest
from spotline.core.model import (
    DEFAULT_CHECKPOINT_INTERVAL_MIN,
    DEFAULT_DEPENDENCY_TIMEOUT_S,
    DEFAULT_INSTANCE_COUNT,
    DEFAULT_MAX_RUNTIME_S,
    DEFAULT_PRIORITY,
    DEFAULT_RETRY_ATTEMPTS,
    DEFAULT_RETRY_BACKOFF_S,
    DEFAULT_STRATEGY,
    DEFAULT_VOLUME_GB,
    MAX_DEPENDENCY_TIMEOUT_S,
    InputChannel,
    JobSpec,
    scalar_to_string,
    to_rfc3339,
)

SCHEMA_RESOURCE = "schemas/manifest-v1.schema.json"
MAX_BACKOFF_SECONDS = 6 * 3600
MAX_DURATION_TEXT = 40


@dataclass(frozen=True, slots=True)
class ValidationResult:
    spec: JobSpec | None
    errors: list[ManifestError]

    @property
    def valid(self) -> bool:
        return not self.errors


@cache
def schema() -> dict[str, Any]:
    return json.loads(resources.files("spotline.core").joinpath(SCHEMA_RESOURCE).read_text())  # type: ignore[no-any-return]


@cache
def _validator() -> Draft202012Validator:
    Draft202012Validator.check_schema(schema())
    return Draft202012Validator(schema())


def validate_bytes(data: bytes, *, now: datetime, expected_team: str | None = None) -> ValidationResult:
    """Read and validate a manifest file's bytes. Never raises for bad input."""
    try:
        document = parse_manifest(data)
    except ManifestLoadError as exc:
        return ValidationResult(None, [exc.error])
    return validate_document(document, now=now, expected_team=expected_team)


def validate_document(document: dict[str, Any], *, now: datetime, expected_team: str | None = None) -> ValidationResult:
    errors = [_from_schema_error(e) for e in _validator().iter_errors(document)]
    errors.extend(_semantic_errors(document, now=now, expected_team=expected_team))
    errors = sorted(set(errors), key=lambda e: (e.path, e.message))
    if errors:
        return ValidationResult(None, errors)
    return ValidationResult(_build_spec(document), [])


# --- schema errors -----------------------------------------------------------------------


def format_path(parts: Iterable[str | int]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or DOCUMENT


def _join(parent: str, child: str) -> str:
    return child if parent == DOCUMENT else f"{parent}.{child}"


def _from_schema_error(error: ValidationError) -> ManifestError:
    path = format_path(error.absolute_path)
    subschema: Any = error.schema
    instance: Any = error.instance
    expected: Any = error.validator_value
    custom = subschema.get("x-message") if isinstance(subschema, dict) else None
    kind = error.validator
    if "propertyNames" in error.relative_schema_path:
        return ManifestError(_join(path, str(error.instance)), str(custom or f"invalid key: {error.message}"))
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        return ManifestError(_join(path, missing), "is required")
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(subschema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        key = unknown[0] if unknown else "?"
        hint = difflib.get_close_matches(key, allowed, n=1)
        suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
        more = f"; also unknown: {', '.join(unknown[1:])}" if len(unknown) > 1 else ""
        return ManifestError(_join(path, key), f"unknown field{suggestion}; allowed here: {', '.join(allowed)}{more}")
    if custom and kind in {"pattern", "const", "type", "maxLength"}:
        return ManifestError(path, f"{custom} (got {_show(error.instance)})")
    messages = {
        "type": lambda: f"must be {_type_words(expected)}, got {_show(instance)}",
        "enum": lambda: f"must be one of {', '.join(map(str, expected))}, got {_show(instance)}",
        "const": lambda: f"must be {expected!r}, got {_show(instance)}",
        "minimum": lambda: f"must be at least {expected}, got {instance}",
        "maximum": lambda: f"must be at most {expected}, got {instance}",
        "minItems": lambda: f"needs at least {expected} item(s)",
        "maxItems": lambda: f"allows at most {expected} items, got {len(instance)}",
        "maxProperties": lambda: f"allows at most {expected} entries, got {len(instance)}",
        "maxLength": lambda: f"must be at most {expected} characters",
        "pattern": lambda: f"{_show(instance)} does not match {expected}",
    }
    make = messages.get(str(kind))
    return ManifestError(path, make() if make else error.message)


def _type_words(value: Any) -> str:
    names = {
        "object": "a mapping",
        "array": "a list",
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "true or false",
    }
    if isinstance(value, list):
        return " or ".join(names.get(v, str(v)) for v in value)
    return names.get(value, str(value))


def _show(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- rules the schema cannot express -------------------------------------------------------


def _get(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def _duration(capacity: Any, key: str) -> tuple[int | None, ManifestError | None]:
    raw = _get(capacity, key)
    if not isinstance(raw, str):
        return None, None
    path = f"spec.capacity.{key}"
    if len(raw) > MAX_DURATION_TEXT:
        return None, ManifestError(path, f"is longer than SageMaker's limit of 28d ({len(raw)} characters)")
    try:
        seconds = parse_duration(raw)
    except ValueError:
        return None, None  # the schema pattern already reported it
    if seconds <= 0:
        return None, ManifestError(path, "must be longer than zero")
    if seconds > MAX_SECONDS:
        return None, ManifestError(path, f"{raw} is longer than SageMaker's limit of 28d")
    return seconds, None


def _semantic_errors(document: dict[str, Any], *, now: datetime, expected_team: str | None) -> Iterator[ManifestError]:
    team = _get(document, "metadata", "team")
    if expected_team is not None and isinstance(team, str) and team != expected_team:
        yield ManifestError(
            "metadata.team",
            f"is {team!r} but the manifest was uploaded under manifests/{expected_team}/; "
            "a team may only submit from its own folder",
        )

    spec = _get(document, "spec")
    image = _get(spec, "image")
    if isinstance(image, str) and "@" not in image and image.rsplit(":", 1)[-1].lower() == "latest":
        yield ManifestError("spec.image", "the tag 'latest' is not allowed: pin a version tag or a @sha256 digest")

    instance = _get(spec, "resources", "instanceType")
    if isinstance(instance, str) and instance.startswith("ml.") and catalog.instance_type(instance) is None:
        close = difflib.get_close_matches(instance, catalog.instance_type_names(), n=3)
        hint = f"; closest: {', '.join(close)}" if close else ""
        yield ManifestError(
            "spec.resources.instanceType", f"{instance} is not a SageMaker training instance type Spotline knows{hint}"
        )

    inputs = _get(spec, "inputs")
    if isinstance(inputs, list):
        seen: dict[str, int] = {}
        for index, channel in enumerate(inputs):
            name = _get(channel, "name")
            if isinstance(name, str):
                if name in seen:
                    yield ManifestError(
                        f"spec.inputs[{index}].name", f"channel {name!r} is already used by spec.inputs[{seen[name]}]"
                    )
                else:
                    seen[name] = index

    capacity = _get(spec, "capacity")
    strategy = _get(capacity, "strategy") or DEFAULT_STRATEGY
    if strategy != "on-demand" and isinstance(spec, dict) and "checkpoint" not in spec:
        yield ManifestError(
            "spec.checkpoint",
            f"is required for strategy {strategy}: spot jobs resume from checkpoints (or use strategy on-demand)",
        )

    durations: dict[str, int | None] = {}
    for key in ("maxRuntime", "maxWait", "expectedDuration"):
        durations[key], problem = _duration(capacity, key)
        if problem:
            yield problem
    max_wait, expected = durations["maxWait"], durations["expectedDuration"]
    if strategy == "on-demand" and _get(capacity, "maxWait") is not None:
        yield ManifestError("spec.capacity.maxWait", "applies to spot only; remove it or choose a spot strategy")
    # When maxRuntime itself is wrong (reported above), comparisons against it would mislead.
    runtime_known = _get(capacity, "maxRuntime") is None or durations["maxRuntime"] is not None
    max_runtime = durations["maxRuntime"] or DEFAULT_MAX_RUNTIME_S
    if runtime_known and strategy != "on-demand" and max_wait is not None and max_wait < max_runtime:
        yield ManifestError(
            "spec.capacity.maxWait",
            f"{format_duration(max_wait)} is shorter than maxRuntime {format_duration(max_runtime)}; "
            "SageMaker requires maxWait >= maxRuntime",
        )
    if runtime_known and expected is not None and expected > max_runtime:
        yield ManifestError(
            "spec.capacity.expectedDuration",
            f"{format_duration(expected)} exceeds maxRuntime {format_duration(max_runtime)}: "
            "the job would be stopped first",
        )

    backoff, problem = _duration(_get(capacity, "retry"), "backoff")
    if problem:
        yield ManifestError("spec.capacity.retry.backoff", problem.message)
    elif backoff is not None and backoff > MAX_BACKOFF_SECONDS:
        yield ManifestError("spec.capacity.retry.backoff", f"must be at most {format_duration(MAX_BACKOFF_SECONDS)}")

    timeout_text = _get(spec, "dependencyTimeout")
    if isinstance(timeout_text, str):
        try:
            timeout = (
                parse_duration(timeout_text) if len(timeout_text) <= MAX_DURATION_TEXT else MAX_DEPENDENCY_TIMEOUT_S + 1
            )
        except ValueError:
            timeout = None  # the schema pattern reported it
        if timeout is not None and not 0 < timeout <= MAX_DEPENDENCY_TIMEOUT_S:
            yield ManifestError(
                "spec.dependencyTimeout", f"must be between 1s and {format_duration(MAX_DEPENDENCY_TIMEOUT_S)}"
            )
    if timeout_text is not None and not _get(spec, "dependsOn"):
        yield ManifestError("spec.dependencyTimeout", "applies only with dependsOn; remove it or list the datasets")

    deadline_text = _get(capacity, "deadline")
    if isinstance(deadline_text, str):
        yield from _deadline_errors(deadline_text, expected, capacity, now)


def _deadline_errors(text: str, expected: int | None, capacity: Any, now: datetime) -> Iterator[ManifestError]:
    path = "spec.capacity.deadline"
    try:
        deadline = datetime.fromisoformat(text.upper())
    except ValueError:
        yield ManifestError(path, f"{text!r} is not a real date and time")
        return
    if deadline.tzinfo is None:
        return  # the schema pattern reported the missing offset
    try:
        to_rfc3339(deadline)
    except OverflowError:
        yield ManifestError(path, f"{text} is out of range")
        return
    if deadline <= now:
        yield ManifestError(path, f"{text} is in the past (now {to_rfc3339(now)})")
        return
    if _get(capacity, "expectedDuration") is None:
        yield ManifestError(
            "spec.capacity.expectedDuration", "is required when a deadline is set: Spotline plans against it"
        )
    elif expected is not None and (deadline - now).total_seconds() < expected:
        left = format_duration((deadline - now).total_seconds())
        yield ManifestError(
            path,
            f"is not feasible: {left} left but expectedDuration is {format_duration(expected)}; "
            "move the deadline or shorten the job",
        )


# --- the normalized spec ----------------------------------------------------------------------


def _build_spec(document: dict[str, Any]) -> JobSpec:
    metadata, spec = document["metadata"], document["spec"]
    capacity = spec.get("capacity", {})
    retry = capacity.get("retry", {})
    resources_ = spec["resources"]
    strategy = capacity.get("strategy", DEFAULT_STRATEGY)
    max_runtime = parse_duration(capacity["maxRuntime"]) if "maxRuntime" in capacity else DEFAULT_MAX_RUNTIME_S
    max_wait: int | None = None
    if strategy != "on-demand":
        # SageMaker needs MaxWait >= MaxRuntime for managed spot; by default allow as long
        # again for waiting on capacity, within the 28-day ceiling.
        max_wait = parse_duration(capacity["maxWait"]) if "maxWait" in capacity else min(2 * max_runtime, MAX_SECONDS)
    deadline = capacity.get("deadline")
    checkpoint = spec.get("checkpoint")
    return JobSpec(
        team=metadata["team"],
        name=metadata["name"],
        owner=metadata.get("owner"),
        labels=dict(metadata.get("labels", {})),
        image=spec["image"],
        role_arn=spec["roleArn"],
        hyperparameters={k: scalar_to_string(v) for k, v in spec.get("hyperparameters", {}).items()},
        environment={k: scalar_to_string(v) for k, v in spec.get("environment", {}).items()},
        instance_type=resources_["instanceType"],
        instance_count=resources_.get("instanceCount", DEFAULT_INSTANCE_COUNT),
        volume_size_gb=resources_.get("volumeSizeGB", DEFAULT_VOLUME_GB),
        inputs=tuple(InputChannel(c["name"], c["s3Uri"], c.get("mode", "File")) for c in spec["inputs"]),
        output_s3_uri=spec["output"]["s3Uri"],
        checkpoint_s3_uri=checkpoint["s3Uri"] if checkpoint else None,
        checkpoint_interval_minutes=(checkpoint or {}).get("intervalMinutes", DEFAULT_CHECKPOINT_INTERVAL_MIN),
        strategy=strategy,
        max_runtime_seconds=max_runtime,
        max_wait_seconds=max_wait,
        expected_duration_seconds=parse_duration(capacity["expectedDuration"])
        if "expectedDuration" in capacity
        else None,
        deadline=to_rfc3339(datetime.fromisoformat(deadline.upper())) if deadline else None,
        retry_max_attempts=retry.get("maxAttempts", DEFAULT_RETRY_ATTEMPTS),
        retry_backoff_seconds=parse_duration(retry["backoff"]) if "backoff" in retry else DEFAULT_RETRY_BACKOFF_S,
        priority=spec.get("priority", DEFAULT_PRIORITY),
        depends_on=tuple(d["dataset"] for d in spec.get("dependsOn", [])),
        dependency_timeout_seconds=parse_duration(spec["dependencyTimeout"])
        if "dependencyTimeout" in spec
        else DEFAULT_DEPENDENCY_TIMEOUT_S,
    )
