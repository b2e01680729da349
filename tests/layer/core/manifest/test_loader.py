"""`spotline.core.manifest.loader.parse_manifest`: bytes in, a plain document out, or one document-level error."""

from __future__ import annotations

import json
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from spotline.core.common.errors import DOCUMENT, ManifestError
from spotline.core.manifest.loader import MAX_BYTES, ManifestLoadError, parse_manifest
from spotline.core.manifest.manifest import validate_bytes

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "manifests" / "ranker-v2.yaml"
NOW = datetime(2026, 11, 29, tzinfo=UTC)
BOM = b"\xef\xbb\xbf"


@pytest.fixture(scope="module")
def example() -> bytes:
    return EXAMPLE.read_bytes()


@pytest.fixture(scope="module")
def example_document(example: bytes) -> dict[str, Any]:
    return parse_manifest(example)


def _refusal(data: bytes) -> ManifestError:
    with pytest.raises(ManifestLoadError) as caught:
        parse_manifest(data)
    error = caught.value.error
    assert error.path == DOCUMENT
    assert str(caught.value) == error.message
    return error


def _padded_to(data: bytes, size: int) -> bytes:
    """`data` plus a trailing YAML comment, exactly `size` bytes long."""
    filler = size - len(data) - len(b"#\n")
    assert filler >= 0
    return data + b"#" + b"x" * filler + b"\n"


# --- YAML or JSON, chosen by content ----------------------------------------------------------


def test_example_reads_as_plain_document(example_document: dict[str, Any]) -> None:
    assert example_document["apiVersion"] == "spotline/v1"
    assert example_document["metadata"]["labels"] == {"cost-center": "4711"}
    hyperparameters = example_document["spec"]["hyperparameters"]
    assert hyperparameters == {"epochs": 12, "lr": 0.0003, "mixed_precision": True}
    assert type(hyperparameters["epochs"]) is int
    assert type(hyperparameters["lr"]) is float
    assert example_document["spec"]["inputs"][1] == {
        "name": "validation",
        "s3Uri": "s3://search-ranking-data/clicks/2026-11-28/validation/",
    }


@pytest.mark.parametrize("prefix", [b"", b"\n\n", b"  \t\n ", BOM, BOM + b"\n  "], ids=repr)
def test_json_is_read_as_json_and_equals_the_yaml(example_document: dict[str, Any], prefix: bytes) -> None:
    as_json = prefix + json.dumps(example_document, indent=2).encode()
    assert parse_manifest(as_json) == example_document


def test_json_chosen_by_content_not_name_so_yaml_flow_root_is_read_as_json() -> None:
    # A document starting with "{" is JSON; YAML flow syntax there is a JSON syntax error.
    error = _refusal(b"{apiVersion: spotline/v1}")
    assert error.message.startswith("invalid JSON at line 1 column 2")


def test_yaml_starting_with_a_comment_may_use_json_syntax() -> None:
    assert parse_manifest(b'# a comment first\n{"apiVersion": "spotline/v1", "n": [1, 2]}') == {
        "apiVersion": "spotline/v1",
        "n": [1, 2],
    }


def test_json_errors_name_line_and_column() -> None:
    error = _refusal(b'{\n  "a": 1,\n  "b": \n}')
    assert error.message.startswith("invalid JSON at line 4 column 1")


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_json_nan_and_infinity_are_refused(constant: bytes) -> None:
    error = _refusal(b'{"lr": ' + constant + b"}")
    assert error.message == f"{constant.decode()} is not valid JSON"


def test_json_duplicate_keys_are_refused_at_any_depth() -> None:
    assert _refusal(b'{"a": 1, "a": 1}').message == "duplicate key 'a'"
    assert _refusal(b'{"spec": {"inputs": [{"name": "x", "name": "y"}]}}').message == "duplicate key 'name'"


def test_yaml_duplicate_keys_are_refused_with_both_lines() -> None:
    error = _refusal(b"metadata:\n  team: a\n  name: b\n  team: c\n")
    assert "duplicate key 'team' (first at line 2)" in error.message
    assert "at line 4" in error.message


def test_yaml_errors_name_line_and_column() -> None:
    error = _refusal(b"a: 1\nb: [1, 2\nc: 3\n")
    assert error.message.startswith("invalid YAML at line ")


