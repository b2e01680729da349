"""The commands for a deployed stack: what each does and prints, and how failures become
messages and exit codes (`spotline_dev.exit_codes`). Their options are in `operate.parser`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from datetime import datetime

from botocore.exceptions import BotoCoreError, ClientError

from spotline.core.billing.cost import format_usd
from spotline.core.common.durations import format_duration
from spotline_dev.cli.operate.cancel import caller, cancel
from spotline_dev.cli.operate.deployment import SURROUNDINGS, Deployment, OperateError, aws_failure, connect
from spotline_dev.cli.operate.logs import LogLine, follow_logs, run_logs
from spotline_dev.cli.operate.output import as_json, duration, percent, table
from spotline_dev.cli.operate.runs import Run, describe_run, list_runs
from spotline_dev.cli.operate.submit import ManifestRejected, follow, submit, succeeded
from spotline_dev.exit_codes import EXIT_AWS, EXIT_INVALID, EXIT_NOT_SUCCEEDED, EXIT_OK, EXIT_USAGE
from spotline_dev.explain.history import LINK_LABELS


def read_input(path: str) -> tuple[bytes, str | None]:
    """The file's bytes and name; `-` reads standard input (no name)."""
    if path == "-":
        return sys.stdin.buffer.read(), None
    try:
        with open(path, "rb") as file:
            return file.read(), os.path.basename(path)
    except OSError as exc:
        raise OperateError(f"{path}: cannot read file: {exc.strerror or exc}", usage=True) from None


# --- the commands -----------------------------------------------------------------------------


def cmd_submit(args: argparse.Namespace, deployment: Deployment) -> int:
    data, file_name = read_input(args.file)
    now = SURROUNDINGS.now()
    try:
        submission = submit(deployment, data, file_name=file_name, now=now)
    except ManifestRejected as rejected:
        where = args.file if args.file != "-" else "<stdin>"
        if args.output == "json":
            print(as_json({"file": where, "valid": False, "errors": [e.to_dict() for e in rejected.errors]}))
        for error in rejected.errors:
            print(f"{where}: {error.path}: {error.message}", file=sys.stderr)
        print("spotline submit: nothing uploaded", file=sys.stderr)
        return EXIT_INVALID
    if args.output == "json" and (not args.wait or submission.execution_name is None):
        print(as_json(submission.to_dict()))
    elif args.output != "json":
        checked = "" if submission.team_policy_checked else " (the team's registry entry was not readable: not checked)"
        version = f" (version {submission.version_id})" if submission.version_id else ""
        print(f"Valid{checked}; uploaded s3://{submission.bucket}/{submission.key}{version}")
        if submission.execution_name is None:
            print(
                f"Registered scoring job: each Dataset Ready event of {', '.join(submission.datasets)} starts a night"
            )
        else:
            print(f"Execution  {submission.execution_name}")
            print(f"Console    {submission.console}")
    if not args.wait or submission.execution_name is None:
        return EXIT_OK

    def progress(run: Run) -> None:
        if args.output != "json":
            print(f"{_clock()}  {_run_line(run)}", flush=True)

    run = follow(deployment, submission.execution_name, progress)
    if args.output == "json":
        print(as_json({**submission.to_dict(), "run": run.to_dict()}))
    else:
        print(f"{_clock()}  {run.name} {run.status}: {run.explanation or run.cause or run.state}")
    return EXIT_OK if succeeded(run) else EXIT_NOT_SUCCEEDED


def cmd_runs(args: argparse.Namespace, deployment: Deployment) -> int:
    now = SURROUNDINGS.now()
    runs = list_runs(
        deployment,
        now,
        team=args.team,
        status=args.state,
        since=args.since(now) if args.since else None,
        limit=args.limit,
    )
    if args.output == "json":
        print(as_json([run.to_dict() for run in runs]))
        return EXIT_OK
    if not runs:
        print("No runs.")
        return EXIT_OK
    headers = ("NAME", "TEAM", "JOB", "STATE", "ATTEMPTS", "CAPACITY", "DEADLINE", "ELAPSED", "COST")
    rows = [
        (
            run.name,
            run.team or "-",
            run.job or "-",
            run.state,
            str(run.attempts) if run.scoring is None else "-",
            run.capacity or "-",
            run.deadline or "-",
            duration(run.elapsed_seconds),
            format_usd(run.cost_usd),
        )
        for run in runs
    ]
    print(table(rows, headers))
    return EXIT_OK


def cmd_status(args: argparse.Namespace, deployment: Deployment) -> int:
    run = describe_run(deployment, args.name, SURROUNDINGS.now())
    if args.output == "json":
        print(as_json(run.to_dict()))
        return EXIT_OK
    print(render_status(run, args.name, SURROUNDINGS.now()))
    print(f"\nThe whole story: spotline explain {run.name} --stack {deployment.stack}")
    return EXIT_OK


