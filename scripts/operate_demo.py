"""The outputs of the "Operating a stack" page (docs/platform/operating.md) and of the team
registry's commands (docs/teams/team-policy.md), regenerated: every `spotline` command for a
deployed stack, typed as a user types it (a process of its own, AWS_ENDPOINT_URL and made-up
credentials) against `spotline local` serving the stack over HTTP (`--stack spotline-local`),
with the default sandbox scenario's spot weather (interruptions at 2 h and 5 h of training, no
spot from 6 h to 12 h).

    .venv/bin/python scripts/operate_demo.py           # print the outputs
    .venv/bin/python scripts/operate_demo.py --check   # and compare them with the page's (the tests do)
    .venv/bin/python scripts/operate_demo.py --write   # and put them in the page

The server's clock moves only while someone waits (`--speed 0`): a command's wait, or on-call's
between two commands. So every look lands at the same moment of the run, run after run.
"""

from __future__ import annotations

import argparse
import difflib
import io
import os
import shlex
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

from spotline_dev.harness.sandbox.scenario import DEFAULT_SCENARIO, load_scenario
from spotline_dev.harness.serve.server import LocalOptions, LocalServer, serving

ROOT = Path(__file__).resolve().parents[1]
PAGE = Path("docs/platform/operating.md")
"""Where the block lives, from the repository root."""
TEAMS_PAGE = Path("docs/teams/team-policy.md")
TEAMS_POLICY, TEAMS_WIDER, TEAMS_OVER = (
    "examples/team-policy.json",
    "examples/teams/search-ranking-g6.json",
    "examples/teams/search-ranking-over-capacity.json",
)
WEEKLY, HOTFIX = "examples/manifests/ranker-v2.yaml", "examples/manifests/urgent-retrain.yaml"
EXAMPLES_TEAM = "examples/teams/search-ranking.json"
"""The search-ranking team's entry that allows what the two example manifests name."""
STACK = "spotline-local"
LOG_LINES_SHOWN = 18
DAY_SECONDS = 86400.0
LOOK_EVERY_SECONDS = 300.0
"""How often `--wait` and `--follow` look here, in virtual time (they ask every 15 s): a look every
15 virtual seconds of a 14-hour run would take this script ten minutes."""


