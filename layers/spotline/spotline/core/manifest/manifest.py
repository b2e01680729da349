"""Manifest validation: the JSON Schema (the one definition of the shape) plus the rules a
schema cannot express, all reported together, each naming its field by path.

Messages come from the schema's `x-message`: a string words the shape keywords (pattern,
const, type, not) of the subschema it sits in; a mapping keyword -> text words the keywords it
names. Limits (maxLength, maxProperties, ...) always say the limit and the actual size, with the
mapping's text, if any, as the reason. The list is capped at MAX_ERRORS, keys are cut in paths
and messages are bounded, so a hostile manifest cannot produce a huge report.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from spotline.core.common import json_schemas
from spotline.core.common.durations import MAX_SECONDS, format_duration, parse_duration
from spotline.core.common.errors import DOCUMENT, ManifestError
from spotline.core.common.json_schemas import clip, closest_hint, format_path, show
from spotline.core.common.json_schemas import dig as _get
from spotline.core.manifest.distribution_checks import build_distribution, distribution_errors
from spotline.core.manifest.loader import ManifestLoadError, parse_manifest
from spotline.core.scoring.scoring import ScoringSpec, build_scoring_spec, scoring_errors
from spotline.core.spec import catalog
from spotline.core.spec.model import (
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
    InstanceOption,
    JobSpec,
    MetricDefinition,
    scalar_to_string,
    to_rfc3339,
)
from spotline.core.training.launchers import MAX_LAUNCHER_HYPERPARAMETERS
from spotline.core.training.request_size import manifest_size_errors

SCHEMA_FILE = "manifest-v1.schema.json"
MAX_BACKOFF_SECONDS = 6 * 3600
MAX_ERRORS = 50
"""Errors listed for one manifest; the rest are counted in one last error."""
MAX_MESSAGE = 1000
MAX_KEEP_ALIVE_SECONDS = 3600
"""SageMaker keeps a warm pool at most an hour after its job (KeepAlivePeriodInSeconds)."""


@dataclass(frozen=True, slots=True)
class ValidationResult:
    spec: JobSpec | None
    errors: list[ManifestError]
    scoring: ScoringSpec | None = None  # a valid `kind: ScoringJob` manifest (then spec is None)

    @property
    def valid(self) -> bool:
        return not self.errors


def schema() -> dict[str, Any]:
    return json_schemas.load(SCHEMA_FILE)


def validate_bytes(data: bytes, *, now: datetime, expected_team: str | None = None) -> ValidationResult:
    """Read and validate a manifest file's bytes. Never raises for bad input."""
    try:
        document = parse_manifest(data)
    except ManifestLoadError as exc:
        return ValidationResult(None, [exc.error])
    return validate_document(document, now=now, expected_team=expected_team)


def validate_document(document: dict[str, Any], *, now: datetime, expected_team: str | None = None) -> ValidationResult:
    errors = json_schemas.errors_of(SCHEMA_FILE, document, whole_integers=True)
    if document.get("kind") == "ScoringJob":
        errors.extend(_team_errors(document, expected_team))
        spec = document.get("spec")
        errors.extend(scoring_errors(spec, now=now) if isinstance(spec, dict) and not errors else [])
        if errors:
            return ValidationResult(None, _ordered(errors))
        return ValidationResult(None, [], build_scoring_spec(document))
    errors.extend(_semantic_errors(document, now=now, expected_team=expected_team))
    if errors:
        return ValidationResult(None, _ordered(errors))
    spec = _build_spec(document)
    # Only a valid manifest has a request to measure; its size is Batch's quota, not a shape rule.
    if size_errors := manifest_size_errors(spec):
        return ValidationResult(None, size_errors)
    return ValidationResult(spec, [])


def _ordered(errors: list[ManifestError]) -> list[ManifestError]:
    """A manifest's errors as both kinds list them. A misspelt field is usually the cause of the
    others ("spec.chekpoint: unknown field" makes "spec.checkpoint: is required"), so unknown
    fields come first, then the rest by field; capped."""
    return _capped(sorted(set(errors), key=lambda e: (not e.message.startswith("unknown field"), e.path, e.message)))


