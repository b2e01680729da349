"""Runs the commands README.md and the documentation pages (docs/**/*.md) show, and compares what
they print with what the page shows.

A command is a line `$ COMMAND` in a fenced block; its output is the lines after it, up to the
next `$ ` line or the end of the block. Each is named by its page and line
(`docs/teams/manifests.md:123`). Commands run from the repository root with `.venv/bin` on
PATH, so `spotline` and `.venv/bin/spotline` are the same program. Every output must be exact, on
any date: a command whose output depends on the day pins `--now`.

    .venv/bin/python scripts/readme_commands.py            # the quick ones (what the tests run)
    .venv/bin/python scripts/readme_commands.py --all      # and the simulations and benchmarks (~20 min)
    .venv/bin/python scripts/readme_commands.py --list     # every command, and how it is checked

A simulation's block is an excerpt (its summary table): it must appear, exact, in what the
command prints. A benchmark's figures must be the same but for its timings (MEASURED). The
commands that need a stack, and the 40-minute benchmark, are not run here: their outputs come
from the scripts named in CHECKED_ELSEWHERE."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
QUICK = ("spotline validate", "spotline from-trainer", "spotline render")
SLOW = (
    "spotline simulate",
    "python benchmarks/lifecycle_72h.py",
    "python benchmarks/handler_import_time.py",
    "python benchmarks/fleet_week.py",
    "python benchmarks/team_registry.py",
    "python benchmarks/scoring_nights.py",
    "python benchmarks/permission_check.py",
    "python benchmarks/burst.py",
)
MEASURED = re.compile(
    r'("wallSeconds": |"quotaShareSeconds": |"python": "|replayed in \(wallSeconds\)[ \t]+)[\d.]+((?:[ \t]+[\d.]+)*)'
)
IMPORT_TIMES = re.compile(r'("importMillisecondsMedianOf5": \{)([^}]*)')
"""Figures that are timings (they vary from run to run), compared as `#` only: wall seconds,
the Python version, and the import milliseconds of handler_import_time.py."""
CHECKED_ELSEWHERE = {
    "python benchmarks/history_worst_case.py": "make bench (about 40 minutes)",
    "spotline submit": "scripts/operate_demo.py --check (the tests run it)",
    "spotline runs": "scripts/operate_demo.py --check",
    "spotline status": "scripts/operate_demo.py --check",
    "spotline logs": "scripts/operate_demo.py --check",
    "spotline cancel": "scripts/operate_demo.py --check",
    "spotline teams": "scripts/operate_demo.py --check (docs/teams/team-policy.md); offline teams validate: "
    "tests/devtools/cli/operate/test_teams_validate_offline.py",
    "spotline local": "tests/devtools/cli/local/test_local_server.py (its output, the port aside)",
    "make checkov": "make test",
}


@dataclass(frozen=True)
class Example:
    line: int
    command: str
    shown: str
    page: str = "README.md"
    """The page's path from the repository root."""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """README.md, then every page of the documentation site, in path order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def examples(text: str, page: str = "README.md") -> list[Example]:
    """Every `$ ` line of a fenced block with the lines after it; a block indented in a list is
    read without its indentation."""
    found: list[Example] = []
    in_block, indent, command, start = False, 0, "", 0
    lines: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.lstrip().startswith("```"):
            if in_block and command:
                found.append(Example(start, command, "\n".join(lines), page))
            in_block, indent, command, lines = not in_block, len(raw) - len(raw.lstrip()), "", []
            continue
        line = raw[indent:] if raw[:indent].strip() == "" else raw
        if in_block and line.startswith("$ "):
            if command:
                found.append(Example(start, command, "\n".join(lines), page))
            command, start, lines = line[2:], number, []
        elif in_block and command:
            lines.append(line)
    return found


def program(command: str) -> str:
    """`spotline validate` from `.venv/bin/spotline validate --now ... FILE   # a comment`."""
    words = re.sub(r"\s+#.*$", "", command).replace(".venv/bin/", "").split()
    return " ".join(words[:2])


def without_timings(text: str) -> str:
    text = IMPORT_TIMES.sub(lambda m: m.group(1) + re.sub(r": [\d.]+", ": #", m.group(2)), text)
    return MEASURED.sub(lambda m: m.group(1) + "#", text)


COMMAND_TIMEOUT = 1200
"""Seconds one command may take: the fleet month replays in about 5 minutes here."""


def run(command: str) -> str:
    environment = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    return (done.stdout + done.stderr).rstrip("\n")


def all_examples() -> list[Example]:
    """Every command of README.md and of the documentation pages."""
    return [e for page in pages() for e in examples(page.read_text(), page.relative_to(ROOT).as_posix())]


def quick_examples() -> list[Example]:
    return [e for e in all_examples() if program(e.command).startswith(QUICK)]


def slow_examples() -> list[Example]:
    return [e for e in all_examples() if program(e.command).startswith(SLOW)]


def shows(example: Example, printed: str) -> bool:
    """Quick commands exactly; a simulation's excerpt as a block of its output; a benchmark's
    figures all but its timings."""
    if program(example.command).startswith("python benchmarks/"):
        return without_timings(printed) == without_timings(example.shown)
    if program(example.command).startswith(SLOW):
        return example.shown in printed
    return printed == example.shown


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="list every command the pages show and how it is checked")
    parser.add_argument("--all", action="store_true", help="also run the simulations and benchmarks (minutes)")
    args = parser.parse_args()
    if args.list:
        for example in all_examples():
            name = program(example.command)
            how = (
                "run here"
                if name.startswith(QUICK)
                else "run with --all (an excerpt)"
                if name.startswith(SLOW)
                else next(
                    (where for prefix, where in CHECKED_ELSEWHERE.items() if prefix in example.command), "not checked"
                )
            )
            print(f"{example.where}: {name}: {how}")
        return 0
    failed = 0
    checked = quick_examples() + (slow_examples() if args.all else [])
    for example in checked:
        printed = run(example.command)
        if not shows(example, printed):
            failed += 1
            print(f"{example.where}: `{example.command}` printed:\n{printed}")
            print(f"--- {example.page} shows:\n{example.shown}\n")
    print(f"{len(checked) - failed} of {len(checked)} commands of README.md and docs/ print what their page shows")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
