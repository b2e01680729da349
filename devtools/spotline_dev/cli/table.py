"""Every `spotline` command, in one table, as Metaflow lists its commands (`CLIS_DESC` in its
plugins/__init__.py): the name, the line `spotline --help` shows, the function that adds its
options and the one that runs it, both named "module:function" and imported only when needed.
Building the parser imports the option modules (argparse and the layer's pure core); a command's
implementation (boto3, moto, numpy, the SageMaker SDK) is imported when that command runs.

A command on a deployed stack (`on_stack`) is described by its help unless its options say more,
and runs through `operate.commands.run_deployed` (the stack found, AWS failures as one sentence).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_CLI = "spotline_dev.cli"
_OPERATE = f"{_CLI}.operate"


@dataclass(frozen=True)
class Command:
    name: str  # `spotline <name>`; "teams apply" is the action `apply` of `spotline teams`
    help: str
    options: str  # "module:function(parser, name)": its description, examples and options
    run: str | None = None  # "module:function(args)", or (args, deployment) on a stack; None: it has actions
    on_stack: bool = False


def _team(action: str, help: str, *, on_stack: bool = True) -> Command:
    return Command(
        f"teams {action}",
        help,
        f"{_OPERATE}.parser:team_action",
        f"{_OPERATE}.team_commands:cmd_teams_{action}",
        on_stack=on_stack,
    )


def _deployed(name: str, help: str) -> Command:
    return Command(name, help, f"{_OPERATE}.parser:{name}", f"{_OPERATE}.commands:cmd_{name}", on_stack=True)


COMMANDS: tuple[Command, ...] = (
    Command(
        "validate",
        "check manifests against the spotline/v1 contract",
        f"{_CLI}.options:validate",
        f"{_CLI}.commands:cmd_validate",
    ),
    Command(
        "render",
        "print the Batch SubmitServiceJob request for a manifest (dry run)",
        f"{_CLI}.options:render",
        f"{_CLI}.commands:cmd_render",
    ),
    Command(
        "from-trainer",
        "turn a SageMaker SDK ModelTrainer into a manifest",
        f"{_CLI}.options:from_trainer",
        f"{_CLI}.sdk.command:cmd_from_trainer",
    ),
    Command(
        "sandbox",
        "run the whole system locally on a virtual clock (no AWS account)",
        f"{_CLI}.options:sandbox",
        f"{_CLI}.commands:cmd_sandbox",
    ),
    Command(
        "local",
        "serve the whole system on this machine as an AWS endpoint for the aws CLI and the stack commands",
        f"{_CLI}.local:options",
        f"{_CLI}.local:cmd_local",
    ),
    Command(
        "explain",
        "tell the story of one execution: what happened, why, what to do next",
        f"{_CLI}.options:explain",
        f"{_CLI}.commands:cmd_explain",
    ),
    Command(
        "simulate",
        "replay the deadline policy, baselines and the offline optimum on real spot traces",
        f"{_CLI}.options:simulate",
        f"{_CLI}.commands:cmd_simulate",
    ),
    _deployed("submit", "validate a manifest against the stack's team policy, upload it and start its run"),
    _deployed("runs", "list the stack's runs: team, job, state, attempts, capacity, deadline, elapsed, cost so far"),
    _deployed("status", "where one run stands, in a few lines, with links"),
    _deployed("logs", "the CloudWatch logs of a run's training jobs, every attempt"),
    _deployed("cancel", "stop a run, its execution and its training jobs, in one command"),
    Command(
        "teams",
        "read and change the stack's team registry (each team's policy entry, versioned)",
        f"{_OPERATE}.parser:teams",
    ),
    _team("list", "every team in the stack's registry: version, quota share, quotas, last change"),
    _team("show", "a team's entry in force, its version, who changed it and when"),
    _team(
        "validate",
        "check a policy file against the JSON Schema, offline, and with --stack against the stack (quota totals, "
        "quota shares); change nothing",
        on_stack=False,
    ),
    _team("diff", "what a policy file would change in the registry, field by field"),
    _team(
        "apply",
        "validate a policy file, then have the stack apply it (a new version per changed team) and sync the "
        "quota shares; a refused change changes nothing",
    ),
    _team("history", "every version of a team's entry: when, by whom, what changed"),
    _team("rollback", "restore a team's entry as it was at VERSION (a new version, validated again)"),
    _team(
        "approve",
        "approve a team lead's pending change that widens its entry (platform team: a second, recorded "
        "step), then have the stack apply it",
    ),
    _team("remove", "remove a team: new runs are refused, its running jobs go on, its quota share is disabled"),
)


def load(target: str) -> Any:
    """The object "module:name" names, its module imported now."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def runner(command: Command) -> Callable[[argparse.Namespace], int]:
    """What `args.run` calls: the command's function, imported when the command runs."""
    target = command.run
    if target is None:
        raise ValueError(f"spotline {command.name} has actions, nothing of its own to run")

    def run(args: argparse.Namespace) -> int:
        implementation = load(target)
        if command.on_stack:
            return int(load(f"{_OPERATE}.commands:run_deployed")(implementation)(args))
        return int(implementation(args))

    return run


def add_commands(parser: argparse.ArgumentParser) -> None:
    """Every command of the table on `parser`, in the table's order (the order of `--help`)."""
    groups = {"": parser.add_subparsers(dest="command", required=True, metavar="COMMAND")}
    for command in COMMANDS:
        group, _, name = command.name.rpartition(" ")
        sub = groups[group].add_parser(
            name,
            help=command.help,
            description=command.help[0].upper() + command.help[1:] + "." if command.on_stack else None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        load(command.options)(sub, command.name)
        if command.run is None:
            groups[command.name] = sub.add_subparsers(dest=f"{name}_command", required=True, metavar="ACTION")
        else:
            sub.set_defaults(run=runner(command))
