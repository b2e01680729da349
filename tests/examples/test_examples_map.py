"""examples/README.md is a map of the folder: every folder under examples/ and every file at its top
is listed, and every link it gives leads to a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
MAP = EXAMPLES / "README.md"
ROW = re.compile(r"^\| `([^`]+)` \|", re.M)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _listed() -> set[str]:
    return set(ROW.findall(MAP.read_text()))


def _present() -> set[str]:
    folders = {f"{p.relative_to(EXAMPLES).as_posix()}/" for p in EXAMPLES.rglob("*") if p.is_dir()}
    files = {p.name for p in EXAMPLES.iterdir() if p.is_file() and p != MAP}
    return {path for path in folders | files if "__pycache__" not in path}


def test_every_folder_and_top_level_file_has_a_row_in_the_map() -> None:
    assert _present() - _listed() == set(), "add a row for each to examples/README.md"


def test_every_row_names_something_that_exists() -> None:
    assert _listed() - _present() == set(), "a row of examples/README.md names nothing in examples/"


def test_every_link_of_the_map_leads_to_a_file() -> None:
    links = [target for target in LINK.findall(MAP.read_text()) if "://" not in target]
    assert links, "the map links to the pages that explain the examples"
    missing = [target for target in links if not (EXAMPLES / target).resolve().is_file()]
    assert missing == []
