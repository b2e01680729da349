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

from spotline.core.durations import parse_duration
from spotline_dev.cli.operate.output import OUTPUTS

STACK_ENV = "SPOTLINE_STACK"
STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")
Formatter = argparse.RawDescriptionHelpFormatter


def _deployed(command: str, module: str = "commands") -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        # boto3 only when a command runs
        from spotline_dev.cli.operate import commands, team_commands  # noqa: PLC0415

        implementation = getattr({"commands": commands, "team_commands": team_commands}[module], command)
        return commands.run_deployed(implementation)(args)

    return run


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


def add_stack_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_argument_group("the stack (credentials and region found as the aws CLI finds them)")
    where.add_argument(
        "--stack", default=os.environ.get(STACK_ENV), metavar="NAME", help=f"the Spotline stack (default: ${STACK_ENV})"
    )
    where.add_argument("--region", help="its region (default: the AWS configuration's, e.g. AWS_REGION)")
    where.add_argument("--profile", help="the AWS CLI profile to use (default: the AWS configuration's)")


def add_output_option(parser: argparse.ArgumentParser) -> None:
    """`--output table|json` and `--json`, the same on every command that prints data."""
    parser.add_argument(
        "--output", choices=OUTPUTS, default="table", help="table for people (default), json for scripts"
    )
    parser.add_argument("--json", dest="output", action="store_const", const="json", help="the same as --output json")


def _command(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    *,
    help: str,
    example_lines: list[str],
    description: str | None = None,
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help,
        description=description or help[0].upper() + help[1:] + ".",
        formatter_class=Formatter,
        epilog=examples(*example_lines),
    )
    parser.set_defaults(run=_deployed(f"cmd_{name}"))
    return parser


def add_operate_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    submit = _command(
        commands,
        "submit",
        help="validate a manifest against the stack's team policy, upload it and start its run",
        description="Validates FILE (the spotline/v1 contract, and the team's entry in the stack's registry "
        "when the caller may read it), uploads it to s3://<IngestBucketName>/manifests/<team>/<file name> and "
        "prints the execution the upload starts. Nothing is uploaded when the manifest is invalid.",
        example_lines=[
            "spotline submit ranker-v2.yaml --stack spotline",
            "spotline submit urgent.yaml --stack spotline --wait     # exit 3 if the run does not succeed",
            "generate-manifest | spotline submit - --stack spotline --output json",
        ],
    )
    submit.add_argument("file", metavar="FILE", help="the manifest; - reads standard input (uploaded as <name>.yaml)")
    submit.add_argument("--wait", action="store_true", help="follow the run to its end; exit 3 unless it succeeds")

    runs = _command(
        commands,
        "runs",
        help="list the stack's runs: team, job, state, attempts, capacity, deadline, elapsed, cost so far",
        description="The newest runs first, one row per run (a long run that continued in a fresh execution "
        "is shown by its latest one). Cost so far is SageMaker's billable time at on-demand rates.",
        example_lines=[
            "spotline runs --stack spotline",
            "spotline runs --stack spotline --team search-ranking --state running",
            "spotline runs --stack spotline --since 24h --output json | jq '.[] | select(.interruptions > 0)'",
        ],
    )
    runs.add_argument("--team", help="only this team's runs")
    runs.add_argument("--state", type=str.upper, choices=STATUSES, help="only executions in this status")
    runs.add_argument(
        "--since", type=since, metavar="WHEN", help="only runs started since: 24h, 7d or an RFC 3339 time"
    )
    runs.add_argument("--limit", type=positive, default=50, metavar="N", help="at most N runs (default 50)")

    status = _command(
        commands,
        "status",
        help="where one run stands, in a few lines, with links",
        example_lines=[
            "spotline status search-ranking-ranker-v2-df269d08 --stack spotline",
            "spotline status NAME --stack spotline --output json | jq .progress",
        ],
    )
    status.add_argument("name", metavar="NAME", help="the execution name (submit and runs print it)")

    logs = _command(
        commands,
        "logs",
        help="the CloudWatch logs of a run's training jobs, every attempt",
        example_lines=["spotline logs NAME --stack spotline", "spotline logs NAME --stack spotline --follow"],
    )
    logs.add_argument("name", metavar="NAME", help="the execution name")
    logs.add_argument("--follow", "-f", action="store_true", help="keep printing new lines until the run ends")

    cancel = _command(
        commands,
        "cancel",
        help="stop a run, its execution and its training jobs, in one command",
        description="Stops the run's execution (StopExecution; it ends ABORTED), then terminates its queued "
        "or running training jobs, and prints what it stopped. A run that has ended has nothing to stop.",
        example_lines=[
            "spotline cancel NAME --stack spotline",
            "spotline cancel NAME --stack spotline --yes --output json",
        ],
    )
    cancel.add_argument("name", metavar="NAME", help="the execution name")
    cancel.add_argument("--yes", "-y", action="store_true", help="do not ask first (asked only on a terminal)")

    for parser in (submit, runs, status, logs, cancel):
        add_output_option(parser)
        add_stack_options(parser)
    add_team_commands(commands)


