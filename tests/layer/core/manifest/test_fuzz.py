"""Generated manifests (issue 45): no crash, no hang, a field or a position in every refusal, and
no acceptance whose request AWS would refuse.

Inputs come from the manifest schema itself (both kinds: each leaf value drawn by
hypothesis-jsonschema from its own subschema, objects assembled here, see `_strategy`) and from
mutations of the valid examples: a leaf replaced by a schema-drawn value, an integer written as
a float, huge and non-finite numbers, and bad bytes (control characters, invalid UTF-8, lone
surrogates) anywhere in the file. Every case is checked the same way (`_check`):

- validation returns (a crash fails the case; a case over TIME_LIMIT_S fails as a hang);
- a refusal names a field, or, for the document as a whole, a position (line/column or byte
  offset) or one of the whole-document limits (empty, not a mapping, too large, too deep);
- an accepted TrainingJob renders as `spotline render` does (`submit_service_job_request`:
  botocore's ParamValidator on both halves, SageMaker's and Batch's name rules, the size quota)
  for a spot and an on-demand attempt, and its CreateTrainingJob payload breaks none of the
  model's own constraints (lengths, patterns, ranges, enums: the stand-in's `request_problems`);
- an accepted ScoringJob has no renderer of its own (scoring_runs builds CreateTransformJob
  inside its AWS call), so each value it sends as written is checked against its member's shape.

Seeded (derandomize) and offline; `make test` runs it. Cases and CPU time are printed with -s.
"""

from __future__ import annotations

import copy
import json
import math
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from hypothesis_jsonschema import from_schema

from spotline.aws.training.request_check import submit_service_job_request
from spotline.core.common.errors import DOCUMENT
from spotline.core.manifest.manifest import schema, validate_bytes
from spotline.core.scoring.scoring import ScoringSpec
from spotline.core.training.training_request import Attempt
from spotline_dev.harness.standin.base.http_answers import request_problems

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = [ROOT / "examples" / "manifests" / "ranker-v2.yaml", ROOT / "examples" / "manifests" / "urgent-retrain.yaml"]
SCORING_EXAMPLES = sorted((ROOT / "examples" / "scoring").glob("*.yaml"))
NOW = datetime(2026, 11, 29, tzinfo=UTC)
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:spotline-TrainingLifecycle:fuzz-dryrun"
QUEUE = "arn:aws:batch:us-east-1:123456789012:job-queue/spotline-training"
TIME_LIMIT_S = 2.0
"""Per case, generous: a valid manifest validates and renders in milliseconds."""
POSITION = re.compile(r"line \d+|offset \d+")
WHOLE_DOCUMENT = (
    "manifest is empty",
    "manifest must be a mapping of fields",
    "the limit is 262144 bytes",
    "document is nested too deeply",
    "a number has more than 4300 digits",
)
"""Refusals of the document as a whole, which have no field or position to name."""
SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
COUNTS: dict[str, int] = {}
ACCEPTED: dict[str, int] = {}
MIN_ACCEPTED = {"mutated-training": 0.1, "mutated-scoring": 0.1}
"""Share of cases that must be accepted, so the request checks run on many (a mutation of a
valid example often stays valid; whole generated documents almost never are). Bad bytes are
never accepted."""


# --- strategies from the schema ----------------------------------------------------------------


@cache
def _defs() -> dict[str, Any]:
    return schema()["$defs"]  # type: ignore[no-any-return]


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = schema()
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _strategy(node: dict[str, Any]) -> SearchStrategy[Any]:
    """Values for `node` (built once per subschema). Objects are assembled here:
    hypothesis-jsonschema 0.23.1's object strategy calls `many.more()`, which hypothesis 6.170
    no longer has; its leaves work."""
    return _cached_strategy(json.dumps(node, sort_keys=True))


@cache
def _cached_strategy(text: str) -> SearchStrategy[Any]:
    node = _resolve(json.loads(text))
    if node.get("type") == "object" or "properties" in node:
        properties = node.get("properties", {})
        required = [k for k in node.get("required", []) if k in properties]
        fixed = st.fixed_dictionaries(
            {k: _strategy(properties[k]) for k in required},
            optional={k: _strategy(v) for k, v in properties.items() if k not in required},
        )
        extra = node.get("additionalProperties")
        if not isinstance(extra, dict):
            return fixed
        names = node.get("propertyNames", {})
        keys = _leaf({k: v for k, v in names.items() if k in ("pattern", "maxLength")} | {"type": "string"})
        return st.tuples(fixed, st.dictionaries(keys, _strategy(extra), max_size=3)).map(lambda p: {**p[1], **p[0]})
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        return st.lists(
            _strategy(node["items"]), min_size=node.get("minItems", 0), max_size=min(node.get("maxItems", 3), 3)
        )
    return _leaf(node)


