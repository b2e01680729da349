"""Every refusal of the stand-in says where AWS documents it, and the API reference quotes are real.

The stand-in must refuse what AWS refuses and nothing else (issue 26). So each `raise` of an AWS
error in `spotline_dev.harness.standin` sits under a comment that names its source, in one of three forms:

    # AWS: <service> <Operation|Shape>[.<member>]: "<sentence>"
    # AWS guide: <guide>, "<section>": "<sentence>"
    # Stand-in: <why; what AWS leaves undocumented>

The first form quotes the API reference as botocore's service model carries it; this test finds
each quoted sentence (fragments joined by "..." each) in that operation's, shape's or member's
documentation, so a citation cannot drift from the model the stand-in is checked against. The
user guides are not on this machine: their quotes are checked by review, not here. The comment
sits directly above the `raise`, or directly above the `if` that leads to it.
"""

from __future__ import annotations

import ast
import html
import re
from functools import cache
from pathlib import Path
from typing import Any

import botocore.loaders
import pytest

STANDIN = Path(__file__).resolve().parents[4] / "devtools" / "spotline_dev" / "harness" / "standin"
REFUSALS = {"ApiError", "_reject", "reject"}  # ApiError and the modules' helpers that build one
MARKERS = ("# AWS: ", "# AWS guide: ", "# Stand-in: ")
MODEL_CITATION = re.compile(r'# AWS: (?P<service>[a-z-]+) (?P<item>[A-Za-z]+(?:\.[A-Za-z]+)?): "(?P<quote>.+)"$')
SERVICES = {
    "batch": "batch",
    "sagemaker": "sagemaker",
    "logs": "logs",
    "fsx": "fsx",
    "efs": "efs",
    "pricing": "pricing",
}


def _refusals(tree: ast.Module) -> list[tuple[ast.Raise, int]]:
    """(raise, the line its citation must sit above): the raise, or the `if` it opens."""
    found: list[tuple[ast.Raise, int]] = []
    for parent in ast.walk(tree):
        for body in (getattr(parent, "body", None), getattr(parent, "orelse", None)):
            if not isinstance(body, list):
                continue
            for index, node in enumerate(body):
                if not isinstance(node, ast.Raise) or not isinstance(node.exc, ast.Call):
                    continue
                func = node.exc.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name not in REFUSALS:
                    continue
                opens_if = index == 0 and isinstance(parent, ast.If) and body is parent.body
                found.append((node, parent.lineno if opens_if else node.lineno))
    return found


def _comment_above(lines: list[str], raise_line: int, anchor: int) -> list[str]:
    """The contiguous comment lines directly above the raise, else above its `if` (1-based lines)."""
    for line in (raise_line, anchor):
        block: list[str] = []
        index = line - 2
        while index >= 0 and lines[index].strip().startswith("#"):
            block.insert(0, lines[index].strip())
            index -= 1
        if block:
            return block
    return []


def _citations(block: list[str]) -> list[str]:
    """Each citation of a comment block, its continuation lines joined."""
    citations: list[str] = []
    for line in block:
        if line.startswith(MARKERS):
            citations.append(line)
        elif citations:
            citations[-1] += " " + line.removeprefix("#").strip()
    return citations


def _all_refusals() -> list[tuple[str, int, list[str]]]:
    found = []
    for path in sorted(STANDIN.rglob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        for node, anchor in _refusals(ast.parse(source)):
            found.append((path.name, node.lineno, _citations(_comment_above(lines, node.lineno, anchor))))
    return found


def _plain(text: str) -> str:
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    text = text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"\s+", " ", text).strip()


@cache
def _model(service: str) -> dict[str, Any]:
    model: dict[str, Any] = botocore.loaders.Loader().load_service_model(SERVICES[service], "service-2")
    return model


def _documentation(service: str, item: str) -> str:
    """The API reference text of an operation (with its input's members), a shape or a member."""
    model = _model(service)
    name, _, member = item.partition(".")
    texts: list[str] = []
    if name in model["operations"]:
        operation = model["operations"][name]
        texts.append(operation.get("documentation", ""))
        name = operation.get("input", {}).get("shape", "")
    shape = model["shapes"].get(name, {})
    members = shape.get("members", {})
    if member:
        texts = [members.get(member, {}).get("documentation", "")]
    else:
        texts += [shape.get("documentation", "")] + [m.get("documentation", "") for m in members.values()]
    return _plain(" ".join(texts))


def test_the_checker_sees_every_refusal_kind() -> None:
    tree = ast.parse(
        "def f(x):\n"
        '    # AWS: batch SubmitServiceJob: "quote"\n'
        "    if x:\n"
        "        raise ApiError('C', 'm')\n"
        "    raise _reject('m')\n"
    )
    assert sorted((node.lineno, anchor) for node, anchor in _refusals(tree)) == [(4, 3), (5, 5)]
    lines = [
        "def f(x):",
        '    # AWS: batch X: "q"',
        "    if x:",
        "        raise ApiError('C', 'm')",
        "    raise _reject('m')",
    ]
    assert _citations(_comment_above(lines, 4, 3)) == ['# AWS: batch X: "q"']
    assert _comment_above(lines, 5, 5) == []  # the comment of the raise before does not count


def test_every_refusal_cites_its_source() -> None:
    uncited = [f"{name}:{line}" for name, line, citations in _all_refusals() if not citations]
    assert not uncited, f"refusals without an '# AWS: ', '# AWS guide: ' or '# Stand-in: ' comment: {uncited}"


def test_every_guide_citation_quotes_a_sentence() -> None:
    for name, line, citations in _all_refusals():
        for citation in citations:
            if citation.startswith("# AWS guide: "):
                assert re.search(r', "[^"]+": ".+"$', citation), f"{name}:{line}: {citation}"


def test_every_api_reference_quote_is_in_botocore_model() -> None:
    checked = 0
    for name, line, citations in _all_refusals():
        for citation in citations:
            if not citation.startswith("# AWS: "):
                continue
            cited = MODEL_CITATION.match(citation)
            assert cited, (
                f"{name}:{line}: not '# AWS: <service> <Operation|Shape[.member]>: \"<sentence>\"': {citation}"
            )
            documentation = _documentation(cited["service"], cited["item"])
            assert documentation, f"{name}:{line}: {cited['service']} has no {cited['item']}"
            for fragment in _plain(cited["quote"]).split("..."):
                assert fragment.strip() in documentation, f"{name}:{line}: not in {cited['item']}: {fragment!r}"
            checked += 1
    assert checked >= 10  # the stand-in's rules are mostly the API reference's


@pytest.mark.parametrize(
    ("service", "item", "quote"),
    [
        ("batch", "DeleteQuotaShare", "You must first disable submissions for the share"),
        ("batch", "CapacityLimit.capacityUnit", "Otherwise, use NUM_INSTANCES"),
    ],
)
def test_documentation_finds_what_the_model_says(service: str, item: str, quote: str) -> None:
    assert quote in _documentation(service, item)
    assert "a sentence AWS never wrote" not in _documentation(service, item)
