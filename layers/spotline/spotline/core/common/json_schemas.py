"""JSON Schema plumbing shared by every document Spotline checks (manifests, the team policy,
pipeline and S3 events): the schema files in `schemas/`, one validator per file that resolves
`$ref`s between them by `$id` (nothing is fetched), and jsonschema's errors turned into field
errors that name their path (`spec.inputs[0].s3Uri`, `detail.location`)."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource

from spotline.core.common.errors import DOCUMENT, ManifestError
from spotline.core.common.s3_names import s3_uri_problem

MAX_PATH_PART = 100
"""Keys longer than this are cut in paths (`spec.environment.AAAA...`)."""
MAX_NAMES_LISTED = 10
"""Further unknown fields named in an 'unknown field' message."""
SHAPE_KEYWORDS = frozenset({"pattern", "const", "type", "not"})


@cache
def load(name: str) -> dict[str, Any]:
    """The schema file `schemas/<name>`, as written."""
    return json.loads(resources.files("spotline.core").joinpath("schemas", name).read_text())  # type: ignore[no-any-return]


@cache
def _registry() -> Registry[Any]:
    names = sorted(p.name for p in resources.files("spotline.core").joinpath("schemas").iterdir())
    schemas = [load(name) for name in names if name.endswith(".schema.json")]
    return Registry().with_resources((schema["$id"], Resource.from_contents(schema)) for schema in schemas)


def _whole_string_pattern(
    validator: Any, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterable[ValidationError]:
    """`pattern` as JSON Schema means it (ECMA 262): a final `$` is the end of the string. In
    Python's `re` it also matches before a last newline, so `team-a\n` would pass ^...$."""
    if not isinstance(instance, str):
        return
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    if re.search(pattern, instance) is None:
        yield ValidationError(f"{instance!r} does not match {schema['pattern']!r}")


def _whole_number(_checker: Any, instance: Any) -> bool:
    """`"type": "integer"` as the request builders mean it: a number written without a fraction.
    JSON Schema counts 1.0 as an integer (jsonschema does), but YAML and JSON keep 1.0 a float,
    and a float where botocore's model wants an integer fails the request's validation
    ("Invalid type for parameter ...InstanceCount, value: 1.0, type: <class 'float'>, valid
    types: <class 'int'>"), after the manifest was accepted."""
    return isinstance(instance, int) and not isinstance(instance, bool)


_Validator = validators.extend(Draft202012Validator, {"pattern": _whole_string_pattern})  # type: ignore[no-untyped-call]
_WholeNumberValidator = validators.extend(  # type: ignore[no-untyped-call]
    _Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _whole_number)
)


@cache
def validator(name: str, *, whole_integers: bool = False) -> Draft202012Validator:
    """The validator of schema `name`; `whole_integers`: "integer" refuses 1.0 (the manifest's
    values go to AWS as they are; the team policy's are converted, so it keeps JSON Schema's)."""
    Draft202012Validator.check_schema(load(name))
    kind = _WholeNumberValidator if whole_integers else _Validator
    return kind(load(name), registry=_registry())  # type: ignore[no-any-return]


def errors_of(name: str, document: Any, root: str = DOCUMENT, *, whole_integers: bool = False) -> list[ManifestError]:
    """Every way `document` breaks schema `name`, as field errors (unsorted, may repeat)."""
    return [schema_error(error, root) for error in validator(name, whole_integers=whole_integers).iter_errors(document)]


def errors_against(schema: dict[str, Any], document: Any, root: str = DOCUMENT) -> list[ManifestError]:
    """The same for a schema kept elsewhere (the sandbox's scenario schema), sorted by path."""
    Draft202012Validator.check_schema(schema)
    errors = {schema_error(error, root) for error in _Validator(schema, registry=_registry()).iter_errors(document)}
    return sorted(errors, key=lambda e: (e.path, e.message))


