"""The documentation shows the example files CI runs by including them (pymdownx.snippets,
`--8<-- "examples/..."`), never by a hand copy that drifts from the file it was copied from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
INCLUDE = re.compile(r'^\s*--8<-- "([^":]+)(?::(\d+)(?::(\d+))?)?"\s*$')
SHORTEST_COPY = 3
"""Non-blank lines a block must have to count as a copy: a key or two in common is a fragment."""
SHORTEST_DRIFTED_COPY, SHARED = 8, 2 / 3
"""A longer block is a drifted copy when most of its lines, their comments aside, are a file's."""


def _blocks(text: str) -> list[list[str]]:
    """The fenced blocks of a page, each as its non-blank lines without the block's indentation."""
    blocks: list[list[str]] = []
    lines: list[str] | None = None
    indent = 0
    for raw in text.splitlines():
        if raw.lstrip().startswith("```"):
            if lines is None:
                lines, indent = [], len(raw) - len(raw.lstrip())
            else:
                blocks.append(lines)
                lines = None
        elif lines is not None and raw.strip():
            lines.append(raw[indent:].rstrip())
    return blocks


def _without_comments(lines: list[str]) -> list[str]:
    kept = (re.sub(r"\s+#.*$", "", line) for line in lines if not line.lstrip().startswith("#"))
    return [line for line in kept if line.strip()]


def _copied_from(block: list[str], files: dict[str, list[str]]) -> str | None:
    """The example file whose non-blank lines hold the block's lines in a row, or most of them
    but for comments (a copy that drifted), or None. A command and its output is no copy."""
    if len(block) < SHORTEST_COPY or block[0].startswith("$ "):
        return None
    code = _without_comments(block)
    for name, lines in files.items():
        if any(lines[start : start + len(block)] == block for start in range(len(lines) - len(block) + 1)):
            return name
        shared = set(_without_comments(lines))
        if len(code) >= SHORTEST_DRIFTED_COPY and sum(line in shared for line in code) >= SHARED * len(code):
            return name
    return None


def _example_lines() -> dict[str, list[str]]:
    return {
        str(path.relative_to(ROOT)): [line.rstrip() for line in path.read_text().splitlines() if line.strip()]
        for path in sorted(EXAMPLES.rglob("*"))
        if path.is_file() and path.suffix in {".yaml", ".yml", ".json", ".py"}
    }


PAGES = sorted(DOCS.rglob("*.md"))


def test_the_helpers_find_a_copy_and_an_include() -> None:
    files = {"examples/a.yaml": ["kind: TrainingJob", "spec:", "  priority: 100", "  image: x"]}
    page = "text\n\n```yaml\nspec:\n  priority: 100\n\n  image: x\n```\n\n  ```yaml\n  kind: TrainingJob\n  ```\n"
    assert [_copied_from(block, files) for block in _blocks(page)] == ["examples/a.yaml", None]
    assert _copied_from(["spec:", "  priority: 101", "  image: x"], files) is None
    assert _copied_from(["$ cat examples/a.yaml", *files["examples/a.yaml"]], files) is None
    longer = {"examples/b.yaml": [f"  key{n}: {n}" for n in range(12)]}
    drifted = [f"  key{n}: {n}   # what it takes" for n in range(1, 10)]
    assert _copied_from(drifted, longer) == "examples/b.yaml"
    assert _copied_from([*drifted[:5], *(f"  other{n}: {n}" for n in range(4))], longer) is None
    assert INCLUDE.match('--8<-- "examples/a.yaml:2:3"')


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_page_pastes_an_example_file(page: Path) -> None:
    files = _example_lines()
    copies = [(block[0], name) for block in _blocks(page.read_text()) if (name := _copied_from(block, files))]
    assert not copies, f'include these with --8<-- "FILE" (or "FILE:FIRST:LAST"), not copies: {copies}'


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_include_names_lines_of_an_example_file(page: Path) -> None:
    for line in page.read_text().splitlines():
        if not line.lstrip().startswith("--8<--"):
            continue  # not an include (a page may name the syntax in its text)
        found = INCLUDE.match(line)
        assert found, f'{page}: an include is one line --8<-- "examples/FILE[:FIRST:LAST]": {line!r}'
        path = ROOT / found[1]
        assert path.is_file() and path.is_relative_to(EXAMPLES), line
        if found[2]:
            length = len(path.read_text().splitlines())
            assert 1 <= int(found[2]) <= int(found[3] or found[2]) <= length, f"{line}: {path.name} has {length} lines"
