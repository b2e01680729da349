"""Bounds on every manifest string, SageMaker's limits, reserved names, and a bounded error list
for hostile manifests. One past each limit is refused in test_bad_manifests.py; here the exact
limits are accepted, the schema's numbers are checked against SageMaker's API model, and the
schema's own patterns are checked for bounds and for linear matching time."""

from __future__ import annotations

import copy
import json
import re
import re._parser
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import botocore.session
import pytest

from spotline.core.common.errors import DOCUMENT
from spotline.core.manifest.manifest import MAX_ERRORS, ValidationResult, schema, validate_bytes
from spotline.core.training.training_request import (
    CHECKPOINT_INTERVAL_ENV,
    SPOTLINE_ENVIRONMENT,
    Attempt,
    create_training_job_request,
)

NOW = datetime(2026, 11, 29, tzinfo=UTC)
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:TrainingLifecycle:search-ranking-ranker-v2-1a2b3c4d"
IMAGE_PREFIX = "123456789012.dkr.ecr.us-east-1.amazonaws.com/"
MINIMAL: dict[str, Any] = {
    "apiVersion": "spotline/v1",
    "kind": "TrainingJob",
    "metadata": {"team": "search-ranking", "name": "ranker-v2"},
    "spec": {
        "image": IMAGE_PREFIX + "ranker:2026.11.28",
        "roleArn": "arn:aws:iam::123456789012:role/spotline/ranker-training",
        "resources": {"instanceType": "ml.g5.2xlarge"},
        "inputs": [{"name": "train", "s3Uri": "s3://search-ranking-data/train/"}],
        "output": {"s3Uri": "s3://search-ranking-models/ranker-v2/"},
        "checkpoint": {"s3Uri": "s3://search-ranking-checkpoints/ranker-v2/"},
    },
}


def _check(document: dict[str, Any]) -> ValidationResult:
    return validate_bytes(json.dumps(document).encode(), now=NOW)