def format_path(parts: Iterable[str | int], root: str = DOCUMENT) -> str:
    """`spec.inputs[0].s3Uri` from a JSON path; `root` names the document as a whole."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = clip(str(part), MAX_PATH_PART)
            text += f".{name}" if text else name
    return text or root


def _join(parent: str, child: str, root: str) -> str:
    child = clip(child, MAX_PATH_PART)
    return child if parent == root else f"{parent}.{child}"


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _x_message(subschema: dict[str, Any], kind: str) -> str | None:
    custom = subschema.get("x-message")
    if isinstance(custom, dict):
        return custom.get(kind)
    return str(custom) if custom and kind in SHAPE_KEYWORDS else None


_LIMITS = {
    "maxLength": "must be at most {limit} characters, got {size}",
    "minLength": "must be at least {limit} character(s), got {size}",
    "maxItems": "allows at most {limit} items, got {size}",
    "minItems": "needs at least {limit} item(s)",
    "maxProperties": "allows at most {limit} entries, got {size}",
}


def _limit_words(kind: str, limit: Any, instance: Any, reason: str | None) -> str | None:
    """The message for a size limit (with the schema's reason, if any); None for other keywords."""
    template = _LIMITS.get(kind)
    if template is None:
        return None
    words = template.format(limit=limit, size=len(instance))
    return f"{words}: {reason}" if reason else words


def schema_error(error: ValidationError, root: str = DOCUMENT) -> ManifestError:
    """One jsonschema error as a field error: its path, and words a user can act on (the schema's
    `x-message` where it has one)."""
    path = format_path(error.absolute_path, root)
    subschema: Any = error.schema if isinstance(error.schema, dict) else {}
    instance: Any = error.instance
    expected: Any = error.validator_value
    kind = str(error.validator)
    custom = _x_message(subschema, kind)
    limit = _limit_words(kind, expected, instance, custom)
    if "propertyNames" in error.relative_schema_path:
        message = f"name {limit}" if limit else custom or f"invalid name: {clip(error.message, 200)}"
        return ManifestError(_join(path, str(instance), root), message)
    if limit:
        return ManifestError(path, limit)
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        return ManifestError(_join(path, missing, root), "is required")
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(subschema.get("properties", {}))
        unknown = sorted(set(map(str, error.instance)) - set(allowed))  # YAML keys may be numbers or booleans
        key, others = (unknown[0], unknown[1:]) if unknown else ("?", [])
        hint = difflib.get_close_matches(key, allowed, n=1)
        suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
        listed = ", ".join(clip(other, 40) for other in others[:MAX_NAMES_LISTED])
        if len(others) > MAX_NAMES_LISTED:
            listed += f" and {len(others) - MAX_NAMES_LISTED} more"
        more = f"; also unknown: {listed}" if others else ""
        return ManifestError(
            _join(path, key, root), f"unknown field{suggestion}; allowed here: {', '.join(allowed)}{more}"
        )
    if custom:
        reason = _explained(subschema, instance)
        return ManifestError(path, f"{custom} ({_holds(kind, expected, instance)}{'; ' + reason if reason else ''})")
    got = _value_words(instance)
    messages = {
        "type": lambda: f"must be {_type_words(expected)}, got {got}",
        "enum": lambda: f"must be one of {', '.join(map(str, expected))}, got {got}",
        "const": lambda: f"must be {expected!r}, got {got}",
        "minimum": lambda: f"must be at least {expected}, got {got}",
        "maximum": lambda: f"must be at most {expected}, got {got}",
        "pattern": lambda: f"{show(instance)} does not match {expected}",
    }
    make = messages.get(kind)
    return ManifestError(path, make() if make else clip(error.message, 200))


def _holds(kind: str, expected: Any, instance: Any) -> str:
    """What a field holds, for its rule's message: a value as written; a mapping by the fields the
    rule is about (`oneOf` of required fields: which of them it has), never the mapping itself."""
    if isinstance(instance, dict) and kind in ("oneOf", "anyOf") and isinstance(expected, list):
        named = [n for b in expected if isinstance(b, dict) for n in b.get("required", ())]
        named = list(dict.fromkeys(named))  # in the schema's order, once each
        present = [name for name in named if name in instance]
        if named:
            return f"has {', '.join(present)}" if present else f"has none of {', '.join(named)}"
    return f"got {_value_words(instance)}"


def _value_words(instance: Any) -> str:
    """A scalar as written (bounded); a mapping or a list by what it is, never dumped as JSON."""
    if isinstance(instance, dict):
        return f"a mapping of {len(instance)} field(s)" if instance else "an empty mapping"
    if isinstance(instance, list):
        return f"a list of {len(instance)} item(s)" if instance else "an empty list"
    return show(instance)


def closest_hint(name: str, known: Iterable[str]) -> str:
    """`; closest: a, b, c`: the known names nearest a name that is not one (a typo's fix), or ""."""
    close = difflib.get_close_matches(name, list(known), n=3)
    return f"; closest: {', '.join(close)}" if close else ""


def _explained(subschema: dict[str, Any], instance: Any) -> str | None:
    """What exactly is wrong, for the shapes whose schema names an explainer (`x-explain`), and
    the closest values of a long enum its message does not list (a region: eu-west-9)."""
    if subschema.get("x-explain") == "s3Uri" and isinstance(instance, str):
        return s3_uri_problem(instance)
    allowed = subschema.get("enum")
    if isinstance(allowed, list) and isinstance(instance, str):
        close = difflib.get_close_matches(instance, [str(value) for value in allowed], n=3)
        return f"closest: {', '.join(close)}" if close else None
    return None


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


def show(value: Any, limit: int = 60) -> str:
    """A short rendering of a value for a message: never the whole of a large one."""
    text = repr(value[: limit + 1]) if isinstance(value, str) else json.dumps(value, default=str)
    return clip(text, limit)


def dig(document: Any, *keys: str) -> Any:
    """document[k1][k2]... or None where a level is missing or not an object (a document that
    failed its schema is still checked field by field)."""
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document
