"""What `spotline validate`, `render`, `sandbox`, `explain` and `simulate` do: imported only when
one of them runs (the command table, `cli.table`, names each function), so that `spotline --help`
imports neither boto3 nor the layer's adapters."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from spotline.aws.training import training_settings
from spotline.aws.training.request_check import TrainingRequestInvalid, submit_service_job_request
from spotline.core.common.errors import DOCUMENT, ManifestError
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.teams.team_policy import TeamPolicy, TeamPolicyInvalid
from spotline.core.training.training_request import (
    Attempt,
    Capacity,
    TrainingSettings,
    TrainingSettingsInvalid,
    has_instance_storage,
)
from spotline_dev.cli.manifest_checks import manifest_problems, manifest_warnings
from spotline_dev.cli.operate.parser import STACK_ENV
from spotline_dev.exit_codes import EXIT_AWS, EXIT_INVALID, EXIT_OK, EXIT_USAGE


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
    home = args.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None  # if told
    reports = []
    for path in args.files:
        data = _read(path)
        if isinstance(data, ManifestError):
            errors, warnings = [data], []
        else:
            spec, errors = manifest_problems(data, now=now, expected_team=args.team, policy=policy, home_region=home)
            warnings = manifest_warnings(spec, now=now, home_region=home) if not errors else []
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

    from spotline.aws.common.clients import error_code  # noqa: PLC0415
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