# --- BOM, encoding, emptiness -------------------------------------------------------------------


def test_utf8_bom_is_accepted(example: bytes, example_document: dict[str, Any]) -> None:
    assert parse_manifest(BOM + example) == example_document
    assert validate_bytes(BOM + example, now=NOW).valid


def test_non_ascii_utf8_text_is_fine() -> None:
    assert parse_manifest("site: Zürich — 東京\n".encode()) == {"site": "Zürich — 東京"}


def test_invalid_utf8_names_the_offset() -> None:
    assert _refusal(b"site: Z\xfcrich\n").message == (
        "manifest is not UTF-8 (invalid byte at offset 7): byte 0xFC at line 1, column 8"
    )


def test_invalid_utf8_on_a_later_line_names_line_and_column() -> None:
    # An encoded lone surrogate (ED A0 80, CESU-8 style) is invalid UTF-8 too (RFC 3629, section 3).
    message = _refusal("a: 1\n# é\nb: x".encode() + b"\xed\xa0\x80\n").message
    assert message == "manifest is not UTF-8 (invalid byte at offset 14): byte 0xED at line 3, column 5"


# --- control characters and surrogates: refused with a position or a field ------------------------

CONTROL = [0x00, 0x01, 0x07, 0x08, 0x0B, 0x0C, 0x1B, 0x1F, 0x7F, 0x80, 0x85, 0x9F]
NAMES = {0x00: "(NUL)", 0x07: "(BEL)", 0x1B: "(ESC)", 0x7F: "(DEL)", 0x85: "C1 control character U+0085"}


@pytest.mark.parametrize("code", CONTROL, ids=lambda c: f"U+{c:04X}")
@pytest.mark.parametrize(
    ("template", "line", "column"),
    [
        ("# a comment {c} here\napiVersion: spotline/v1\n", 1, 13),  # the issue's case: in a comment
        ("apiVersion: spotline/v1\nkind: Train{c}ingJob\n", 2, 12),
        ("apiVersion: spotline/v1\nspec:\n  k{c}ey: 1\n", 3, 4),
        ('{{"apiVersion": "spotline/v1",\n "kind": "{c}"}}', 2, 11),
        ("apiVersion: spotline/v1{c}", 1, 24),
    ],
    ids=["yaml-comment", "yaml-value", "yaml-key", "json-string", "end-of-file"],
)
def test_a_control_character_anywhere_is_refused_with_its_line_and_column(
    code: int, template: str, line: int, column: int
) -> None:
    error = _refusal(template.format(c=chr(code)).encode())
    assert error.message.startswith(f"line {line}, column {column}: ")
    assert f"U+{code:04X}" in error.message
    assert NAMES.get(code, f"U+{code:04X}") in error.message
    assert "not even in a comment" in error.message


def test_the_issue_manifest_with_a_nul_in_a_comment_gets_one_named_error(example: bytes) -> None:
    data = example + b"# reviewed \x00 by ops\n"
    line = example.count(b"\n") + 1
    result = validate_bytes(data, now=NOW)
    assert [str(e) for e in result.errors] == [
        f"(manifest): line {line}, column 12: control character U+0000 (NUL); "
        "remove it (no control character is allowed anywhere, not even in a comment)"
    ]


@pytest.mark.parametrize("text", ["a\tb", "a\r\nb", "é 東京 🚀", "\u2028", "\ufeff"], ids=repr)
def test_tab_line_breaks_and_printable_unicode_are_fine(text: str) -> None:
    assert parse_manifest(("k: " + json.dumps(text, ensure_ascii=False) + "\n").encode()) == {"k": text}
    assert parse_manifest(json.dumps({"k": text}).encode()) == {"k": text}


