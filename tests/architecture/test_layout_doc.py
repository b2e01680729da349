"""docs/contributing/layout.md names every package of the layer and of devtools at its place in the
page's tree: a package the page does not show is one a newcomer cannot find their way to.

The packages are read from the tree (every directory with an __init__.py), never from a list, so a
package added or moved anywhere is held to the page at once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "contributing" / "layout.md"
TREES = (ROOT / "layers" / "spotline" / "spotline", ROOT / "devtools" / "spotline_dev")


def packages() -> list[str]:
    """Every package under the layer and devtools, as the page writes it: `devtools/spotline_dev/harness/local/`."""
    return sorted(
        f"{init.parent.relative_to(ROOT).as_posix()}/" for tree in TREES for init in tree.rglob("__init__.py")
    )


def named(page: str) -> dict[str, int]:
    """Every directory the page's trees name, as a path from the repository's root -> its line.

    In a fenced block, an entry is a line whose first word ends in `/` (`core/`, or several at once:
    `standin/batch/`); it sits under the nearest entry above it that is indented less."""
    entries: dict[str, int] = {}
    lines = page.splitlines()
    fence = [number for number, line in enumerate(lines) if line.startswith("```")]
    for start, end in zip(fence[::2], fence[1::2], strict=False):
        stack: list[tuple[int, str]] = []
        for number in range(start + 1, end):
            line = lines[number]
            word = line.split(maxsplit=1)[0] if line.strip() else ""
            if not re.fullmatch(r"[\w.-]+(/[\w.-]+)*/", word):
                continue
            indent = len(line) - len(line.lstrip(" "))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            path = (stack[-1][1] if stack else "") + word
            stack.append((indent, path))
            entries.setdefault(path, number)
    return entries


def missing(page: str) -> list[str]:
    shown = named(page)
    return [package for package in packages() if package not in shown]


def test_the_packages_come_from_the_tree() -> None:
    found = packages()
    assert "layers/spotline/spotline/core/" in found
    assert "devtools/spotline_dev/" in found
    assert len(found) >= 20, found


def test_the_layout_page_names_every_package() -> None:
    assert missing(PAGE.read_text()) == [], "add these packages to docs/contributing/layout.md's tree"


@pytest.mark.parametrize("package", packages())
def test_a_package_left_out_of_the_page_is_missing(package: str) -> None:
    page = PAGE.read_text()
    lines = page.splitlines()
    line = named(page).get(package)
    if line is None:
        pytest.fail(f"{package} is not on the page (see test_the_layout_page_names_every_package)")
    without = "\n".join(lines[:line] + lines[line + 1 :])
    assert package in missing(without)