def _leaf(node: dict[str, Any]) -> SearchStrategy[Any]:
    kept = {k: v for k, v in node.items() if not k.startswith("x-") and k != "description"}
    if "type" not in kept and "allOf" in kept:  # else hypothesis-jsonschema tries objects too
        types = [_resolve(part)["type"] for part in kept["allOf"] if "type" in _resolve(part)]
        kept["type"] = types[0] if types else "string"
    return from_schema({**kept, "$defs": _defs()})


def _document(kind: str, spec: str) -> SearchStrategy[dict[str, Any]]:
    metadata = schema()["properties"]["metadata"]
    return st.fixed_dictionaries(
        {"apiVersion": st.just("spotline/v1"), "kind": st.just(kind), "metadata": _strategy(metadata)}
    ).flatmap(lambda head: _strategy({"$ref": f"#/$defs/{spec}"}).map(lambda body: {**head, "spec": body}))


# --- mutations of the valid examples -----------------------------------------------------------


def _leaves(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))]
    return [path]


def _schema_at(document: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any] | None:
    """The subschema a leaf of a valid document is checked against (None: not a plain one)."""
    kind = "scoringSpec" if document.get("kind") == "ScoringJob" else "trainingSpec"
    node: dict[str, Any] = schema()
    for step in path:
        node = _resolve(node)
        if isinstance(step, int):
            node = node.get("items", {})
        elif node is schema() and step == "spec":
            node = {"$ref": f"#/$defs/{kind}"}
        elif step in node.get("properties", {}):
            node = node["properties"][step]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return None
    node = _resolve(node)
    return node if "type" in node or "enum" in node or "const" in node else None


def _set(document: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    node: Any = changed
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return changed


NASTY_NUMBERS = [1.0, 2.0, 64.0, 1e-300, -1e-300, 1e300, -1e308, 10**30, -(10**30), 2**63, 0, -1, 0.5]


@st.composite
def _mutated(draw: st.DrawFn, examples: list[dict[str, Any]]) -> dict[str, Any]:
    document = draw(st.sampled_from(examples))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_leaves(document)))
        current = _get(document, path)
        node = _schema_at(document, path)
        how = draw(st.sampled_from(["schema", "float", "number", "text"]))
        if how == "schema" and node is not None:
            value = draw(_strategy(node))
        elif how == "float" and isinstance(current, int) and not isinstance(current, bool):
            value = float(current)
        elif how == "number":
            value = draw(st.sampled_from(NASTY_NUMBERS))
        else:
            value = draw(st.text(max_size=12))
        document = _set(document, path, value)
    return document


def _get(document: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


BAD_CHARACTERS = st.sampled_from(
    [chr(c) for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F, 0x80, 0x85, 0x9F]]
)


SCALAR_VALUE = re.compile(rb"^ *[A-Za-z][\w-]*: ([^{\[\n#][^\n#]*)$", re.MULTILINE)
"""A block mapping's plain scalar value (no flow collection, no comment)."""


@st.composite
def _bad_bytes(draw: st.DrawFn) -> bytes:
    body = draw(st.sampled_from(EXAMPLES + SCORING_EXAMPLES)).read_bytes()
    at = draw(st.integers(0, len(body)))
    how = draw(st.sampled_from(["control", "invalid-utf8", "escape", "surrogate"]))
    if how == "control":
        insert = draw(BAD_CHARACTERS).encode()
    elif how == "invalid-utf8":
        insert = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"]))
    else:  # an escape in a double-quoted YAML value: the text is clean, the value is not
        code = draw(st.sampled_from([0, 7, 0x1B, 0x85, 0xD800, 0xDFFF]))
        value = draw(st.sampled_from(list(SCALAR_VALUE.finditer(body))))
        return body[: value.start(1)] + b'"x\\u%04x"' % code + body[value.end(1) :]
    return body[:at] + insert + body[at:]


# --- the oracle --------------------------------------------------------------------------------