@pytest.mark.parametrize(
    ("data", "path", "found"),
    [
        (b'spec:\n  image: "x\\0y"\n', "spec.image", "control character U+0000 (NUL) at character 2 of the value"),
        (b'spec:\n  env: {A: "\\x85"}\n', "spec.env.A", "C1 control character U+0085 at character 1 of the value"),
        (b'a: ["ok", "\\ud800"]\n', "a[1]", "lone UTF-16 surrogate U+D800"),
        (b'a: "\\udfff"\n', "a", "lone UTF-16 surrogate U+DFFF"),
        (b'{"spec": {"hp": {"lr": "\\u001b[31m"}}}', "spec.hp.lr", "control character U+001B (ESC)"),
        (b'{"a": ["\\ud83d"]}', "a[0]", "lone UTF-16 surrogate U+D83D"),
        (b'{"spec": {"k\\u0000": 1}}', "spec.k\\u0000", "U+0000 (NUL) at character 2 of the key"),
        (b'"k\\x07": 1\n', "k\\u0007", "U+0007 (BEL) at character 2 of the key"),
    ],
    ids=[
        "yaml-\\0",
        "yaml-\\x85",
        "yaml-surrogate",
        "yaml-low-surrogate",
        "json-esc",
        "json-surrogate",
        "json-key",
        "yaml-key",
    ],
)
def test_an_escape_that_makes_a_forbidden_character_is_refused_by_field(data: bytes, path: str, found: str) -> None:
    with pytest.raises(ManifestLoadError) as caught:
        parse_manifest(data)
    assert caught.value.error.path == path
    assert found in caught.value.error.message
    assert "(written as an escape)" in caught.value.error.message


def test_a_surrogate_pair_escape_is_one_real_character_in_json_and_two_halves_in_yaml() -> None:
    assert parse_manifest(b'{"a": "\\ud83d\\ude80"}') == {"a": "\U0001f680"}
    assert parse_manifest(b'a: "\\U0001F680"\n') == {"a": "\U0001f680"}
    with pytest.raises(ManifestLoadError) as caught:
        parse_manifest(b'a: "\\ud83d\\ude80"\n')  # PyYAML reads each \u escape alone
    assert "in YAML write \\U0001F680 (8 digits)" in caught.value.error.message


@pytest.mark.parametrize("data", [b"", b" ", b"\n\n", b"\t \r\n", BOM, BOM + b"  \n"], ids=repr)
def test_empty_documents_are_refused(data: bytes) -> None:
    assert _refusal(data).message == "manifest is empty"


@pytest.mark.parametrize(
    ("data", "found"),
    [
        (b"# only a comment\n", "nothing"),
        (b"~", "nothing"),
        (b"- a\n- b\n", "a list"),
        (b"[1, 2]", "a list"),
        (b"just text", "the text 'just text'"),
        (b"42", "the number 42"),
        (b"true", "the boolean True"),
    ],
)
def test_root_must_be_a_mapping(data: bytes, found: str) -> None:
    assert _refusal(data).message == f"manifest must be a mapping of fields, found {found}"


# --- values: timestamps stay strings, scalars keep their types -----------------------------------


@pytest.mark.parametrize(
    "text",
    ["2026-12-02T06:00:00Z", "2026-12-02 06:00:00+01:00", "2026-12-02t06:00:00.5z", "2026-12-02"],
)
def test_yaml_timestamps_stay_strings(text: str) -> None:
    document = parse_manifest(f"deadline: {text}\ndataset: clicks-{text}\n".encode())
    assert document == {"deadline": text, "dataset": f"clicks-{text}"}
    assert type(document["deadline"]) is str


def test_unquoted_deadline_is_validated_and_normalized(example: bytes) -> None:
    data = example.replace(b'deadline: "2026-12-02T06:00:00Z"', b"deadline: 2026-12-02T07:00:00+01:00")
    assert data != example
    result = validate_bytes(data, now=NOW)
    assert result.valid, result.errors
    assert result.spec is not None
    assert result.spec.deadline == "2026-12-02T06:00:00Z"


def test_other_yaml_scalars_keep_their_types() -> None:
    document = parse_manifest(b"i: 12\nf: 0.0003\nb: true\nn: null\ns: '12'\nq: \"true\"\n")
    assert document == {"i": 12, "f": 0.0003, "b": True, "n": None, "s": "12", "q": "true"}


# --- unsafe or ambiguous YAML ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"x: !!python/object/apply:os.system [echo pwned]\n",
        b"x: !!python/name:os.system\n",
        b"x: !!python/object:collections.OrderedDict {}\n",
        b"x: !Ref Something\n",
    ],
)
def test_unsafe_and_unknown_tags_are_refused(data: bytes) -> None:
    assert "could not determine a constructor for the tag" in _refusal(data).message


