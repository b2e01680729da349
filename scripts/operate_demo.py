"""The README's "Operating a stack" outputs, regenerated: every `spotline` command for a deployed
stack, run against the local stack standing in for one (`--stack spotline-local`), with the
default sandbox scenario's spot weather (interruptions at 2 h and 5 h of training, no spot from
6 h to 12 h).

    .venv/bin/python scripts/operate_demo.py

What the local stack does not do by itself (EventBridge delivering an upload to Intake) happens
while a command waits, as in the tests (tests/devtools/operate/).
"""

from __future__ import annotations

import io
import json
import shlex
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from spotline.core.manifest import validate_bytes
from spotline_dev.account import prepare_account, team_allowance
from spotline_dev.cli import main
from spotline_dev.local_aws import STACK, start_local_stack
from spotline_dev.operate import deployment
from spotline_dev.sandbox_runs import QUIET, powertools_environment_for, weather_of
from spotline_dev.scenario import load_scenario
from spotline_dev.standin import TrainingBehaviour

ROOT = Path(__file__).resolve().parents[1]
WEEKLY, HOTFIX = "examples/manifests/ranker-v2.yaml", "examples/manifests/urgent-retrain.yaml"


def run(*argv: str) -> str:
    """Run one command as a user would, print it and what it printed (the handlers' logs aside)."""
    captured = io.StringIO()
    with redirect_stdout(captured), redirect_stderr(captured):
        code = main(list(argv))
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
            environment={"TEAM_POLICY": json.dumps(policy), **QUIET},
            weather=weather,
            behaviour=behaviour,
        ) as stack,
    ):
        prepare_account(stack.client, specs[0])
        same_image = specs[1].image == specs[0].image
        prepare_account(stack.client, specs[1], missing=("spec.image",) if same_image else ())

        def pause(_seconds: float) -> None:
            stack.deliver_events(sources=("aws.s3", "aws.states"))
            time.sleep(0.01)

        deployment.SURROUNDINGS.pause, deployment.SURROUNDINGS.now = pause, stack.clock.now
        on = ["--stack", STACK]
        with stack.clock.holding_token_waits():  # the hotfix stays where it is while we look at it
            hotfix = run("submit", HOTFIX, *on).splitlines()[1].split()[1]
            stack.deliver_events()
            while not any(job.status == "RUNNING" for job in stack.standin.jobs):
                if stack.standin.jobs:  # submitted: the world moves on while the execution waits
                    stack.clock.advance(60)
                time.sleep(0.01)
            stack.clock.advance(3600)
            run("runs", *on, "--state", "running")
            run("status", hotfix, *on)
            run("cancel", hotfix, *on, "--yes")
        out = run("submit", WEEKLY, *on, "--wait")
        weekly = out.splitlines()[1].split()[1]
        run("runs", *on)
        run("status", weekly, *on)
        run("logs", weekly, *on)


if __name__ == "__main__":
    demo()