def render_status(run: Run, asked: str, now: datetime) -> str:
    continued = f" (the run of {asked} continues here)" if run.name != asked else ""
    out = [f"{run.name}  {run.status}: {run.state}{continued}"]
    job = "/".join(p for p in (run.team, run.job) if p) or "unknown"
    if run.scoring is not None:
        out.append(f"  Job        {job} (scoring), elapsed {duration(run.elapsed_seconds)}")
        out += run.scoring.lines(now)
        if run.error:
            out.append(f"  Error      {run.error}: {run.cause or ''}".rstrip(": "))
        return "\n".join(out)
    out.append(f"  Job        {job}, attempt {run.attempts or '-'} on {run.capacity or '-'}")
    if run.deadline:
        ended = datetime.fromisoformat(run.ended_at) if run.ended_at else None
        left = (datetime.fromisoformat(run.deadline) - (ended or now)).total_seconds()
        if ended:
            when = f"ended {format_duration(left)} before it" if left >= 0 else "ended after it"
        else:
            when = f"in {format_duration(left)}" if left > 0 else "passed"
        slack = f", slack {format_duration(run.slack_seconds)}" if run.slack_seconds is not None else ""
        out.append(f"  Deadline   {run.deadline} ({when}){slack}")
    out.append(
        f"  Progress   {percent(run.progress)} checkpointed; elapsed {duration(run.elapsed_seconds)}, "
        f"cost {format_usd(run.cost_usd)} so far, {run.interruptions} spot interruption(s)"
    )
    if run.cost_unknown:
        out.append(f"  Cost       unknown: {run.cost_unknown}")
    if run.explanation:
        out.append(f"  Why        {run.explanation}")
    if run.error:
        out.append(f"  Error      {run.error}: {run.cause or ''}".rstrip(": "))
    out += [f"  {LINK_LABELS.get(key, key):<10} {url}" for key, url in run.links.items()]
    return "\n".join(out)


def cmd_logs(args: argparse.Namespace, deployment: Deployment) -> int:
    def show(line: LogLine) -> None:
        if args.output == "json":
            print(json.dumps(line.to_dict()), flush=True)
        else:
            print(
                f"{line.at.isoformat(timespec='seconds').replace('+00:00', 'Z')}  {line.training_job} {line.host}  "
                f"{line.message}",
                flush=True,
            )

    if args.follow:
        follow_logs(deployment, args.name, show)
        return EXIT_OK
    run = describe_run(deployment, args.name, SURROUNDINGS.now())
    lines = run_logs(deployment, run)
    if args.output == "json":
        print(as_json([line.to_dict() for line in lines]))
    else:
        for line in lines:
            show(line)
        if not lines:
            print(f"No training logs for {run.name} yet ({run.state}).", file=sys.stderr)
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace, deployment: Deployment) -> int:
    if not args.yes and sys.stdin.isatty():
        answer = input(f"Cancel {args.name} and stop its jobs? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Nothing cancelled.")
            return EXIT_OK
    done = cancel(deployment, args.name, now=SURROUNDINGS.now(), who=caller(deployment))
    if args.output == "json":
        print(as_json(done.to_dict()))
        return EXIT_OK
    if done.stopped_execution:
        print(f"Stopped execution {done.execution} (it was RUNNING; it ends ABORTED)")
    else:
        print(f"Execution {done.execution} had already ended {done.was}: nothing to stop there")
    for job in done.stopped_jobs:
        training = f", SageMaker job {job.training_job_name}" if job.training_job_name else ""
        print(f"Terminated training job {job.job_name} ({job.job_id}, was {job.status}{training})")
    for job in done.stopping_jobs:
        print(f"Training job {job.job_name} ({job.job_id}) is being stopped already (by the stack's clean-up)")
    for name in done.stopped_transform_jobs:
        print(f"Stopped transform job {name}")
    for name in done.stopping_transform_jobs:
        print(f"Transform job {name} is being stopped already (by the stack's clean-up)")
    if done.kind == "ScoringJob":
        if not done.stopped_transform_jobs and not done.stopping_transform_jobs:
            print("No transform job was scoring")
    elif not done.stopped_jobs and not done.stopping_jobs:
        print(f"No training job was queued or running ({done.checked_jobs} of the run's jobs checked)")
    return EXIT_OK


# --- helpers ----------------------------------------------------------------------------------


def _clock() -> str:
    return SURROUNDINGS.now().isoformat(timespec="seconds").replace("+00:00", "Z")


def _run_line(run: Run) -> str:
    parts = [f"{run.name} {run.state}"]
    if run.capacity:
        parts.append(f"on {run.capacity}, attempt {run.attempts}")
    if run.progress is not None:
        parts.append(f"{percent(run.progress)} checkpointed")
    return ", ".join(parts)


def run_deployed(command: Callable[[argparse.Namespace, Deployment], int]) -> Callable[[argparse.Namespace], int]:
    """Connect to the stack, run the command, and turn what can go wrong into a message and an exit code."""

    def run(args: argparse.Namespace) -> int:
        prefix = f"spotline {args.command}:"
        if not args.stack:
            print(f"{prefix} usage error: --stack NAME is needed (or set SPOTLINE_STACK)", file=sys.stderr)
            return EXIT_USAGE
        try:
            deployment = connect(args.stack, profile=args.profile, region=args.region)
            return command(args, deployment)
        except OperateError as exc:
            print(f"{prefix} {'usage error: ' if exc.usage else ''}{exc}", file=sys.stderr)
            return EXIT_USAGE if exc.usage else EXIT_INVALID if exc.not_found else EXIT_AWS
        except (ClientError, BotoCoreError) as exc:
            print(f"{prefix} {aws_failure(exc)}", file=sys.stderr)
            return EXIT_AWS

    return run
