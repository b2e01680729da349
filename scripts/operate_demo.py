"""The outputs of the "Operating a stack" page (docs/platform/operating.md) and of the team
registry's commands (docs/teams/team-policy.md), regenerated: every `spotline` command for a
deployed stack, run against the local stack standing in for one (`--stack spotline-local`), with
the default sandbox scenario's spot weather (interruptions at 2 h and 5 h of training, no spot
from 6 h to 12 h).

    .venv/bin/python scripts/operate_demo.py           # print the outputs
    .venv/bin/python scripts/operate_demo.py --check   # and compare them with the page's (the tests do)
    .venv/bin/python scripts/operate_demo.py --write   # and put them in the page

What the local stack does not do by itself (EventBridge delivering an upload to Intake) happens
while a command waits, as in the tests (tests/devtools/cli/operate/).
"""

from __future__ import annotations

import argparse
import difflib
import io
import json
import shlex
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from spotline.core.manifest.manifest import validate_bytes
from spotline_dev.cli import entry as cli
from spotline_dev.cli.operate import deployment
from spotline_dev.harness.local.stack import STACK, start_local_stack
from spotline_dev.harness.sandbox.account import prepare_account, team_allowance
from spotline_dev.harness.sandbox.runs import QUIET, powertools_environment_for, weather_of
from spotline_dev.harness.sandbox.scenario import load_scenario
from spotline_dev.harness.standin import TrainingBehaviour

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
ON_CALL = "on-call"
LOG_LINES_SHOWN = 18
DAY_SECONDS = 86400.0
LOOK_EVERY_SECONDS = 300.0
"""How often `--wait` and `--follow` look here, in virtual time (they look every 15 s of real time):
a look every 15 virtual seconds of a 14-hour run would take this script ten minutes."""


def run(*argv: str) -> str:
    """Run one command as a user would, print it and what it printed (the handlers' logs aside)."""
    captured = io.StringIO()
    with redirect_stdout(captured), redirect_stderr(captured):
        code = cli.main(list(argv))
    shown = [line for line in captured.getvalue().splitlines() if not line.startswith('{"')]
    print(f"$ spotline {shlex.join(argv)}\n" + "\n".join(shown) + f"\n(exit {code})\n")
    return "\n".join(shown)


def allowing_both(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """One team's TeamPolicy entry allowing what either manifest asks for."""
    both: dict[str, Any] = {}
    for key, value in first.items():
        other = second[key]
        if isinstance(value, list):
            both[key] = sorted(set(value) | set(other))
        elif isinstance(value, bool):
            both[key] = value or other
        else:
            both[key] = max(value, other)
    return both


def demo() -> None:
    scenario = load_scenario(None)
    specs = [validate_bytes((ROOT / m).read_bytes(), now=scenario.start).spec for m in (WEEKLY, HOTFIX)]
    assert specs[0] and specs[1] and specs[0].team == specs[1].team
    policy = {"teams": {specs[0].team: allowing_both(team_allowance(specs[0]), team_allowance(specs[1]))}}
    weather = weather_of(scenario)

    def behaviour(request: dict[str, object]) -> TrainingBehaviour:
        hotfix = "hotfix" in json.dumps(request)
        spec = specs[1] if hotfix else specs[0]
        return TrainingBehaviour(duration=float(spec.expected_duration_seconds or 3600) if spec else 3600.0)

    with (
        powertools_environment_for(False),
        start_local_stack(
            scenario.start,
            team_policy=json.dumps(policy),
            environment=QUIET,
            weather=weather,
            behaviour=behaviour,
        ) as stack,
    ):
        prepare_account(stack.client, specs[0])
        same_image = specs[1].image == specs[0].image
        prepare_account(stack.client, specs[1], missing=("spec.image",) if same_image else ())

        def pause(seconds: float) -> None:
            stack.deliver_events(sources=("aws.s3", "aws.states"))
            stack.clock.sleep(seconds, key=ON_CALL)

        def look_again(_seconds: float) -> None:
            pause(LOOK_EVERY_SECONDS)

        deployment.SURROUNDINGS.pause, deployment.SURROUNDINGS.now = look_again, stack.clock.now
        on = ["--stack", STACK]
        # On-call takes part in the virtual clock: time moves only while they wait too, so every
        # look lands at the same moment of the run, run after run.
        with stack.clock.participating(ON_CALL):
            hotfix = run("submit", HOTFIX, *on).splitlines()[1].split()[1]
            stack.deliver_events()
            for _ in range(24 * 60):  # a virtual day at most: the scenario starts it within minutes
                if any(job.status == "RUNNING" for job in stack.standin.jobs):
                    break
                pause(60)
            else:
                raise RuntimeError("the hotfix's training job never started")
            pause(3600)  # an hour into its training, someone looks, and cancels it
            run("runs", *on, "--state", "running")
            run("status", hotfix, *on)
            run("cancel", hotfix, *on, "--yes")
            out = run("submit", WEEKLY, *on, "--wait")
            weekly = out.splitlines()[1].split()[1]
        run("runs", *on)
        run("status", weekly, *on)
        run("logs", weekly, *on)


def teams_demo() -> None:
    """The team registry's life on a fresh stack: seeded from a policy file, read, changed, a
    change refused, the history, a rollback."""
    scenario = load_scenario(None)
    with (
        powertools_environment_for(False),
        start_local_stack(scenario.start, environment=QUIET) as stack,
    ):
        deployment.SURROUNDINGS.now = stack.clock.now
        on = ["--stack", STACK]
        run("teams", "apply", TEAMS_POLICY, *on)
        run("teams", "list", *on)
        stack.clock.advance(DAY_SECONDS)  # a day later, search-ranking asks for g6 and a quota
        run("teams", "diff", TEAMS_WIDER, *on)
        run("teams", "apply", TEAMS_OVER, *on)
        run("teams", "apply", TEAMS_WIDER, *on)
        stack.clock.advance(DAY_SECONDS)  # and a day after that, goes back
        run("teams", "history", "search-ranking", *on)
        run("teams", "rollback", "search-ranking", "1", *on)
        run("teams", "list", *on)


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