def _with(metadata: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    document = copy.deepcopy(MINIMAL)
    document["metadata"].update(metadata or {})
    document["spec"].update(spec)
    return document


def _spec_schema(*keys: str) -> Any:
    node: Any = schema()["$defs"]["trainingSpec"]["properties"]
    for key in keys:
        node = node[key]
    return node


# --- the exact limits are accepted ---------------------------------------------------------------


S3_URI_AT_LIMIT = "s3://bkt/" + "p" * (1024 - len("s3://bkt/"))
AT_THE_LIMITS: dict[str, dict[str, Any]] = {
    "names": {
        "metadata": {
            "team": "a" * 24,
            "name": "r" * 40,
            "owner": "a" * (254 - len("@example.com")) + "@example.com",
            "labels": {**{f"k{i}": "v" for i in range(19)}, "k" * 128: "v" * 256},
        },
        "image": IMAGE_PREFIX + "r" * (255 - len(IMAGE_PREFIX) - len(":v1")) + ":v1",
        # The pattern leaves the partition open (aws, aws-cn, aws-us-gov, ...); SageMaker bounds the ARN.
        "roleArn": "arn:aws" + "-" * (2048 - len("arn:aws:iam::123456789012:role/x")) + ":iam::123456789012:role/x",
        "capacity": {
            "maxRuntime": "0" * 37 + "30h",
            "maxWait": "P" + "0" * 37 + "2D",
            "expectedDuration": "8h",
            "deadline": "2026-12-02T06:00:00." + "0" * 14 + "+00:00",
            "retry": {"backoff": "0" * 38 + "2m"},
        },
        "dependsOn": [{"dataset": "d" * 128}],
        "dependencyTimeout": "0" * 38 + "1d",
    },
    "hyperparameters": {
        "hyperparameters": {
            **{f"h{i}": i for i in range(97)},
            "n" * 256: "name at the limit",
            "text": "x" * 2500,
            "number": int("9" * 2500),
        }
    },
    "environment": {
        "environment": {
            **{f"VAR_{i}": i for i in range(93)},
            "N" * 512: "name at the limit",
            "TEXT": "x" * 512,
            "NUMBER": int("7" * 512),
        }
    },
    "storage": {
        "inputs": [
            {"name": "c" * 64, "s3Uri": S3_URI_AT_LIMIT},
            *({"name": f"c{i}", "s3Uri": "s3://bkt/"} for i in range(19)),
        ],
        "output": {"s3Uri": S3_URI_AT_LIMIT},
        "checkpoint": {"s3Uri": S3_URI_AT_LIMIT},
    },
}
"""Every bounded value at its limit, in groups: each group fits AWS Batch's 10 KiB service
request payload; all of them at once do not (test_every_limit_at_once_breaks_batchs_payload_quota_only)."""


def _at_the_limits(*groups: str) -> dict[str, Any]:
    document = copy.deepcopy(MINIMAL)
    for group in groups or tuple(AT_THE_LIMITS):
        values = copy.deepcopy(AT_THE_LIMITS[group])
        document["metadata"].update(values.pop("metadata", {}))
        document["spec"].update(values)
    return document


@pytest.mark.parametrize("group", AT_THE_LIMITS)
def test_each_value_exactly_at_its_limit_is_valid(group: str) -> None:
    result = _check(_at_the_limits(group))

    assert result.valid, "\n".join(map(str, result.errors))
    assert result.spec is not None


def test_names_durations_and_ids_at_their_limits_are_taken_whole() -> None:
    document = _at_the_limits("names")
    metadata, spec = document["metadata"], document["spec"]
    capacity = spec["capacity"]
    assert [len(metadata["owner"]), len(spec["image"]), len(spec["roleArn"])] == [254, 255, 2048]
    assert [len(capacity[key]) for key in ("maxRuntime", "maxWait", "deadline")] == [40, 40, 40]
    assert [len(capacity["retry"]["backoff"]), len(spec["dependencyTimeout"])] == [40, 40]

    result = _check(document)

    assert result.spec is not None and result.spec.role_arn == spec["roleArn"]


def test_100_hyperparameters_at_their_limits_are_taken_as_strings() -> None:
    result = _check(_at_the_limits("hyperparameters"))

    assert result.spec is not None
    assert len(result.spec.hyperparameters) == 100
    assert result.spec.hyperparameters["number"] == "9" * 2500


def test_the_96_environment_variables_allowed_fill_sagemakers_100_with_every_one_spotline_adds() -> None:
    """The worst case: a spot attempt asked for an early first checkpoint, of a custom image whose
    entrypoint reads the launcher and its processes per host from the environment."""
    document = _at_the_limits("environment")
    document["spec"]["resources"]["instanceCount"] = 2
    document["spec"]["distribution"] = {"launcher": "mpi", "processesPerHost": 8}
    result = _check(document)
    assert result.spec is not None and result.spec.checkpoint_s3_uri is not None
    assert len(result.spec.environment) == 96
    assert result.spec.environment["NUMBER"] == "7" * 512

    request = create_training_job_request(result.spec, Attempt(EXECUTION, 1, "spot", first_checkpoint_minutes=5))

    assert set(SPOTLINE_ENVIRONMENT) <= set(request["Environment"])
    assert len(request["Environment"]) == _sagemaker_limits()["Environment"][0] == 100
    assert all(type(value) is str for value in request["Environment"].values())


def test_every_limit_at_once_breaks_batchs_payload_quota_only() -> None:
    """SageMaker's per-field limits add up to far more than the 10 KiB Batch takes as one service
    request payload: such a manifest is refused once, for its size, naming the largest fields."""
    result = _check(_at_the_limits())

    assert not result.valid
    (error,) = result.errors
    assert error.path == "spec.hyperparameters"
    assert "serviceRequestPayload is" in error.message and "at most 10,240 (10 KiB)" in error.message
    assert "spec.hyperparameters is 6,349 bytes of it, spec.inputs is 4,267 bytes of it" in error.message


# --- the schema's numbers are SageMaker's ---------------------------------------------------------


def _sagemaker_limits() -> dict[str, tuple[int, ...]]:
    """Maximum sizes in botocore's SageMaker model (botocore itself does not enforce them)."""
    request: Any = botocore.session.get_session().get_service_model("sagemaker").operation_model("CreateTrainingJob")
    members = request.input_shape.members
    tag = members["Tags"].member.members
    hyperparameters, environment, inputs = (
        members["HyperParameters"],
        members["Environment"],
        members["InputDataConfig"],
    )
    shapes = {
        "HyperParameters": (hyperparameters, hyperparameters.key, hyperparameters.value),
        "Environment": (environment, environment.key, environment.value),
        "TrainingImage": (members["AlgorithmSpecification"].members["TrainingImage"],),
        "RoleArn": (members["RoleArn"],),
        "Tag": (tag["Key"], tag["Value"]),
        "Channel": (inputs, inputs.member.members["ChannelName"]),
        "S3Uri": (members["OutputDataConfig"].members["S3OutputPath"],),
    }
    return {name: tuple(shape.metadata["max"] for shape in group) for name, group in shapes.items()}


def _pattern_width(pattern: str) -> int:
    return int(re._parser.parse(pattern).getwidth()[1])


def test_the_schemas_limits_are_sagemakers() -> None:
    limits = _sagemaker_limits()
    hyperparameters, environment = _spec_schema("hyperparameters"), _spec_schema("environment")
    labels = schema()["properties"]["metadata"]["properties"]["labels"]
    channels = _spec_schema("inputs")
    assert limits["HyperParameters"] == (
        hyperparameters["maxProperties"],
        hyperparameters["propertyNames"]["maxLength"],
        hyperparameters["additionalProperties"]["maxLength"],
    )
    # Spotline may add SPOTLINE_ENVIRONMENT itself: that many fewer for the manifest.
    assert limits["Environment"] == (
        environment["maxProperties"] + len(SPOTLINE_ENVIRONMENT),
        _pattern_width(environment["propertyNames"]["pattern"]),
        environment["additionalProperties"]["maxLength"],
    )
    assert limits["TrainingImage"] == (_spec_schema("image")["maxLength"],)
    assert limits["RoleArn"] == (_spec_schema("roleArn")["maxLength"],)
    assert limits["Tag"] == (
        _pattern_width(labels["propertyNames"]["pattern"]),
        labels["additionalProperties"]["maxLength"],
    )
    assert limits["Channel"] == (
        channels["maxItems"],
        _pattern_width(channels["items"]["properties"]["name"]["pattern"]),
    )
    assert limits["S3Uri"] == (schema()["$defs"]["s3Uri"]["maxLength"],)


# --- every string is bounded, every pattern matches in linear time -----------------------------


def _schemas(node: Any, where: str) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """Every subschema that constrains a value or a key (name=True), skipping `not` branches."""
    if not isinstance(node, dict):
        return
    for key in ("properties", "$defs"):
        for name, child in node.get(key, {}).items():
            yield from _walk(child, f"{where}/{key}/{name}", name=False)
    for key in ("items", "additionalProperties"):
        yield from _walk(node.get(key), f"{where}/{key}", name=False)
    yield from _walk(node.get("propertyNames"), f"{where}/propertyNames", name=True)


def _walk(node: Any, where: str, *, name: bool) -> Iterator[tuple[str, dict[str, Any], bool]]:
    if isinstance(node, dict):
        yield where, node, name
        yield from _schemas(node, where)


def _string_schemas() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for where, node, name in _schemas(schema(), "#"):
        types = node.get("type", [])
        if name or types == "string" or "string" in types:
            found.append((where, node))
    return found


def _bounded(node: dict[str, Any]) -> bool:
    if "maxLength" in node or "enum" in node or "const" in node or "$ref" in node:
        return True
    return "pattern" in node and _pattern_width(node["pattern"]) < 100_000


def test_every_string_and_key_in_the_schema_has_a_length_bound() -> None:
    strings = _string_schemas()
    assert len(strings) >= 15, "the walk finds the strings"
    unbounded = [where for where, node in strings if not _bounded(node)]
    assert unbounded == []


def _patterns(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            else:
                yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


HOSTILE_LENGTH = 20_000
PREFIXES = ["", "a@", "a@a", "s3://bucket", "arn:aws:iam::123456789012:role/", IMAGE_PREFIX, "P", "PT", "2026-12-02T06"]
UNITS = [".", "a", "9", "a.", "9d", "9H", ":", "/", "-", "@", " ", "a-", "_"]


@pytest.mark.parametrize("pattern", sorted(set(_patterns(schema()))))
def test_no_pattern_backtracks_on_long_hostile_strings(pattern: str) -> None:
    """jsonschema checks `pattern` even when `maxLength` already failed, on strings up to the
    256 KiB upload limit: a pattern that backtracks (say ^[^@]+@[^@]+\\.[^@]+$ on a@....@)
    would hang validation."""
    compiled = re.compile(pattern)
    slowest = 0.0
    for prefix in PREFIXES:
        for unit in UNITS:
            for end in ("", "!", "@", " "):
                text = prefix + unit * (HOSTILE_LENGTH // len(unit)) + end
                started = time.perf_counter()
                compiled.search(text)
                slowest = max(slowest, time.perf_counter() - started)
    assert slowest < 0.1, f"{pattern} took {slowest:.2f}s on a {HOSTILE_LENGTH}-character string"


# --- reserved names ----------------------------------------------------------------------------------


def _spotline_tag_keys() -> list[str]:
    result = _check(MINIMAL)
    assert result.spec is not None
    return [tag["Key"] for tag in create_training_job_request(result.spec, Attempt(EXECUTION, 1, "spot"))["Tags"]]


@pytest.mark.parametrize("key", _spotline_tag_keys())
def test_every_tag_spotline_sets_is_a_reserved_label(key: str) -> None:
    errors = _check(_with(metadata={"labels": {key: "someone-else"}})).errors
    assert [(e.path, "reserved for the tags Spotline sets" in e.message) for e in errors] == [
        (f"metadata.labels.{key}", True)
    ]


def test_the_variable_spotline_sets_is_a_reserved_environment_name() -> None:
    errors = _check(_with(environment={CHECKPOINT_INTERVAL_ENV: "600"})).errors
    assert [e.path for e in errors] == [f"spec.environment.{CHECKPOINT_INTERVAL_ENV}"]
    assert CHECKPOINT_INTERVAL_ENV in errors[0].message, "the message names the variable Spotline sets"


@pytest.mark.parametrize(
    ("field", "key", "words"),
    [
        ("hyperparameters", "sagemaker_program", "'sagemaker_' are reserved"),
        ("hyperparameters", "sagemaker_submit_directory", "'sagemaker_' are reserved"),
        ("hyperparameters", "sagemaker_region", "'sagemaker_' are reserved"),
        ("environment", "SPOTLINE_ANYTHING", "'SPOTLINE_' are reserved"),
        ("labels", "aws:cloudformation:stack-name", "reserved by AWS"),
        ("labels", "AWS:x", "reserved by AWS"),
        ("labels", "Aws:x", "reserved by AWS"),
        ("labels", "Spotline:team", "reserved for the tags Spotline sets"),
        ("labels", "SPOTLINE:job", "reserved for the tags Spotline sets"),
    ],
)
def test_reserved_names_are_refused_naming_the_key(field: str, key: str, words: str) -> None:
    if field == "labels":
        document, path = _with(metadata={"labels": {key: "x"}}), f"metadata.labels.{key}"
    else:
        document, path = _with(**{field: {key: "x"}}), f"spec.{field}.{key}"
    errors = _check(document).errors
    assert [(e.path, words in e.message) for e in errors] == [(path, True)], errors


@pytest.mark.parametrize(
    ("field", "key"),
    [
        ("hyperparameters", "my_sagemaker_program"),
        ("hyperparameters", "sagemaker"),
        ("hyperparameters", "SAGEMAKER_PROGRAM"),  # the containers read the lowercase prefix only
        ("environment", "SPOTLINE"),
        ("environment", "MY_SPOTLINE_FLAG"),
        ("environment", "spotline_flag"),
        ("labels", "awsome:x"),
        ("labels", "team/aws:x"),
        ("labels", "spotlight:x"),
        ("labels", "spotline-team"),
    ],
)
def test_names_that_only_resemble_reserved_ones_are_valid(field: str, key: str) -> None:
    document = _with(metadata={"labels": {key: "x"}}) if field == "labels" else _with(**{field: {key: "x"}})
    assert _check(document).valid


# --- a hostile manifest gets a short report ----------------------------------------------------------


def _hostile_documents() -> dict[str, dict[str, Any]]:
    huge, long = "x" * 200_000, "x" * 12_000
    return {
        "10k-unknown-fields": {f"field_{i}": i for i in range(10_000)},
        "huge-unknown-key": {**MINIMAL, huge: 1},
        "5k-bad-hyperparameters": _with(hyperparameters={f"h{i}_" + "x" * 30: [i] for i in range(5_000)}),
        "5k-bad-label-keys": _with(metadata={"labels": {f"bad key {i}": "v" for i in range(5_000)}}),
        "huge-key-with-bad-value": _with(environment={"K" * 100_000: [1]}),
        "long-strings-everywhere": _with(
            metadata={"team": long, "name": long, "owner": "a@" + "." * 12_000 + "@"},
            image=long,
            roleArn=long,
            resources={"instanceType": "ml." + long + ".x"},
            inputs=[{"name": long, "s3Uri": long}, {"name": long, "s3Uri": long}],
            capacity={"maxRuntime": long, "deadline": long, "retry": {"backoff": long}},
            dependsOn=[{"dataset": long}],
            dependencyTimeout=long,
        ),
    }


@pytest.mark.parametrize("name", list(_hostile_documents()))
def test_a_hostile_manifest_gets_a_bounded_error_list_quickly(name: str) -> None:
    data = json.dumps(_hostile_documents()[name]).encode()
    assert len(data) <= 256 * 1024, "under the upload limit, so the validator really sees it"

    started = time.perf_counter()
    result = validate_bytes(data, now=NOW)
    elapsed = time.perf_counter() - started

    assert not result.valid
    assert len(result.errors) <= MAX_ERRORS + 1
    assert len(json.dumps([e.to_dict() for e in result.errors])) < 32 * 1024
    assert all(len(e.path) <= 300 and len(e.message) <= 1000 for e in result.errors)
    assert elapsed < 10.0, f"took {elapsed:.2f}s: a sixth of ValidateManifest's 60 s timeout"


def test_errors_past_the_cap_are_counted_in_one_last_error() -> None:
    document = _with(hyperparameters={f"h{i:04}": [i] for i in range(1_000)})

    errors = _check(document).errors

    assert len(errors) == MAX_ERRORS + 1
    assert [e.path for e in errors[:3]] == [
        "spec.hyperparameters",
        "spec.hyperparameters.h0000",
        "spec.hyperparameters.h0001",
    ]
    assert errors[-1].path == DOCUMENT
    # 1,000 values of the wrong type and one "at most 100 entries": 50 listed, 951 counted.
    assert errors[-1].message == "... and 951 more error(s) not listed; fix the ones above first"


def test_unknown_fields_are_listed_up_to_ten_then_counted() -> None:
    errors = _check({**MINIMAL, **{f"extra_{i:02}": i for i in range(25)}}).errors
    assert [e.path for e in errors] == ["extra_00"]
    assert errors[0].message.endswith(
        "also unknown: " + ", ".join(f"extra_{i:02}" for i in range(1, 11)) + " and 14 more"
    )


def test_long_keys_are_cut_in_paths() -> None:
    key = "k" * 300
    errors = _check(_with(hyperparameters={key: [1]})).errors
    assert [e.path for e in errors] == [
        "spec.hyperparameters." + "k" * 97 + "...",
        "spec.hyperparameters." + "k" * 97 + "...",
    ]
    assert sorted(e.message for e in errors)[0].startswith("hyperparameter values must be scalars")
    assert sorted(e.message for e in errors)[1] == "name must be at most 256 characters, got 300"