@pytest.mark.parametrize(
    ("data", "found"),
    [
        (b"1: x\n", "1"),
        (b"true: x\n", "True"),
        (b"on: x\n", "True"),
        (b"~: x\n", "None"),
        (b"1.5: x\n", "1.5"),
        (b"? [a, b]\n: x\n", "['a', 'b']"),
    ],
)
def test_keys_must_be_strings(data: bytes, found: str) -> None:
    assert f"keys must be strings, found {found} (quote it)" in _refusal(data).message


def test_quoted_keys_are_strings() -> None:
    assert parse_manifest(b'"1": x\n"on": y\n') == {"1": "x", "on": "y"}


def test_merge_keys_are_refused() -> None:
    assert "merge keys (<<) are not supported" in _refusal(b"base: &b {a: 1}\nc:\n  <<: *b\n").message


def test_multiple_documents_are_refused_but_explicit_markers_are_fine() -> None:
    assert _refusal(b"a: 1\n---\nb: 2\n").message.startswith("invalid YAML")
    assert parse_manifest(b"---\na: 1\n...\n") == {"a": 1}


def test_small_aliases_are_expanded() -> None:
    document = parse_manifest(b"base: &uri s3://bucket/p/\nout: *uri\nl: &l [1, 2]\nm: [*l, *l]\n")
    assert document == {"base": "s3://bucket/p/", "out": "s3://bucket/p/", "l": [1, 2], "m": [[1, 2], [1, 2]]}


def _expire(signum: int, frame: object) -> None:
    raise TimeoutError("alias bomb still being read after 10s")


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    started = time.perf_counter()
    if hasattr(signal, "SIGALRM"):  # were the bound gone, fail instead of expanding 10**10 nodes
        signal.signal(signal.SIGALRM, _expire)
        signal.alarm(10)
    try:
        error = _refusal("\n".join(lines).encode())
    finally:
        if hasattr(signal, "SIGALRM"):
            signal.alarm(0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
    assert time.perf_counter() - started < 1.0
    assert "once YAML aliases are expanded (an alias bomb?)" in error.message


def test_deep_yaml_nesting_is_refused() -> None:
    assert _refusal(b"a: " + b"[" * 5000 + b"]" * 5000).message == "document is nested too deeply"


# --- the 256 KiB limit ---------------------------------------------------------------------------


def test_size_limit_is_256_kib() -> None:
    assert MAX_BYTES == 256 * 1024


def test_exactly_256_kib_is_accepted(example: bytes, example_document: dict[str, Any]) -> None:
    data = _padded_to(example, MAX_BYTES)
    assert len(data) == MAX_BYTES
    assert parse_manifest(data) == example_document
    assert validate_bytes(data, now=NOW).valid


def test_one_byte_over_256_kib_is_refused(example: bytes) -> None:
    data = _padded_to(example, MAX_BYTES + 1)
    error = _refusal(data)
    assert error.message == f"manifest is {MAX_BYTES + 1} bytes; the limit is {MAX_BYTES} bytes (256 KiB)"
    assert validate_bytes(data, now=NOW).errors == [error]


def test_json_at_exactly_256_kib_is_accepted_and_one_more_byte_refused(example_document: dict[str, Any]) -> None:
    text = json.dumps(example_document).encode()
    exact = text + b" " * (MAX_BYTES - len(text))
    assert parse_manifest(exact) == example_document
    assert "the limit is" in _refusal(exact + b" ").message


def test_size_is_counted_in_bytes_not_characters() -> None:
    # 'ü' is two bytes in UTF-8: 2**17 of them are 256 KiB of bytes, not of characters.
    value = "ü" * (MAX_BYTES // 2)
    assert "the limit is" in _refusal(f"x: {value}".encode()).message


def test_size_is_checked_before_decoding() -> None:
    assert "the limit is" in _refusal(b"\xff" * (MAX_BYTES + 1)).message


@pytest.mark.parametrize("document", [b"a: " + b"9" * 5000 + b"\n", b'{"a": ' + b"9" * 5000 + b"}"])
def test_a_number_past_pythons_digit_limit_is_a_clear_error_not_a_crash(document: bytes) -> None:
    with pytest.raises(ManifestLoadError, match="more than 4300 digits"):
        parse_manifest(document)
