r"""Strict manifest loading: bytes in, a plain document (or errors naming the problem) out.

YAML or JSON is chosen by content. Limits: 256 KiB, UTF-8, no duplicate keys, string keys
only, and a bound on the nodes YAML aliases expand to, so an alias bomb is refused while it
is being read rather than after it has eaten the memory. No control character (C0 but tab,
LF and CR; DEL; C1) may appear anywhere, comments included, nor in a value through an escape
(`"\0"`, `"\u0000"`), nor a lone UTF-16 surrogate (`"\ud800"`): each refusal says where.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from spotline.core.common.errors import DOCUMENT, ManifestError
from spotline.core.common.json_schemas import format_path

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


_C0_NAMES: tuple[str, ...] = (
    "NUL",
    "SOH",
    "STX",
    "ETX",
    "EOT",
    "ENQ",
    "ACK",
    "BEL",
    "BS",
    "HT",
    "LF",
    "VT",
    "FF",
    "CR",
    "SO",
    "SI",
)
_C0_NAMES += ("DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US")
_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
"""C0 controls but tab, LF and CR; DEL; C1 controls (YAML 1.1 reads U+0085 as a line break,
JSON does not: refused so both read the same); lone UTF-16 surrogates, which only escapes can
produce and no AWS API can encode (UnicodeEncodeError when the request is sent)."""


def describe_character(character: str) -> str:
    """`control character U+0000 (NUL)`, `lone surrogate U+D800`, ..."""
    code = ord(character)
    if 0xD800 <= code <= 0xDFFF:
        return f"lone UTF-16 surrogate U+{code:04X} (not a character; it cannot be sent to AWS)"
    if code < 0x20:
        return f"control character U+{code:04X} ({_C0_NAMES[code]})"
    if code == 0x7F:
        return "control character U+007F (DEL)"
    return f"C1 control character U+{code:04X}"


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


def _check_characters(text: str) -> None:
    """The first forbidden character anywhere in the text, comments included, with its place."""
    found = _FORBIDDEN.search(text)
    if found is not None:
        raise ManifestLoadError(
            f"{_position(text, found.start())}: {describe_character(found.group())}; "
            "remove it (no control character is allowed anywhere, not even in a comment)"
        )


def _check_values(document: Any) -> None:
    r"""Escapes (`"\0"`, `"\u0000"`, `"\ud800"`) put in a key or value what the text may not hold,
    and YAML's .nan and .inf (or JSON's 1e999) numbers no field takes: the first, by field path."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for key, child in value.items():
                _check_text(key, (*path, key), "key")
                stack.append((child, (*path, key)))
        elif isinstance(value, list):
            stack.extend((child, (*path, index)) for index, child in enumerate(value))
        else:
            _check_text(value, path, "value")


def _check_text(value: Any, path: tuple[str | int, ...], what: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ManifestLoadError(
            f"{value} is not a number any field takes (YAML .nan or .inf, or a number beyond "
            "1.8e308); no AWS API accepts it and Spotline cannot plan with it",
            format_path(_printable(p) if isinstance(p, str) else p for p in path),
        )
    if isinstance(value, str) and (found := _FORBIDDEN.search(value)) is not None:
        where = format_path(_printable(p) if isinstance(p, str) else p for p in path)
        # PyYAML reads each \uXXXX alone, so a surrogate pair written as two escapes is two lone halves.
        beyond = found.group() > "\ud7ff"
        hint = "; in YAML write \\U0001F680 (8 digits) for a character beyond U+FFFF" if beyond else ""
        raise ManifestLoadError(
            f"{describe_character(found.group())} at character {found.start() + 1} of the {what} "
            f"(written as an escape); remove it{hint}",
            where,
        )


def _printable(text: str) -> str:
    return _FORBIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


TOO_MANY_DIGITS = "a number has more than 4300 digits; no field takes a number that long"


def too_big(size: int) -> str:
    """Why a manifest of `size` bytes is refused (a reader that stops past the limit gives the whole size)."""
    return f"manifest is {size} bytes; the limit is {MAX_BYTES} bytes (256 KiB)"


def parse_manifest(data: bytes) -> dict[str, Any]:
    """The manifest document as a dict; ManifestLoadError says why it cannot be read."""
    if len(data) > MAX_BYTES:
        raise ManifestLoadError(too_big(len(data)))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = data[: exc.start].decode("utf-8-sig", errors="replace")
        raise ManifestLoadError(
            f"manifest is not UTF-8 (invalid byte at offset {exc.start}): "
            f"byte 0x{data[exc.start]:02X} at {_position(before, len(before))}"
        ) from None
    _check_characters(text)
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
    _check_values(document)
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