def _check(data: bytes, label: str) -> None:
    COUNTS[label] = COUNTS.get(label, 0) + 1
    started = time.process_time()
    result = validate_bytes(data, now=NOW)
    for error in result.errors:
        assert error.path, error
        if error.path == DOCUMENT:
            named = POSITION.search(error.message) or any(w in error.message for w in WHOLE_DOCUMENT)
            named = named or error.message.startswith("... and ")
            assert named, f"a refusal with no field or position: {error.message!r}"
    if result.valid:
        ACCEPTED[label] = ACCEPTED.get(label, 0) + 1
    if result.spec is not None:
        for capacity in ("spot", "on-demand"):
            request = submit_service_job_request(result.spec, Attempt(EXECUTION, 1, capacity), QUEUE)
            payload = yaml.safe_load(request["serviceRequestPayload"])
            assert request_problems(payload, _input("CreateTrainingJob")) == [], payload
    if result.scoring is not None:
        assert _transform_problems(result.scoring) == []
    assert time.process_time() - started < TIME_LIMIT_S, "a hang"


@cache
def _input(operation: str) -> Any:
    return botocore.session.get_session().get_service_model("sagemaker").operation_model(operation).input_shape


def _transform_problems(spec: ScoringSpec) -> list[str]:
    """The values a scoring spec sends to CreateTransformJob as written, each against its
    member's shape (botocore's model)."""
    shape = _input("CreateTransformJob").members
    transform_input, output = shape["TransformInput"].members, shape["TransformOutput"].members
    values: list[tuple[Any, Any, str]] = [
        (spec.content_type, transform_input["ContentType"], "TransformInput.ContentType"),
        (spec.split_type, transform_input["SplitType"], "TransformInput.SplitType"),
        (spec.compression, transform_input["CompressionType"], "TransformInput.CompressionType"),
        (spec.accept, output["Accept"], "TransformOutput.Accept"),
        (spec.assemble_with, output["AssembleWith"], "TransformOutput.AssembleWith"),
        (spec.instance_type, shape["TransformResources"].members["InstanceType"], "InstanceType"),
        (spec.max_instances, shape["TransformResources"].members["InstanceCount"], "InstanceCount"),
        (spec.max_concurrent_transforms, shape["MaxConcurrentTransforms"], "MaxConcurrentTransforms"),
        (spec.max_payload_mb, shape["MaxPayloadInMB"], "MaxPayloadInMB"),
        (dict(spec.environment) or None, shape["Environment"], "Environment"),
        ([{"Key": "spotline:job", "Value": spec.name}], shape["Tags"], "Tags"),
    ]
    if spec.model.name is not None:
        values.append((spec.model.name, shape["ModelName"], "ModelName"))
    problems = [p for value, member, path in values for p in request_problems(value, member, path)]
    numbers = [spec.records_per_second, spec.records]
    problems += [f"{n} is not finite" for n in numbers if isinstance(n, float) and not math.isfinite(n)]
    return problems


def _dump(document: dict[str, Any]) -> bytes:
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True).encode("utf-8", "surrogatepass")


def _examples(paths: list[Path]) -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in paths]


def _run(name: str, strategy: SearchStrategy[Any], cases: int, to_bytes: Callable[[Any], bytes]) -> None:
    @settings(SETTINGS, max_examples=cases)
    @given(strategy)
    def case(value: Any) -> None:
        _check(to_bytes(value), name)

    started = time.process_time()
    case()
    print(
        f"\n{name}: {COUNTS.get(name, 0)} cases, {ACCEPTED.get(name, 0)} accepted, "
        f"{time.process_time() - started:.1f} s CPU"
    )


# --- the cases ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cases"),
    [
        ("generated-training", 400),
        ("generated-scoring", 300),
        ("mutated-training", 600),
        ("mutated-scoring", 400),
        ("bad-bytes", 400),
    ],
)
def test_fuzz(name: str, cases: int) -> None:
    strategies: dict[str, tuple[SearchStrategy[Any], Callable[[Any], bytes]]] = {
        "generated-training": (_document("TrainingJob", "trainingSpec"), _dump),
        "generated-scoring": (_document("ScoringJob", "scoringSpec"), _dump),
        "mutated-training": (_mutated(_examples(EXAMPLES)), _dump),
        "mutated-scoring": (_mutated(_examples(SCORING_EXAMPLES)), _dump),
        "bad-bytes": (_bad_bytes(), lambda data: data),
    }
    strategy, to_bytes = strategies[name]
    _run(name, strategy, cases, to_bytes)
    assert COUNTS[name] >= cases * 0.9  # hypothesis ran the cases asked for, not a handful
    assert ACCEPTED.get(name, 0) >= COUNTS[name] * MIN_ACCEPTED.get(name, 0)
    if name == "bad-bytes":
        assert ACCEPTED.get(name, 0) == 0