TEAM_COMMANDS: list[tuple[str, str, list[str], list[str]]] = [
    # name, help, arguments, examples
    ("list", "every team in the stack's registry: version, quota share, quotas, last change", [], ["list"]),
    ("show", "a team's entry in force, its version, who changed it and when", ["team"], ["show search-ranking"]),
    (
        "validate",
        "check a policy file against the JSON Schema and the stack (quota totals, quota shares); change nothing",
        ["file"],
        ["validate teams.json"],
    ),
    ("diff", "what a policy file would change in the registry, field by field", ["file"], ["diff teams.json"]),
    (
        "apply",
        "validate a policy file, then have the stack apply it (a new version per changed team) and sync the "
        "quota shares; a refused change changes nothing",
        ["file"],
        ["apply teams.json", "apply vision.json --output json"],
    ),
    ("history", "every version of a team's entry: when, by whom, what changed", ["team"], ["history vision"]),
    (
        "rollback",
        "restore a team's entry as it was at VERSION (a new version, validated again)",
        ["team", "version"],
        ["rollback vision 3"],
    ),
    (
        "approve",
        "approve a team lead's pending change that widens its entry (platform team: a second, recorded "
        "step), then have the stack apply it",
        ["team"],
        ["approve vision"],
    ),
    (
        "remove",
        "remove a team: new runs are refused, its running jobs go on, its quota share is disabled",
        ["team"],
        ["remove old-team --yes"],
    ),
]


def add_team_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    teams = commands.add_parser(
        "teams",
        help="read and change the stack's team registry (each team's policy entry, versioned)",
        description="The stack's team registry: each team's policy entry, versioned, changed only through "
        "ApplyTeamChange after validation (docs/teams/team-policy.md).",
        formatter_class=Formatter,
        epilog=examples(
            *(f"spotline teams {line} --stack spotline" for _, _, _, lines in TEAM_COMMANDS for line in lines)
        ),
    )
    actions = teams.add_subparsers(dest="teams_command", required=True, metavar="ACTION")
    for name, help, arguments, example_lines in TEAM_COMMANDS:
        parser = actions.add_parser(
            name,
            help=help,
            description=help[0].upper() + help[1:] + ".",
            formatter_class=Formatter,
            epilog=examples(*(f"spotline teams {line} --stack spotline" for line in example_lines)),
        )
        for argument in arguments:
            if argument == "team":
                parser.add_argument("team", metavar="TEAM", help="the team's name")
            elif argument == "file":
                parser.add_argument("file", metavar="FILE", help='a policy file: {"teams": {<team>: <entry>}} (JSON)')
            else:
                parser.add_argument("version", metavar="VERSION", type=positive, help="the version to restore")
        if name == "remove":
            parser.add_argument("--yes", "-y", action="store_true", help="do not ask first (asked only on a terminal)")
        parser.set_defaults(run=_deployed(f"cmd_teams_{name}", "team_commands"))
        add_output_option(parser)
        add_stack_options(parser)