def _capped(errors: list[ManifestError]) -> list[ManifestError]:
    shown = [ManifestError(e.path, clip(e.message, MAX_MESSAGE)) for e in errors[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        more = len(errors) - MAX_ERRORS
        shown.append(ManifestError(DOCUMENT, f"... and {more} more error(s) not listed; fix the ones above first"))
    return shown


@cache
def _subschema(*keys: str) -> dict[str, Any]:
    """The schema node at `keys`, to read a limit the rules below share with the schema."""
    node: Any = schema()
    for key in keys:
        node = node[key]
    return node  # type: ignore[no-any-return]


def _spec_field(*keys: str) -> dict[str, Any]:
    return _subschema("$defs", "trainingSpec", "properties", *keys)


# --- rules the schema cannot express -------------------------------------------------------


def _within_limit(text: Any, field: dict[str, Any]) -> bool:
    """A string the schema's maxLength accepts; longer ones are reported by the schema alone."""
    return isinstance(text, str) and len(text) <= field["maxLength"]


def _duration(capacity: Any, key: str) -> tuple[int | None, ManifestError | None]:
    raw = _get(capacity, key)
    if not _within_limit(raw, _subschema("$defs", "duration")):
        return None, None
    path = f"spec.capacity.{key}"
    try:
        seconds = parse_duration(raw)
    except ValueError:
        return None, None  # the schema pattern already reported it
    if seconds <= 0:
        return None, ManifestError(path, "must be longer than zero")
    if seconds > MAX_SECONDS:
        return None, ManifestError(path, f"{raw} is longer than SageMaker's limit of 28d")
    return seconds, None


def _unknown_instance_type(instance: Any, path: str) -> Iterator[ManifestError]:
    known_shape = _within_limit(instance, _spec_field("resources", "properties", "instanceType"))
    if known_shape and instance.startswith("ml.") and catalog.instance_type(instance) is None:
        hint = closest_hint(instance, catalog.training_instance_type_names())
        yield ManifestError(path, f"{instance} is not a SageMaker training instance type{hint}")


def _team_errors(document: dict[str, Any], expected_team: str | None) -> Iterator[ManifestError]:
    team = _get(document, "metadata", "team")
    if expected_team is not None and isinstance(team, str) and team != expected_team:
        yield ManifestError(
            "metadata.team",
            f"is {show(team)} but the manifest was uploaded under manifests/{expected_team}/; "
            "a team may only submit from its own folder",
        )


def _semantic_errors(document: dict[str, Any], *, now: datetime, expected_team: str | None) -> Iterator[ManifestError]:
    yield from _team_errors(document, expected_team)

    spec = _get(document, "spec")
    image = _get(spec, "image")
    if isinstance(image, str) and "@" not in image and image.rsplit(":", 1)[-1].lower() == "latest":
        yield ManifestError("spec.image", "the tag 'latest' is not allowed: pin a version tag or a @sha256 digest")

    instance = _get(spec, "resources", "instanceType")
    yield from _unknown_instance_type(instance, "spec.resources.instanceType")
    alternatives = _get(spec, "resources", "alternatives")
    if isinstance(alternatives, list):
        seen_types: dict[str, str] = {instance: "spec.resources.instanceType"} if isinstance(instance, str) else {}
        for index, alternative in enumerate(alternatives):
            path = f"spec.resources.alternatives[{index}].instanceType"
            other = _get(alternative, "instanceType")
            yield from _unknown_instance_type(other, path)
            if isinstance(other, str) and other in seen_types:
                # SageMaker: "An instance type can appear only once in an InstancePreferences list."
                yield ManifestError(path, f"{other} is already listed as {seen_types[other]}")
            elif isinstance(other, str):
                seen_types[other] = path

    inputs = _get(spec, "inputs")
    if isinstance(inputs, list):
        seen: dict[str, int] = {}
        for index, channel in enumerate(inputs):
            name = _get(channel, "name")
            if isinstance(name, str):
                if name in seen:
                    yield ManifestError(
                        f"spec.inputs[{index}].name",
                        f"channel {show(name)} is already used by spec.inputs[{seen[name]}]",
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
    if strategy == "spot-only" and _get(capacity, "trainingPlan") is not None:
        yield ManifestError(
            "spec.capacity.trainingPlan", "a spot-only job never leaves spot; choose spot-first or remove the plan"
        )
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
    if _within_limit(timeout_text, _subschema("$defs", "duration")):
        try:
            timeout = parse_duration(timeout_text)
        except ValueError:
            timeout = None  # the schema pattern reported it
        if timeout is not None and not 0 < timeout <= MAX_DEPENDENCY_TIMEOUT_S:
            yield ManifestError(
                "spec.dependencyTimeout", f"must be between 1s and {format_duration(MAX_DEPENDENCY_TIMEOUT_S)}"
            )
    if timeout_text is not None and not _get(spec, "dependsOn"):
        yield ManifestError("spec.dependencyTimeout", "applies only with dependsOn; remove it or list the datasets")

    yield from _keep_alive_errors(_get(spec, "resources"), strategy)
    yield from distribution_errors(spec)
    yield from _code_errors(spec)
    yield from _metric_errors(_get(spec, "metrics"))

    deadline_text = _get(capacity, "deadline")
    if _within_limit(deadline_text, _spec_field("capacity", "properties", "deadline")):
        yield from _deadline_errors(deadline_text, expected, capacity, now)

    yield from _string_form_errors(spec)


def _keep_alive_errors(resources: Any, strategy: str) -> Iterator[ManifestError]:
    seconds, problem = _duration(resources, "keepAlive")
    path = "spec.resources.keepAlive"
    if problem:
        yield ManifestError(path, problem.message)
    elif seconds is not None and seconds > MAX_KEEP_ALIVE_SECONDS:
        text = _get(resources, "keepAlive")
        yield ManifestError(path, f"{text} is longer than SageMaker's limit of 1h for warm pools")
    if _get(resources, "keepAlive") is not None and strategy != "on-demand":
        yield ManifestError(
            path, f"needs strategy on-demand: SageMaker keeps no warm pools on spot (strategy is {strategy})"
        )


CODE_HYPERPARAMETERS = 2
"""spec.code is sent as two hyperparameters (sagemaker_program, sagemaker_submit_directory)."""


def _code_errors(spec: Any) -> Iterator[ManifestError]:
    """SageMaker takes 100 hyperparameters: spec.code and spec.distribution add theirs to the manifest's."""
    hyperparameters = _get(spec, "hyperparameters")
    takers = {"spec.code": CODE_HYPERPARAMETERS, "spec.distribution": MAX_LAUNCHER_HYPERPARAMETERS}
    taken = {name: count for name, count in takers.items() if _get(spec, name.removeprefix("spec.")) is not None}
    limit = _spec_field("hyperparameters")["maxProperties"] - sum(taken.values())
    if taken and isinstance(hyperparameters, dict) and len(hyperparameters) > limit:
        yield ManifestError(
            "spec.hyperparameters",
            f"must have at most {limit} entries with {' and '.join(taken)}, got {len(hyperparameters)}: SageMaker "
            f"takes 100 and {', '.join(f'{name} takes {count}' for name, count in taken.items())}",
        )


def _metric_errors(metrics: Any) -> Iterator[ManifestError]:
    """Each regex must compile and capture the value (SageMaker publishes its first group); names
    are unique, as CloudWatch would merge two definitions of one name."""
    if not isinstance(metrics, list):
        return
    seen: dict[str, int] = {}
    for index, metric in enumerate(metrics):
        name, regex = _get(metric, "name"), _get(metric, "regex")
        if isinstance(name, str):
            if name in seen:
                first = f"spec.metrics[{seen[name]}]"
                yield ManifestError(f"spec.metrics[{index}].name", f"metric {show(name)} is already defined by {first}")
            else:
                seen[name] = index
        if not _within_limit(regex, _spec_field("metrics", "items", "properties", "regex")):
            continue
        try:
            groups = re.compile(regex).groups
        except re.error as exc:
            problem = f"is not a regular expression: {exc.msg} at position {exc.pos}"
            yield ManifestError(f"spec.metrics[{index}].regex", problem)
            continue
        except (OverflowError, RecursionError):  # a repeat count or nesting re cannot hold
            yield ManifestError(f"spec.metrics[{index}].regex", "is a regular expression too large to compile")
            continue
        if groups == 0:
            yield ManifestError(
                f"spec.metrics[{index}].regex",
                "has no group: SageMaker publishes what the first (...) group captures, e.g. 'loss=([0-9.]+)'",
            )


def _string_form_errors(spec: Any) -> Iterator[ManifestError]:
    """Numbers reach SageMaker as strings, so their string form has the schema's string limit
    (a 3,000-digit integer is a 3,000-character hyperparameter)."""
    for field in ("hyperparameters", "environment"):
        values = _get(spec, field)
        if not isinstance(values, dict):
            continue
        limit = _spec_field(field, "additionalProperties")["maxLength"]
        for key, value in values.items():
            if isinstance(value, int | float) and len(text := scalar_to_string(value)) > limit:
                yield ManifestError(
                    format_path(("spec", field, key)),
                    f"must be at most {limit} characters once sent to SageMaker as a string, "
                    f"got a number of {len(text)}",
                )


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
        inputs=tuple(_channel(c) for c in spec["inputs"]),
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
        code_s3_uri=spec["code"]["s3Uri"] if "code" in spec else None,
        code_entry_point=spec["code"]["entryPoint"] if "code" in spec else None,
        metrics=tuple(MetricDefinition(m["name"], m["regex"]) for m in spec.get("metrics", [])),
        keep_alive_seconds=parse_duration(resources_["keepAlive"]) if "keepAlive" in resources_ else 0,
        training_plan=capacity.get("trainingPlan"),
        regions=tuple(capacity.get("regions", ())),
        distribution=build_distribution(spec.get("distribution")),
        infra_check=resources_.get("infraCheck"),
        checkpoint_format=(checkpoint or {}).get("format", "per-rank"),
        alternatives=tuple(
            InstanceOption(
                a["instanceType"],
                a.get("instanceCount", resources_.get("instanceCount", DEFAULT_INSTANCE_COUNT)),
                float(a.get("speed", 1.0)),
            )
            for a in resources_.get("alternatives", [])
        ),
    )


def _channel(raw: dict[str, Any]) -> InputChannel:
    """An input channel of the manifest: an S3 prefix, or a file system's directory."""
    mounted = raw.get("fileSystem")
    if mounted is None:
        return InputChannel(
            raw["name"], raw["s3Uri"], raw.get("mode", "File"), raw.get("distribution", "FullyReplicated")
        )
    return InputChannel(
        raw["name"],
        "",
        file_system_type=mounted["type"],
        file_system_id=mounted["id"],
        file_system_path=mounted["path"],
        file_system_access=mounted.get("access", "ro"),
    )
