"""`spotline`: the command line: local checks (validate, render, simulate), the local system
(sandbox), and a deployed stack (submit, runs, status, logs, cancel, explain)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from spotline.aws import training_settings
from spotline.aws.request_check import TrainingRequestInvalid, submit_service_job_request
from spotline.core.errors import DOCUMENT, ManifestError
from spotline.core.manifest import validate_bytes
from spotline.core.team_policy import TeamPolicy, TeamPolicyInvalid
from spotline.core.training_request import (
    Attempt,
    Capacity,
    TrainingSettings,
    TrainingSettingsInvalid,
    has_instance_storage,
)
from spotline_dev.cli.manifest_checks import manifest_problems, manifest_warnings
from spotline_dev.cli.operate.parser import STACK_ENV, add_operate_commands, add_output_option, examples, timestamp
from spotline_dev.cli.sdk.command import add_from_trainer_command
from spotline_dev.exit_codes import (
    EXIT_AWS,
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_NOT_SUCCEEDED,
    EXIT_OK,
    EXIT_USAGE,
)

EXIT_CODES = f"""exit codes:
  {EXIT_OK}    done (validate: every manifest valid; sandbox, submit --wait: every run succeeded)
  {EXIT_INVALID}    invalid input: a manifest, team policy or file is refused, or the stack or run named does not exist
  {EXIT_USAGE}    usage error: an option is missing or wrong
  {EXIT_NOT_SUCCEEDED}    a run did not succeed (sandbox, submit --wait): failed, stopped or timed out
  {EXIT_AWS}    AWS refused or failed: credentials, access denied, throttling after retries
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)
  {EXIT_BROKEN_PIPE}  the reader of the output went away (`| head`): stopped quietly"""


def _version() -> str:
    try:
        return version("spotline")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _read(path: str) -> bytes | ManifestError:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        return ManifestError(DOCUMENT, f"cannot read file: {exc.strerror or exc}")


def _team_policy(path: str) -> TeamPolicy | str:
    """The TeamPolicy JSON in `path`, or why it cannot be used."""
    data = _read(path)
    if isinstance(data, ManifestError):
        return f"{path}: {data.message}"
    try:
        return TeamPolicy.from_json(data.decode("utf-8", errors="replace"))
    except TeamPolicyInvalid as exc:
        return "\n".join(f"{path}: {error.path}: {error.message}" for error in exc.errors)


def cmd_validate(args: argparse.Namespace) -> int:
    now = args.now or datetime.now(UTC)
    policy = _team_policy(args.team_policy) if args.team_policy else None
    if isinstance(policy, str):
        print(f"spotline validate: the team policy is unusable:\n{policy}", file=sys.stderr)
        return EXIT_USAGE
    reports = []
    for path in args.files:
        data = _read(path)
        if isinstance(data, ManifestError):
            errors, warnings = [data], []
        else:
            spec, errors = manifest_problems(data, now=now, expected_team=args.team, policy=policy)
            warnings = manifest_warnings(spec, now=now) if not errors else []
        reports.append(
            {
                "file": path,
                "valid": not errors,
                "errors": [e.to_dict() for e in errors],
                "warnings": [w.to_dict() for w in warnings],
            }
        )
    if args.output == "json":
        print(json.dumps(reports, indent=2))
    else:
        for report in reports:
            if report["valid"]:
                print(f"{report['file']}: valid")
            for error in report["errors"]:
                print(f"{report['file']}: {error['path']}: {error['message']}")
            for warning in report["warnings"]:
                print(f"{report['file']}: warning: {warning['path']}: {warning['message']}")
    warned = args.strict and any(r["warnings"] for r in reports)
    return EXIT_OK if all(r["valid"] for r in reports) and not warned else EXIT_INVALID


def _stack_settings(args: argparse.Namespace) -> TrainingSettings:
    """The render flags read as SubmitTrainingJob reads the stack parameters from its environment."""
    return training_settings.from_environment(
        {
            training_settings.SUBNET_IDS: args.subnets or "",
            training_settings.SECURITY_GROUP_IDS: args.security_groups or "",
            training_settings.NETWORK_ISOLATION: str(args.network_isolation).lower(),
            training_settings.INTER_CONTAINER_ENCRYPTION: str(args.inter_container_encryption).lower(),
            training_settings.VOLUME_KMS_KEY_ID: args.volume_kms_key or "",
            training_settings.OUTPUT_KMS_KEY_ID: args.output_kms_key or "",
        }
    )


def cmd_render(args: argparse.Namespace) -> int:
    try:
        settings = _stack_settings(args)
    except TrainingSettingsInvalid as exc:
        print(f"spotline render: usage error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    data = _read(args.file)
    if isinstance(data, ManifestError):
        print(f"{args.file}: {data.path}: {data.message}", file=sys.stderr)
        return EXIT_INVALID
    result = validate_bytes(data, now=args.now or datetime.now(UTC))
    if result.spec is None:
        for error in result.errors:
            print(f"{args.file}: {error.path}: {error.message}", file=sys.stderr)
        return EXIT_INVALID
    spec = result.spec
    execution = args.execution_arn or (
        f"arn:aws:states:{args.region}:{args.account}:execution:spotline-TrainingLifecycle:{spec.team}-{spec.name}-dryrun"
    )
    capacity: Capacity = args.capacity or ("on-demand" if spec.strategy == "on-demand" else "spot")
    queue = args.job_queue or f"arn:aws:batch:{args.region}:{args.account}:job-queue/spotline-training"
    try:
        request = submit_service_job_request(spec, Attempt(execution, args.attempt, capacity), queue, settings)
    except TrainingRequestInvalid as exc:
        print(f"{args.file}: {exc}", file=sys.stderr)
        return EXIT_INVALID
    if settings.volume_kms_key_id and has_instance_storage(spec.instance_type):
        print(
            f"note: TrainingVolumeKmsKeyId left out: {spec.instance_type} trains on local NVMe storage, which "
            "the instance encrypts itself (SageMaker refuses a volume key for it)",
            file=sys.stderr,
        )
    if args.payload:
        print(json.dumps(json.loads(request[PAYLOAD]), indent=2))
    elif args.exact or args.output == "json":
        print(json.dumps(request, indent=2))
    else:
        print(readable_request(request))
    return EXIT_OK


PAYLOAD = "serviceRequestPayload"  # the SageMaker CreateTrainingJob request, sent as one JSON string


def readable_request(request: dict[str, object]) -> str:
    """`spotline render`'s default: the SubmitServiceJob request with its payload, which Batch
    takes as one escaped JSON string, shown parsed and indented in a section of its own. Each
    section is JSON; `--exact` prints the request as sent, `--payload` the second section alone."""
    payload = json.loads(str(request[PAYLOAD]))
    shown = {key: f"<{PAYLOAD} below, sent as one JSON string>" if key == PAYLOAD else v for key, v in request.items()}
    return "\n".join(
        [
            "SubmitServiceJob request (dry run; --exact prints it exactly as sent):",
            json.dumps(shown, indent=2),
            "",
            f"{PAYLOAD}, parsed: the SageMaker CreateTrainingJob request (--payload prints it alone):",
            json.dumps(payload, indent=2),
        ]
    )


def cmd_sandbox(args: argparse.Namespace) -> int:
    from spotline_dev.harness.sandbox import replay as sandbox  # noqa: PLC0415 (imports moto: only when asked)

    try:
        return sandbox.main(
            args.scenario, as_json=args.output == "json", verbose=args.verbose, stories=args.explain, plots=args.plot
        )
    except sandbox.ScenarioError as exc:
        print(f"spotline sandbox: {exc}", file=sys.stderr)
        return EXIT_INVALID  # a refused file, as for a manifest


def cmd_explain(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError, NoRegionError  # noqa: PLC0415 (boto3 only when asked)

    from spotline.aws.clients import error_code  # noqa: PLC0415
    from spotline_dev import explain  # noqa: PLC0415
    from spotline_dev.cli.operate.deployment import OperateError, aws_failure, use_session  # noqa: PLC0415

    target, via_machine, via_stack = args.execution, args.state_machine, args.stack
    if not (target.startswith("arn:") or via_machine or via_stack):
        via_stack = os.environ.get(STACK_ENV) or None  # as every stack command: --stack defaults to it
    usage = "spotline explain: usage error:"
    if target.startswith("arn:"):
        if via_machine or via_stack:
            print(
                f"{usage} give an execution ARN alone, or an execution name with --state-machine or --stack",
                file=sys.stderr,
            )
            return EXIT_USAGE
    elif not (via_machine or via_stack):
        print(
            f"{usage} {target!r} is an execution name: add --state-machine ARN or --stack NAME, set "
            f"${STACK_ENV} (or give the execution ARN)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        use_session(profile=args.profile, region=None)
        if target.startswith("arn:"):
            arn = target
        elif via_stack:
            arn = explain.execution_arn_in_stack(target, via_stack, args.region)
        else:
            arn = explain.execution_arn_for(target, via_machine)
        explain.region_of(arn)
    except (ValueError, OperateError) as exc:
        print(f"{usage} {exc}", file=sys.stderr)
        return EXIT_USAGE
    except NoRegionError:
        print(f"{usage} no AWS region for --stack: add --region or set AWS_REGION", file=sys.stderr)
        return EXIT_USAGE
    except explain.ExplainError as exc:
        print(f"spotline explain: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except (ClientError, BotoCoreError) as exc:
        print(f"spotline explain: {aws_failure(exc)}", file=sys.stderr)
        return EXIT_INVALID if error_code(exc) == "ValidationError" else EXIT_AWS
    try:
        history, described = explain.fetch(arn)
    except (ClientError, BotoCoreError) as exc:
        print(f"spotline explain: cannot read {arn}: {aws_failure(exc)}", file=sys.stderr)
        return EXIT_INVALID if error_code(exc) == "ExecutionDoesNotExist" else EXIT_AWS
    story = explain.explain(history, described)
    print(json.dumps(story.to_dict(), indent=2) if args.output == "json" else explain.render_text(story))
    if args.plot:
        from spotline_dev.explain.plot import plot_run  # noqa: PLC0415 (matplotlib only when asked)

        try:  # a long run continues in fresh executions: the picture is of the whole run
            whole = explain.fetch_run(arn)
        except (ClientError, BotoCoreError) as exc:
            print(f"spotline explain: cannot read the rest of the run for --plot: {aws_failure(exc)}", file=sys.stderr)
            return EXIT_AWS
        print(f"Plot: {plot_run(whole, args.plot)}", file=sys.stderr)
    return EXIT_OK


def cmd_simulate(args: argparse.Namespace) -> int:
    from spotline_dev.research import simulate  # noqa: PLC0415 (numpy and matplotlib: only when asked)

    return simulate.main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spotline",
        description="Spotline: deadline-aware ML training on spot capacity. `spotline COMMAND --help` "
        "shows each command's options and examples.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"spotline {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser(
        "validate",
        help="check manifests against the spotline/v1 contract",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=examples(
            "spotline validate examples/manifests/*.yaml",
            "spotline validate ranker.yaml --team search-ranking --team-policy team-policy.json --output json",
            "generate-manifest | spotline validate -",
        ),
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="manifests; - reads one from standard input")
    add_output_option(validate)
    validate.add_argument("--team", help="also require metadata.team to be this team (as the S3 folder does)")
    validate.add_argument(
        "--strict", action="store_true", help="exit 1 on warnings too (a deadline out of reach, no room for spot)"
    )
    validate.add_argument("--now", type=timestamp, help="judge deadlines as of this RFC 3339 time (default: now)")
    validate.add_argument(
        "--team-policy",
        metavar="FILE",
        help="also apply this TeamPolicy JSON (the stack's parameter): the team's roles, S3 prefixes, images, "
        "families and limits, as ValidateResources does (maxConcurrentJobs needs the live queue: not checked here)",
    )
    validate.set_defaults(run=cmd_validate)

    render = commands.add_parser(
        "render",
        help="print the Batch SubmitServiceJob request for a manifest (dry run)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=examples(
            "spotline render examples/manifests/ranker-v2.yaml",
            "spotline render ranker.yaml --exact > request.json",
            "spotline render ranker.yaml --payload --capacity on-demand --attempt 2",
        ),
        description="Prints the request SubmitTrainingJob would send to Batch for the manifest, offline and "
        "validated against the Batch and SageMaker API models; by default with its serviceRequestPayload "
        "(the CreateTrainingJob request, a JSON string in the request) shown parsed in a section of its own.",
    )
    render.add_argument("file", metavar="FILE", help="the manifest; - reads standard input")
    add_output_option(render)  # json: the request exactly as sent (as --exact)
    shown = render.add_mutually_exclusive_group()
    shown.add_argument(
        "--exact",
        action="store_true",
        help="print the request exactly as sent: one JSON document, serviceRequestPayload an escaped JSON string",
    )
    shown.add_argument(
        "--payload", action="store_true", help="print only the SageMaker CreateTrainingJob payload, as JSON"
    )
    render.add_argument(
        "--capacity",
        choices=["spot", "on-demand"],
        help="the capacity of the attempt (default: on-demand for an on-demand strategy, else spot)",
    )
    render.add_argument("--attempt", type=int, default=1, help="the attempt number (default 1)")
    render.add_argument("--execution-arn", help="the execution the request is for (default: a dry-run execution)")
    render.add_argument("--job-queue", help="the job queue ARN (default: the stack's queue in --account/--region)")
    render.add_argument("--account", default="123456789012", help="for the default ARNs (default 123456789012)")
    render.add_argument("--region", default="us-east-1", help="for the default ARNs (default us-east-1)")
    render.add_argument("--now", type=timestamp, help="judge deadlines as of this RFC 3339 time (default: now)")
    stack = render.add_argument_group("the stack's training settings (template parameters; default: none)")
    stack.add_argument("--subnets", metavar="IDS", help="TrainingSubnetIds: comma-separated subnet ids")
    stack.add_argument("--security-groups", metavar="IDS", help="TrainingSecurityGroupIds: comma-separated")
    stack.add_argument("--network-isolation", action="store_true", help="EnableNetworkIsolation=true")
    stack.add_argument(
        "--inter-container-encryption", action="store_true", help="EnableInterContainerTrafficEncryption=true"
    )
    stack.add_argument("--volume-kms-key", metavar="KEY", help="TrainingVolumeKmsKeyId")
    stack.add_argument("--output-kms-key", metavar="KEY", help="TrainingOutputKmsKeyId")
    render.set_defaults(run=cmd_render)

    add_from_trainer_command(commands)

    sandbox = commands.add_parser(
        "sandbox",
        help="run the whole system locally on a virtual clock (no AWS account)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=examples(
            "spotline sandbox                       # the default scenario; exit 3 if an execution did not succeed",
            "spotline sandbox --plot out/plots      # and a picture of each execution",
            "spotline sandbox --scenario examples/scenarios/stopped-by-on-call.yaml --explain",
        ),
    )
    sandbox.add_argument("--scenario", type=Path, help="scenario YAML (default: examples/scenarios/default.yaml)")
    add_output_option(sandbox)
    sandbox.add_argument("--verbose", action="store_true", help="show the handlers' logs and metrics")
    sandbox.add_argument("--explain", action="store_true", help="also print the explain story of each execution")
    sandbox.add_argument(
        "--plot", type=Path, metavar="DIR", help="draw each execution to DIR/<execution name>.png (see explain --plot)"
    )
    sandbox.set_defaults(run=cmd_sandbox)

    explain = commands.add_parser(
        "explain",
        help="tell the story of one execution: what happened, why, what to do next",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=examples(
            "spotline explain search-ranking-ranker-v2-df269d08 --stack spotline",
            "spotline explain arn:aws:states:us-east-1:123456789012:execution:spotline-training-lifecycle:NAME",
            "spotline explain NAME --stack spotline --plot run.png --output json",
        ),
        description="Reads an execution's history (GetExecutionHistory, DescribeExecution) and tells what "
        "happened: the timeline, the attempts, spot interruptions, the on-demand fallback, the deadline, "
        "the failing state with its error and cause, the next step and the console links.",
    )
    explain.add_argument(
        "execution", metavar="EXECUTION", help="an execution ARN, or a name with --state-machine/--stack"
    )
    where = explain.add_mutually_exclusive_group()
    where.add_argument("--state-machine", metavar="ARN", help="the state machine the execution NAME belongs to")
    where.add_argument(
        "--stack", metavar="NAME", help=f"a Spotline stack: its TrainingLifecycleArn output (default: ${STACK_ENV})"
    )
    explain.add_argument("--region", help="region of --stack (default: the AWS configuration's)")
    explain.add_argument("--profile", help="the AWS CLI profile to use (default: the AWS configuration's)")
    add_output_option(explain)
    explain.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.png",
        help="also draw the run: capacity over time, checkpointed progress against the deadline and the "
        "policy's switch line, each decision marked",
    )
    explain.set_defaults(run=cmd_explain)

    simulate = commands.add_parser(
        "simulate",
        help="replay the deadline policy, baselines and the offline optimum on real spot traces",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=examples(
            "spotline simulate",
            "spotline simulate --traces ../shared/data/spot-availability --work-hours 8 --slack 20 50 --no-plot",
            "spotline simulate --traces ../shared/data/spot-traces/availability/1-node --work-error 5 --json",
            "spotline simulate --traces ../shared/data/spot-traces/availability/1-node --regions --json",
        ),
        description="Runs one training job per trace x job length x deadline slack x start time on real spot "
        "traces (the 2020 spot-availability logs, or the 2022-2023 traces of Wu et al. with --traces) with "
        "Spotline's deadline policy, the baselines (on-demand, spot without fallback, "
        "greedy, uniform progress) and the offline optimum; prints a table per policy and writes runs.csv, "
        "summary.csv and cost_vs_slack.png.",
    )
    simulate.add_argument(
        "--traces",
        type=Path,
        metavar="DIR",
        help="a folder of spot traces, read recursively: the 2020 *.log spot-availability logs and *.json traces "
        "in the format of Wu et al. (NSDI 2024), e.g. ../shared/data/spot-traces/availability/1-node "
        "(default: ../shared/data/spot-availability)",
    )
    simulate.add_argument("--out", type=Path, metavar="DIR", help="output directory (default: out/simulate)")
    simulate.add_argument(
        "--work-hours",
        type=float,
        nargs="+",
        default=[4, 8, 16],
        metavar="H",
        help="job lengths, hours of work (default: 4 8 16)",
    )
    simulate.add_argument(
        "--slack",
        type=float,
        nargs="+",
        default=[10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
        metavar="PCT",
        help="deadline slack, %% of the work (default: 10 to 100 in steps of 10)",
    )
    simulate.add_argument(
        "--start-every-hours",
        type=float,
        default=6,
        metavar="H",
        help="a job starts every H hours of a trace (default 6)",
    )
    simulate.add_argument(
        "--overhead-minutes",
        type=float,
        default=20,
        metavar="M",
        help="restart overhead: what every start of an instance spends before training (default 20)",
    )
    simulate.add_argument(
        "--checkpoint-minutes", type=float, default=15, metavar="M", help="checkpoint interval (default 15)"
    )
    simulate.add_argument(
        "--spot-price-ratio", type=float, default=0.3, metavar="R", help="spot price / on-demand price (default 0.3)"
    )
    simulate.add_argument(
        "--work-error",
        type=float,
        default=0,
        metavar="PCT",
        help="jobs run this %% longer than their declared expectedDuration (default 0)",
    )
    simulate.add_argument("--bill-overhead", action="store_true", help="bill the restart overhead too")
    simulate.add_argument(
        "--regions",
        action="store_true",
        help="group the traces' zones into regions (us-west-2b_... -> us-west-2): jobs free to move between "
        "regions against the multi-region optimum, and the same jobs pinned to each region (singleRegion)",
    )
    simulate.add_argument(
        "--checkpoint-gib",
        type=float,
        default=10.0,
        metavar="G",
        help="the checkpoint a move between regions copies, GiB (default 10; with --regions)",
    )
    simulate.add_argument(
        "--step-seconds", type=int, default=60, metavar="S", help="the replay's time step (default 60)"
    )
    simulate.add_argument("--jobs", type=int, metavar="N", help="worker processes (default: CPUs, at most 4)")
    simulate.add_argument("--no-plot", action="store_true", help="skip the PNG")
    add_output_option(simulate)  # json: one document on stdout, the header on stderr; the files still written
    simulate.set_defaults(run=cmd_simulate)
    add_operate_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line. When the reader of stdout goes away (`spotline ... | head`) the command
    stops quietly, as the Python documentation's "Note on SIGPIPE" does it: stdout is pointed at
    devnull, so that the interpreter's last flush at exit does not fail again."""
    try:
        code = _run(argv)
        sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at exit
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help and --version
        return int(exc.code or 0)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print(f"spotline {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
