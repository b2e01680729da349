"""`spotline from-trainer`: a SageMaker Python SDK ModelTrainer, plus Spotline's own fields, as a
`spotline/v1` manifest, validated as `spotline validate` does."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from spotline_dev.cli.manifest_checks import manifest_problems
from spotline_dev.cli.operate.parser import examples, timestamp
from spotline_dev.cli.sdk.request_to_manifest import SpotlineFields, TrainerNotConvertible, manifest_from_request
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_USAGE

STRATEGIES = ("spot-first", "spot-only", "on-demand")


def add_from_trainer_command(commands: Any) -> None:
    parser = commands.add_parser(
        "from-trainer",
        help="turn a SageMaker SDK ModelTrainer into a manifest",
        description="Load the ModelTrainer a Python file defines (the SageMaker Python SDK 3.x), build the "
        "CreateTrainingJob request the SDK itself would send, offline, and write it as a spotline/v1 "
        "manifest with Spotline's own fields, validated. What a manifest cannot carry (networking and "
        "encryption are the stack's settings, local code, distributed drivers, ...) is refused, naming it.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=examples(
            "spotline from-trainer train_job.py --team search-ranking --name ranker-v2 -o ranker-v2.yaml",
            "spotline from-trainer jobs.py:weekly --team search-ranking --name ranker-v2 "
            '--expected-duration 8h --deadline "2026-12-07T06:00:00Z" --checkpoint-interval 15',
        ),
    )
    parser.add_argument(
        "trainer",
        metavar="FILE[:NAME]",
        help="a Python file defining the ModelTrainer NAME (default: trainer); a list named `inputs` in it "
        "is used as TrainingQueue.submit(inputs=...) would",
    )
    parser.add_argument("--team", required=True, help="metadata.team")
    parser.add_argument("--name", required=True, help="metadata.name")
    parser.add_argument("--owner", help="metadata.owner (an e-mail address)")
    parser.add_argument(
        "--label", action="append", default=[], metavar="KEY=VALUE", help="metadata.labels, besides the trainer's tags"
    )
    parser.add_argument(
        "--strategy", choices=STRATEGIES, help="default: spot-first for a managed spot trainer, else on-demand"
    )
    parser.add_argument("--expected-duration", metavar="DURATION", help="capacity.expectedDuration, e.g. 8h")
    parser.add_argument("--deadline", metavar="TIME", help="capacity.deadline, RFC 3339 with an offset")
    parser.add_argument("--priority", type=int, help="spec.priority (0-9999)")
    parser.add_argument("--depends-on", action="append", default=[], metavar="DATASET", help="spec.dependsOn")
    parser.add_argument("--checkpoint-interval", type=int, metavar="MINUTES", help="checkpoint.intervalMinutes")
    parser.add_argument("--now", type=timestamp, help="judge the deadline as of this RFC 3339 time (default: now)")
    parser.add_argument(
        # No -o: elsewhere (the aws CLI, every other spotline command) --output names a format, not a file.
        "--output-file",
        type=Path,
        metavar="FILE",
        help="write the manifest here (default: stdout)",
    )
    parser.set_defaults(run=cmd_from_trainer)


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
