"""Strict manifest loading: bytes in, a plain document (or errors naming the problem) out.

YAML or JSON is chosen by content. Limits: 256 KiB, UTF-8, no duplicate keys, string keys
only, and a bound on the nodes YAML aliases expand to, so an alias bomb is refused while it
is being read rather than after it has eaten the memory.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from spotline.core.errors import DOCUMENT, ManifestError

MAX_BYTES = 256 * 1024
MAX_EXPANDED_NODES = 20_000
"""Nodes the document may expand to once aliases are followed; real manifests have < 500."""


class ManifestLoadError(Exception):
    def __init__(self, message: str, path: str = DOCUMENT) -> None:
        super().__init__(message)
        self.error = ManifestError(path, message)


class _StrictResolver(Resolver):
    """YAML 1.1 resolver without the timestamp rule: deadlines stay strings, checked later."""


_StrictResolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


class _BoundedComposer(Composer):
    """Counts the nodes a document expands to, aliases included, before anything is built from it."""

    def compose_document(self) -> Node | None:
        node: Node | None = super().compose_document()
        if node is not None:
            _expanded_size(node, {})
        return node


_IN_PROGRESS = -1


def _expanded_size(node: Node, memo: dict[int, int]) -> int:
    key = id(node)
    if key in memo:
        if memo[key] == _IN_PROGRESS:
            raise ManifestLoadError("a YAML alias refers to the node that contains it (a recursive alias)")
        return memo[key]
    memo[key] = _IN_PROGRESS
    size = 1
    if isinstance(node, SequenceNode):
        size += sum(_expanded_size(child, memo) for child in node.value)
    elif isinstance(node, MappingNode):
        size += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    if size > MAX_EXPANDED_NODES:
        raise ManifestLoadError(
            f"document has more than {MAX_EXPANDED_NODES} values once YAML aliases are expanded "
            "(an alias bomb?); real manifests have a few hundred"
        )
    memo[key] = size
    return size


class _StrictConstructor(SafeConstructor):
    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ConstructorError(None, None, "merge keys (<<) are not supported", key_node.start_mark)
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise ConstructorError(
                    None, None, f"keys must be strings, found {key!r} (quote it)", key_node.start_mark
                )
            if key in seen:
                raise ConstructorError(
                    None, None, f"duplicate key {key!r} (first at line {seen[key]})", key_node.start_mark
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


class _StrictLoader(Reader, Scanner, Parser, _BoundedComposer, _StrictConstructor, _StrictResolver):
    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        _StrictResolver.__init__(self)


def _reject_duplicate_json_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ManifestLoadError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _reject_json_constant(name: str) -> Any:
    raise ManifestLoadError(f"{name} is not valid JSON")


TOO_MANY_DIGITS = "a number has more than 4300 digits; no field takes a number that long"


def parse_manifest(data: bytes) -> dict[str, Any]:
    """The manifest document as a dict; ManifestLoadError says why it cannot be read."""
    if len(data) > MAX_BYTES:
        raise ManifestLoadError(f"manifest is {len(data)} bytes; the limit is {MAX_BYTES} bytes (256 KiB)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ManifestLoadError(f"manifest is not UTF-8 (invalid byte at offset {exc.start})") from None
    if not text.strip():
        raise ManifestLoadError("manifest is empty")
    if text.lstrip().startswith(("{", "[")):
        try:
            document = json.loads(
                text, object_pairs_hook=_reject_duplicate_json_keys, parse_constant=_reject_json_constant
            )
        except json.JSONDecodeError as exc:
            raise ManifestLoadError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        except RecursionError:
            raise ManifestLoadError("document is nested too deeply") from None
        except ValueError:  # Python refuses to read integers of more than 4,300 digits
            raise ManifestLoadError(TOO_MANY_DIGITS) from None
    else:
        loader = _StrictLoader(text)
        try:
            document = loader.get_single_data()
        except ManifestLoadError:
            raise
        except yaml.MarkedYAMLError as exc:
            where = (
                f" at line {exc.problem_mark.line + 1} column {exc.problem_mark.column + 1}" if exc.problem_mark else ""
            )
            raise ManifestLoadError(f"invalid YAML{where}: {exc.problem or exc.context}") from None
        except yaml.YAMLError as exc:
            raise ManifestLoadError(f"invalid YAML: {exc}") from None
        except RecursionError:
            raise ManifestLoadError("document is nested too deeply") from None
        except ValueError:  # Python refuses to read integers of more than 4,300 digits
            raise ManifestLoadError(TOO_MANY_DIGITS) from None
        finally:
            loader.dispose()
    if not isinstance(document, dict):
        raise ManifestLoadError(f"manifest must be a mapping of fields, found {_kind(document)}")
    return document


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, int | float):
        return f"the number {value}"
    return f"the text {str(value)[:40]!r}"
