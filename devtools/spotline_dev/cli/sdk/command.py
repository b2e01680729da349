"""`spotline from-trainer`: a SageMaker Python SDK ModelTrainer, plus Spotline's own fields, as a
`spotline/v1` manifest, validated as `spotline validate` does."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

import yaml

from spotline_dev.cli.manifest_checks import manifest_problems
from spotline_dev.cli.sdk.request_to_manifest import SpotlineFields, TrainerNotConvertible, manifest_from_request
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_USAGE


def cmd_from_trainer(args: argparse.Namespace) -> int:
    from spotline_dev.cli.sdk import trainer as sdk  # noqa: PLC0415 (imports the SageMaker SDK: only when asked)

    if bad := [label for label in args.label if "=" not in label]:
        print(f"spotline from-trainer: usage error: --label {bad[0]}: write KEY=VALUE", file=sys.stderr)
        return EXIT_USAGE
    labels = dict(label.partition("=")[::2] for label in args.label)
    fields = SpotlineFields(
        team=args.team,
        name=args.name,
        strategy=args.strategy,
        owner=args.owner,
        deadline=args.deadline,
        expected_duration=args.expected_duration,
        priority=args.priority,
        depends_on=tuple(args.depends_on),
        checkpoint_interval_minutes=args.checkpoint_interval,
        labels=labels,
    )
    problems: list[str] = []
    manifest: dict[str, Any] | None = None
    try:
        with sdk.offline_sdk():
            trainer, inputs = sdk.load_trainer(args.trainer)
            request, problems = sdk.training_job_request(trainer, inputs)
        manifest = manifest_from_request(request, fields)
    except sdk.TrainerFileError as exc:
        print(f"spotline from-trainer: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except TrainerNotConvertible as exc:
        problems = problems + exc.problems
    if problems or manifest is None:
        print(f"spotline from-trainer: {args.trainer} has what a manifest cannot carry:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    text = manifest_yaml(manifest, source=args.trainer)
    errors = manifest_problems(text.encode(), now=args.now or datetime.now(UTC), expected_team=None, policy=None)[1]
    if errors:
        print(f"spotline from-trainer: the manifest for {args.trainer} is not valid:", file=sys.stderr)
        for error in errors:
            print(f"  {error.path}: {error.message}", file=sys.stderr)
        return EXIT_INVALID
    if args.output_file:
        args.output_file.write_text(text)
        print(f"wrote {args.output_file}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def manifest_yaml(manifest: dict[str, Any], source: str) -> str:
    header = f"# From the SageMaker ModelTrainer in {source} (spotline from-trainer).\n"
    return header + yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True, width=120)