class User:
    """A shell with `spotline local`'s exports: each command a process of its own."""

    def __init__(self, server: LocalServer) -> None:
        host, port = str(server.server_address[0]), int(server.server_address[1])
        self.url = f"http://{host}:{port}"
        self.server = server
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "spotline-local",
            "AWS_SECRET_ACCESS_KEY": "spotline-local",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }

    def run(self, *argv: str) -> str:
        """Run one command as a user would, print it and what it printed (the layer's logs aside)."""
        done = subprocess.run(
            [sys.executable, "-m", "spotline_dev.cli", *argv],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        printed = done.stdout + done.stderr
        shown = [line for line in printed.splitlines() if not line.startswith('{"')]
        print(f"$ spotline {shlex.join(argv)}\n" + "\n".join(shown) + f"\n(exit {done.returncode})\n")
        return "\n".join(shown)

    def wait(self, seconds: float) -> None:
        """On-call waits: the server's clock moves that much (and EventBridge delivers)."""
        request = urllib.request.Request(f"{self.url}/_spotline/wait?seconds={seconds:g}", method="POST")
        with urllib.request.urlopen(request, timeout=600):
            pass


@contextmanager
def local_server(team_policy: str | None = None) -> Iterator[User]:
    """`spotline local --speed 0 --start <the scenario's start> --scenario <default>` in this process."""
    scenario = load_scenario(None)
    options = LocalOptions(
        port=0,
        speed=0,
        scenario=DEFAULT_SCENARIO,
        team_policy=ROOT / team_policy if team_policy else None,
        wait_step=LOOK_EVERY_SECONDS,
    )
    with serving(options, scenario.start) as server:
        yield User(server)


def demo() -> None:
    with local_server(EXAMPLES_TEAM) as user:
        on = ["--stack", STACK]
        standin = user.server.local.stack.standin
        hotfix = user.run("submit", HOTFIX, *on).splitlines()[1].split()[1]
        for _ in range(24 * 60):  # a virtual day at most: the scenario starts it within minutes
            if any(job.status == "RUNNING" for job in standin.jobs):
                break
            user.wait(60)
        else:
            raise RuntimeError("the hotfix's training job never started")
        user.wait(3600)  # an hour into its training, someone looks, and cancels it
        user.run("runs", *on, "--state", "running")
        user.run("status", hotfix, *on)
        user.run("cancel", hotfix, *on, "--yes")
        out = user.run("submit", WEEKLY, *on, "--wait")
        weekly = out.splitlines()[1].split()[1]
        user.run("runs", *on)
        user.run("status", weekly, *on)
        user.run("logs", weekly, *on)


def teams_demo() -> None:
    """The team registry's life on a fresh stack: seeded from a policy file, read, changed, a
    change refused, the history, a rollback."""
    with local_server() as user:
        on = ["--stack", STACK]
        user.run("teams", "apply", TEAMS_POLICY, *on)
        user.run("teams", "list", *on)
        user.wait(DAY_SECONDS)  # a day later, search-ranking asks for g6 and a quota
        user.run("teams", "diff", TEAMS_WIDER, *on)
        user.run("teams", "apply", TEAMS_OVER, *on)
        user.run("teams", "apply", TEAMS_WIDER, *on)
        user.wait(DAY_SECONDS)  # and a day after that, goes back
        user.run("teams", "history", "search-ranking", *on)
        user.run("teams", "rollback", "search-ranking", "1", *on)
        user.run("teams", "list", *on)


def page_block(page: Path = PAGE, first: str = f"submit {HOTFIX}") -> str:
    """A page's block: from its first command to its closing fence."""
    text = (ROOT / page).read_text()
    start = text.index(f"$ spotline {first} --stack {STACK}\n")
    return text[start : text.index("```", start)].rstrip("\n")


def teams_block() -> str:
    return page_block(TEAMS_PAGE, f"teams apply {TEAMS_POLICY}")


def as_shown(printed: str) -> str:
    """What the page shows of the demo's output: all of it, but the logs' first lines only."""
    head, logs = printed.rstrip("\n").split("\n$ spotline logs ", 1)
    command, *lines = logs.splitlines()
    return f"{head}\n$ spotline logs {command}\n" + "\n".join(lines[:LOG_LINES_SHOWN]) + "\n..."


def differences(printed: str, shown: str, page: str = PAGE.as_posix()) -> str | None:
    """None when the page shows what the demo printed: exactly, up to a closing `...` line
    (the logs are an excerpt, their first lines)."""
    excerpt = shown.removesuffix("\n...")
    if printed.rstrip("\n") == shown or (excerpt != shown and printed.startswith(excerpt + "\n")):
        return None
    lines = list(difflib.unified_diff(shown.splitlines(), printed.splitlines(), page, "printed", lineterm=""))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare the outputs with the page's; exit 1 if not")
    parser.add_argument("--write", action="store_true", help="put the outputs in the page")
    args = parser.parse_args()
    if not (args.check or args.write):
        demo()
        teams_demo()
        return 0
    printed, teams = io.StringIO(), io.StringIO()
    with redirect_stdout(printed):
        demo()
    with redirect_stdout(teams):
        teams_demo()
    if args.write:
        page = ROOT / PAGE
        page.write_text(page.read_text().replace(page_block(), as_shown(printed.getvalue()), 1))
        page = ROOT / TEAMS_PAGE
        page.write_text(page.read_text().replace(teams_block(), teams.getvalue().rstrip("\n"), 1))
    found = [
        differences(printed.getvalue(), page_block()),
        differences(teams.getvalue(), teams_block(), TEAMS_PAGE.as_posix()),
    ]
    for difference in found:
        if difference:
            print(difference)
    if not any(found):
        print(f"The command blocks of {PAGE.as_posix()} and {TEAMS_PAGE.as_posix()} are what these commands print")
    return 1 if any(found) else 0


if __name__ == "__main__":
    sys.exit(main())
