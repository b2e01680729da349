"""The options, help and examples of the commands that need no deployed stack (validate, render,
from-trainer, sandbox, simulate) and of `spotline explain`: one function per command, named in the command
table (`cli.table`). Nothing here imports boto3, moto or numpy: `spotline --help` stays fast."""

from __future__ import annotations

import argparse
from pathlib import Path

from spotline_dev.cli.operate.parser import STACK_ENV, add_output_option, examples, timestamp

STRATEGIES = ("spot-first", "spot-only", "on-demand")


def validate(parser: argparse.ArgumentParser, name: str) -> None:
    parser.epilog = examples(
        "spotline validate examples/manifests/*.yaml",
        "spotline validate ranker.yaml --team search-ranking --team-policy team-policy.json --output json",
        "spotline validate multi-region.yaml --region us-east-1",
        "generate-manifest | spotline validate -",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="manifests; - reads one from standard input")
    add_output_option(parser)
    parser.add_argument("--team", help="also require metadata.team to be this team (as the S3 folder does)")
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 on warnings too (a deadline out of reach, no room for spot)"
    )
    parser.add_argument("--now", type=timestamp, help="judge deadlines as of this RFC 3339 time (default: now)")
    parser.add_argument(
        "--region",
        help="the stack's region: capacity.regions must include it, as the stack requires (default: $AWS_REGION; "
        "neither: a warning that it is not checked)",
    )
    parser.add_argument(
        "--team-policy",
        metavar="FILE",
        help="also apply this TeamPolicy JSON (the stack's parameter): the team's roles, S3 prefixes, images, "
        "families and limits, as ValidateResources does (maxConcurrentJobs needs the live queue: not checked here)",
    )


def render(parser: argparse.ArgumentParser, name: str) -> None:
    parser.description = (
        "Prints the request SubmitTrainingJob would send to Batch for the manifest, offline and "
        "validated against the Batch and SageMaker API models; by default with its serviceRequestPayload "
        "(the CreateTrainingJob request, a JSON string in the request) shown parsed in a section of its own."
    )
    parser.epilog = examples(
        "spotline render examples/manifests/ranker-v2.yaml",
        "spotline render ranker.yaml --exact > request.json",
        "spotline render ranker.yaml --payload --capacity on-demand --attempt 2",
    )
    parser.add_argument("file", metavar="FILE", help="the manifest; - reads standard input")
    add_output_option(parser)  # json: the request exactly as sent (as --exact)
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--exact",
        action="store_true",
        help="print the request exactly as sent: one JSON document, serviceRequestPayload an escaped JSON string",
    )
    shown.add_argument(
        "--payload", action="store_true", help="print only the SageMaker CreateTrainingJob payload, as JSON"
    )
    parser.add_argument(
        "--capacity",
        choices=["spot", "on-demand"],
        help="the capacity of the attempt (default: on-demand for an on-demand strategy, else spot)",
    )
    parser.add_argument("--attempt", type=int, default=1, help="the attempt number (default 1)")
    parser.add_argument("--execution-arn", help="the execution the request is for (default: a dry-run execution)")
    parser.add_argument("--job-queue", help="the job queue ARN (default: the stack's queue in --account/--region)")
    parser.add_argument("--account", default="123456789012", help="for the default ARNs (default 123456789012)")
    parser.add_argument("--region", default="us-east-1", help="for the default ARNs (default us-east-1)")
    parser.add_argument("--now", type=timestamp, help="judge deadlines as of this RFC 3339 time (default: now)")
    stack = parser.add_argument_group("the stack's training settings (template parameters; default: none)")
    stack.add_argument("--subnets", metavar="IDS", help="TrainingSubnetIds: comma-separated subnet ids")
    stack.add_argument("--security-groups", metavar="IDS", help="TrainingSecurityGroupIds: comma-separated")
    stack.add_argument("--network-isolation", action="store_true", help="EnableNetworkIsolation=true")
    stack.add_argument(
        "--inter-container-encryption", action="store_true", help="EnableInterContainerTrafficEncryption=true"
    )
    stack.add_argument("--volume-kms-key", metavar="KEY", help="TrainingVolumeKmsKeyId")
    stack.add_argument("--output-kms-key", metavar="KEY", help="TrainingOutputKmsKeyId")


def sandbox(parser: argparse.ArgumentParser, name: str) -> None:
    parser.epilog = examples(
        "spotline sandbox                       # the default scenario; exit 3 if an execution did not succeed",
        "spotline sandbox --plot out/plots      # and a picture of each execution",
        "spotline sandbox --scenario examples/scenarios/stopped-by-on-call.yaml --explain",
    )
    parser.add_argument("--scenario", type=Path, help="scenario YAML (default: examples/scenarios/default.yaml)")
    add_output_option(parser)
    parser.add_argument("--verbose", action="store_true", help="show the handlers' logs and metrics")
    parser.add_argument("--explain", action="store_true", help="also print the explain story of each execution")
    parser.add_argument(
        "--plot", type=Path, metavar="DIR", help="draw each execution to DIR/<execution name>.png (see explain --plot)"
    )


