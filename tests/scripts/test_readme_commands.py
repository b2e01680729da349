"""README.md and the documentation pages show what their commands print, on any date: the quick
commands are run and compared exactly (scripts/readme_commands.py), and the sandbox excerpt is a
piece of a real run. Every page is in the site's navigation, and the README stays short, its links
leading to pages and headings that exist."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
QUICK_START = DOCS / "getting-started.md"
README_MAX_LINES = 150


def _script() -> object:
    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / "scripts" / "readme_commands.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_commands"] = module
    spec.loader.exec_module(module)
    return module


COMMANDS = _script()


@pytest.mark.parametrize("example", COMMANDS.quick_examples(), ids=lambda e: e.where)  # type: ignore[attr-defined]
def test_each_quick_command_prints_what_its_page_shows(example: object) -> None:
    assert COMMANDS.run(example.command) == example.shown  # type: ignore[attr-defined]


def test_the_pages_show_commands_of_every_kind_and_say_how_each_is_checked() -> None:
    found = COMMANDS.all_examples()  # type: ignore[attr-defined]
    assert {e.page for e in found} > {"docs/getting-started.md", "docs/platform/operating.md"}
    assert len(COMMANDS.quick_examples()) >= 3  # type: ignore[attr-defined]
    for example in found:
        name = COMMANDS.program(example.command)  # type: ignore[attr-defined]
        run_here = name.startswith(COMMANDS.QUICK + COMMANDS.SLOW)  # type: ignore[attr-defined]
        assert run_here or any(p in example.command for p in COMMANDS.CHECKED_ELSEWHERE), example  # type: ignore[attr-defined]


def test_the_sandbox_excerpt_is_a_piece_of_a_real_run() -> None:
    """`make sandbox` as a user runs it, in a process of its own: the stacks of one process draw
    their ids (hence execution names) from seeds that follow one another (local/stack.py)."""
    excerpt = re.search(r"```\n(== search-ranking-urgent-retrain.*?)```", QUICK_START.read_text(), re.S)
    assert excerpt, f"the Quick start excerpt moved from {QUICK_START.relative_to(ROOT)}"
    done = subprocess.run(
        [sys.executable, "-m", "spotline_dev.cli.entry", "sandbox"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert excerpt.group(1) in done.stdout


def test_the_operating_a_stack_block_is_what_its_commands_print() -> None:
    """scripts/operate_demo.py runs the commands against a local stack, the on-call side taking
    part in the virtual clock: the block must come out exactly, run after run."""
    done = subprocess.run(
        [sys.executable, "scripts/operate_demo.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_benchmarks_figures_are_compared_all_but_its_timings() -> None:
    shown = '{"status": "SUCCEEDED", "historyEvents": 1361, "wallSeconds": 17.9}'
    example = COMMANDS.Example(1, ".venv/bin/python benchmarks/lifecycle_72h.py", shown)  # type: ignore[attr-defined]
    assert COMMANDS.shows(example, shown.replace("17.9", "24.6"))  # type: ignore[attr-defined]
    assert not COMMANDS.shows(example, shown.replace("1361", "1362"))  # type: ignore[attr-defined]
    figures = '{"cost_usd": 12.5, "importMillisecondsMedianOf5": {"intake": 268.5}}'
    masked = COMMANDS.without_timings(figures)  # type: ignore[attr-defined]
    assert masked == '{"cost_usd": 12.5, "importMillisecondsMedianOf5": {"intake": #}}'


def _nav_pages(entry: Any) -> set[str]:
    """Every page a `nav:` entry of mkdocs.yml names: a path, `{title: path}`, or a list of them."""
    if isinstance(entry, str):
        return {entry} if entry.endswith(".md") else set()
    if isinstance(entry, dict):
        return set().union(*(_nav_pages(value) for value in entry.values()))
    if isinstance(entry, list):
        return set().union(*(_nav_pages(item) for item in entry))
    return set()


def test_every_documentation_page_is_in_the_sites_navigation() -> None:
    """A page missing from `nav:` would be built but reachable by no menu: orphaned."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["docs_dir"] == "docs"
    listed = _nav_pages(config["nav"])
    pages = {page.relative_to(DOCS).as_posix() for page in DOCS.rglob("*.md")}
    assert pages - listed == set(), "pages missing from mkdocs.yml's nav"
    assert listed - pages == set(), "nav entries without a page"


def test_the_readme_is_short() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move the detail to a page of docs/"


def _anchors(page: Path) -> set[str]:
    """The heading anchors of a page, as GitHub and mkdocs spell them (for these headings alike):
    lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"^ *```.*?^ *```", "", page.read_text(), flags=re.S | re.M)
    headings = re.findall(r"^#{1,6} +(.+?) *$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_the_readmes_links_lead_to_pages_and_headings_that_exist() -> None:
    """mkdocs --strict checks the pages' links; the README is not one of them."""
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local)
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), link
        if anchor:
            assert anchor in _anchors(target), link
