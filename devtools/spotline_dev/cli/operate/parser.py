"""The options, help and examples of the commands for a deployed stack. Nothing here imports
boto3: `spotline validate` and `--help` stay fast; a command loads its implementation
(`operate.commands`) when it runs.

Every command takes `--stack` (default: $SPOTLINE_STACK), `--region` and `--profile` as the aws
CLI does, and `--output table|json`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from datetime import datetime, timedelta

from spotline.core.common.durations import parse_duration
from spotline_dev.cli.operate.output import OUTPUTS

STACK_ENV = "SPOTLINE_STACK"
STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")


def positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return number


def examples(*lines: str) -> str:
    """An `--help` epilog: `examples:` and one command per line."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def timestamp(text: str) -> datetime:
    """An RFC 3339 moment with its offset (`2026-12-01T06:00:00Z`)."""
    try:
        moment = datetime.fromisoformat(text.upper())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an RFC 3339 timestamp") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} needs an offset such as Z")
    return moment


def since(text: str) -> Callable[[datetime], datetime]:
    """`--since`: a duration back from now (90m, 24h, 7d) or an RFC 3339 moment."""
    try:
        seconds = parse_duration(text)
    except ValueError:
        try:
            moment = timestamp(text)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is neither a duration (24h, 7d) nor an RFC 3339 time with its offset"
            ) from None
        return lambda _now: moment
    return lambda now: now - timedelta(seconds=seconds)


def add_stack_options(parser: argparse.ArgumentParser, stack_help: str = "the Spotline stack") -> None:
    where = parser.add_argument_group("the stack (credentials and region found as the aws CLI finds them)")
    where.add_argument(
        "--stack", default=os.environ.get(STACK_ENV), metavar="NAME", help=f"{stack_help} (default: ${STACK_ENV})"
    )
    where.add_argument("--region", help="its region (default: the AWS configuration's, e.g. AWS_REGION)")
    where.add_argument("--profile", help="the AWS CLI profile to use (default: the AWS configuration's)")


def add_output_option(parser: argparse.ArgumentParser) -> None:
    """`--output table|json` and `--json`, the same on every command that prints data."""
    parser.add_argument(
        "--output", choices=OUTPUTS, default="table", help="table for people (default), json for scripts"
    )
    parser.add_argument("--json", dest="output", action="store_const", const="json", help="the same as --output json")


def _on_stack(parser: argparse.ArgumentParser, stack_help: str = "the Spotline stack") -> None:
    """What every command on a deployed stack takes, after its own options."""
    add_output_option(parser)
    add_stack_options(parser, stack_help)


def submit(parser: argparse.ArgumentParser, name: str) -> None:
    parser.description = (
        "Validates FILE (the spotline/v1 contract, and the team's entry in the stack's registry "
        "when the caller may read it), uploads it to s3://<IngestBucketName>/manifests/<team>/<file name> and "
        "prints the execution the upload starts. Nothing is uploaded when the manifest is invalid."
    )
    parser.epilog = examples(
        "spotline submit ranker-v2.yaml --stack spotline",
        "spotline submit urgent.yaml --stack spotline --wait     # exit 3 if the run does not succeed",
        "generate-manifest | spotline submit - --stack spotline --output json",
    )
    parser.add_argument("file", metavar="FILE", help="the manifest; - reads standard input (uploaded as <name>.yaml)")
    parser.add_argument("--wait", action="store_true", help="follow the run to its end; exit 3 unless it succeeds")
    _on_stack(parser)


def runs(parser: argparse.ArgumentParser, name: str) -> None:
    parser.description = (
        "The newest runs first, one row per run (a long run that continued in a fresh execution "
        "is shown by its latest one). Cost so far is SageMaker's billable time at on-demand rates."
    )
    parser.epilog = examples(
        "spotline runs --stack spotline",
        "spotline runs --stack spotline --team search-ranking --state running",
        "spotline runs --stack spotline --since 24h --output json | jq '.[] | select(.interruptions > 0)'",
    )
    parser.add_argument("--team", help="only this team's runs")
    parser.add_argument("--state", type=str.upper, choices=STATUSES, help="only executions in this status")
    parser.add_argument(
        "--since", type=since, metavar="WHEN", help="only runs started since: 24h, 7d or an RFC 3339 time"
    )
    parser.add_argument("--limit", type=positive, default=50, metavar="N", help="at most N runs (default 50)")
    _on_stack(parser)