def explain(parser: argparse.ArgumentParser, name: str) -> None:
    parser.description = (
        "Reads an execution's history (GetExecutionHistory, DescribeExecution) and tells what "
        "happened: the timeline, the attempts, spot interruptions, the on-demand fallback, the deadline, "
        "the failing state with its error and cause, the next step and the console links."
    )
    parser.epilog = examples(
        "spotline explain search-ranking-ranker-v2-df269d08 --stack spotline",
        "spotline explain arn:aws:states:us-east-1:123456789012:execution:spotline-training-lifecycle:NAME",
        "spotline explain NAME --stack spotline --plot run.png --output json",
    )
    parser.add_argument(
        "execution", metavar="EXECUTION", help="an execution ARN, or a name with --state-machine/--stack"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--state-machine", metavar="ARN", help="the state machine the execution NAME belongs to")
    where.add_argument(
        "--stack", metavar="NAME", help=f"a Spotline stack: its TrainingLifecycleArn output (default: ${STACK_ENV})"
    )
    parser.add_argument("--region", help="region of --stack (default: the AWS configuration's)")
    parser.add_argument("--profile", help="the AWS CLI profile to use (default: the AWS configuration's)")
    add_output_option(parser)
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.png",
        help="also draw the run: capacity over time, checkpointed progress against the deadline and the "
        "policy's switch line, each decision marked",
    )


def simulate(parser: argparse.ArgumentParser, name: str) -> None:
    parser.description = (
        "Runs one training job per trace x job length x deadline slack x start time on real spot "
        "traces (the 2020 spot-availability logs, or the 2022-2023 traces of Wu et al. with --traces) with "
        "Spotline's deadline policy, the baselines (on-demand, spot without fallback, "
        "greedy, uniform progress) and the offline optimum; prints a table per policy and writes runs.csv, "
        "summary.csv and cost_vs_slack.png."
    )
    parser.epilog = examples(
        "spotline simulate",
        "spotline simulate --traces ../shared/data/spot-availability --work-hours 8 --slack 20 50 --no-plot",
        "spotline simulate --traces ../shared/data/spot-traces/availability/1-node --work-error 5 --json",
        "spotline simulate --traces ../shared/data/spot-traces/availability/1-node --regions --json",
    )
    parser.add_argument(
        "--traces",
        type=Path,
        metavar="DIR",
        help="a folder of spot traces, read recursively: the 2020 *.log spot-availability logs and *.json traces "
        "in the format of Wu et al. (NSDI 2024), e.g. ../shared/data/spot-traces/availability/1-node "
        "(default: ../shared/data/spot-availability)",
    )
    parser.add_argument("--out", type=Path, metavar="DIR", help="output directory (default: out/simulate)")
    parser.add_argument(
        "--work-hours",
        type=float,
        nargs="+",
        default=[4, 8, 16],
        metavar="H",
        help="job lengths, hours of work (default: 4 8 16)",
    )
    parser.add_argument(
        "--slack",
        type=float,
        nargs="+",
        default=[10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
        metavar="PCT",
        help="deadline slack, %% of the work (default: 10 to 100 in steps of 10)",
    )
    parser.add_argument(
        "--start-every-hours",
        type=float,
        default=6,
        metavar="H",
        help="a job starts every H hours of a trace (default 6)",
    )
    parser.add_argument(
        "--overhead-minutes",
        type=float,
        default=20,
        metavar="M",
        help="restart overhead: what every start of an instance spends before training (default 20)",
    )
    parser.add_argument(
        "--checkpoint-minutes", type=float, default=15, metavar="M", help="checkpoint interval (default 15)"
    )
    parser.add_argument(
        "--spot-price-ratio", type=float, default=0.3, metavar="R", help="spot price / on-demand price (default 0.3)"
    )
    parser.add_argument(
        "--work-error",
        type=float,
        default=0,
        metavar="PCT",
        help="jobs run this %% longer than their declared expectedDuration (default 0)",
    )
    parser.add_argument("--bill-overhead", action="store_true", help="bill the restart overhead too")
    parser.add_argument(
        "--regions",
        action="store_true",
        help="group the traces' zones into regions (us-west-2b_... -> us-west-2): jobs free to move between "
        "regions against the multi-region optimum, and the same jobs pinned to each region (singleRegion)",
    )
    parser.add_argument(
        "--checkpoint-gib",
        type=float,
        default=10.0,
        metavar="G",
        help="the checkpoint a move between regions copies, GiB (default 10; with --regions)",
    )
    parser.add_argument("--step-seconds", type=int, default=60, metavar="S", help="the replay's time step (default 60)")
    parser.add_argument(
        "--seeds", type=int, default=8, metavar="N", help="runs per job of a randomized policy (ross; default 8)"
    )
    parser.add_argument("--jobs", type=int, metavar="N", help="worker processes (default: CPUs, at most 4)")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")
    add_output_option(parser)  # json: one document on stdout, the header on stderr; the files still written


def from_trainer(parser: argparse.ArgumentParser, name: str) -> None:
    """`spotline from-trainer` (run by `sdk.command.cmd_from_trainer`)."""
    parser.description = (
        "Load the ModelTrainer a Python file defines (the SageMaker Python SDK 3.x), build the "
        "CreateTrainingJob request the SDK itself would send, offline, and write it as a spotline/v1 "
        "manifest with Spotline's own fields, validated. What a manifest cannot carry (networking and "
        "encryption are the stack's settings, local code, distributed drivers, ...) is refused, naming it."
    )
    parser.epilog = examples(  # tests/devtools/cli/sdk/test_sdk_oracle.py runs each from the repository's root
        "spotline from-trainer examples/trainers/ranker_v2.py --team search-ranking --name ranker-v2 "
        "--output-file ranker-v2.yaml",
        "spotline from-trainer examples/trainers/ranker_v2.py:trainer --team search-ranking --name ranker-v2 "
        '--expected-duration 8h --deadline "2027-03-01T06:00:00Z" --checkpoint-interval 15',
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