def status(parser: argparse.ArgumentParser, name: str) -> None:
    parser.epilog = examples(
        "spotline status search-ranking-ranker-v2-df269d08 --stack spotline",
        "spotline status NAME --stack spotline --output json | jq .progress",
    )
    parser.add_argument("name", metavar="NAME", help="the execution name (submit and runs print it)")
    _on_stack(parser)


def logs(parser: argparse.ArgumentParser, name: str) -> None:
    parser.epilog = examples("spotline logs NAME --stack spotline", "spotline logs NAME --stack spotline --follow")
    parser.add_argument("name", metavar="NAME", help="the execution name")
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new lines until the run ends")
    _on_stack(parser)


def cancel(parser: argparse.ArgumentParser, name: str) -> None:
    parser.description = (
        "Stops the run's execution (StopExecution; it ends ABORTED), then terminates its queued "
        "or running training jobs, and prints what it stopped. A run that has ended has nothing to stop."
    )
    parser.epilog = examples(
        "spotline cancel NAME --stack spotline",
        "spotline cancel NAME --stack spotline --yes --output json",
    )
    parser.add_argument("name", metavar="NAME", help="the execution name")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask first (asked only on a terminal)")
    _on_stack(parser)


TEAM_ACTIONS: dict[str, tuple[list[str], list[str]]] = {
    # action: its arguments, its examples (`spotline teams <example> --stack spotline`)
    "list": ([], ["list"]),
    "show": (["team"], ["show search-ranking"]),
    "validate": (["file"], ["validate teams.json"]),  # and OFFLINE_EXAMPLES, first
    "diff": (["file"], ["diff teams.json"]),
    "apply": (["file"], ["apply teams.json", "apply vision.json --output json"]),
    "history": (["team"], ["history vision"]),
    "rollback": (["team", "version"], ["rollback vision 3"]),
    "approve": (["team"], ["approve vision"]),
    "remove": (["team"], ["remove old-team --yes"]),
}


OFFLINE_EXAMPLES: dict[str, list[str]] = {
    # action: its examples without a stack (`spotline teams <example>`)
    "validate": ["validate examples/teams/search-ranking-g6.json"],
}
OFFLINE_VALIDATE = (
    "Checks a policy file as ApplyTeamChange would, changing nothing. Without --stack (or "
    f"${STACK_ENV}), offline: the JSON Schema and each entry's own rules, so a team lead can check an entry "
    "before proposing it. With --stack, also the stack's checks against its registry now: quota types and "
    "totals within TrainingCapacity, quota shares, resources other teams hold."
)


def _team_examples(action: str) -> list[str]:
    offline = [f"spotline teams {line}" for line in OFFLINE_EXAMPLES.get(action, [])]
    return offline + [f"spotline teams {line} --stack spotline" for line in TEAM_ACTIONS[action][1]]


def teams(parser: argparse.ArgumentParser, name: str) -> None:
    parser.description = (
        "The stack's team registry: each team's policy entry, versioned, changed only through "
        "ApplyTeamChange after validation (docs/teams/team-policy.md). `teams validate` also works without a stack."
    )
    parser.epilog = examples(*(line for action in TEAM_ACTIONS for line in _team_examples(action)))


def team_action(parser: argparse.ArgumentParser, name: str) -> None:
    """`spotline teams <action>` (`name` is "teams <action>")."""
    action = name.removeprefix("teams ")
    arguments = TEAM_ACTIONS[action][0]
    parser.epilog = examples(*_team_examples(action))
    if action == "validate":
        parser.description = OFFLINE_VALIDATE
    for argument in arguments:
        if argument == "team":
            parser.add_argument("team", metavar="TEAM", help="the team's name")
        elif argument == "file":
            parser.add_argument("file", metavar="FILE", help='a policy file: {"teams": {<team>: <entry>}} (JSON)')
        else:
            parser.add_argument("version", metavar="VERSION", type=positive, help="the version to restore")
    if action == "remove":
        parser.add_argument("--yes", "-y", action="store_true", help="do not ask first (asked only on a terminal)")
    _on_stack(
        parser,
        "the Spotline stack whose checks to add; none: offline" if action == "validate" else "the Spotline stack",
    )
