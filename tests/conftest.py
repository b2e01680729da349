"""Shared fixtures: the local stack (moto + the Batch/SageMaker stand-in + real handlers + the
real state machine) on a virtual clock, with the team's account prepared for the example."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from spotline_dev.harness.local.template import powertools_environment

for _name, _value in powertools_environment().items():  # before anything imports spotline.aws.common.observability
    os.environ.setdefault(_name, _value)

from builders import EXAMPLE_KEY, EXAMPLE_MANIFEST, ROOT, spec_of  # noqa: E402
from kinds import KINDS, kind_of  # noqa: E402
from spotline.core.spec.model import JobSpec  # noqa: E402
from spotline.core.teams.team_ownership import shared_with_each_other  # noqa: E402
from spotline_dev.harness.local.handles import LocalStack  # noqa: E402
from spotline_dev.harness.local.stack import start_local_stack  # noqa: E402
from spotline_dev.harness.sandbox.account import ensure_role, prepare_account, team_allowance  # noqa: E402
from spotline_dev.harness.standin import TrainingBehaviour  # noqa: E402
from spotline_dev.harness.standin.sagemaker.transform_jobs import TransformWeather  # noqa: E402

pytest_plugins = ["permission_coverage"]  # every function's calls checked against its role, suite-wide

NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks each test with its kind (tests/kinds.py), unless it says its own: `pytest -m unit`
    is the fast loop (`make unit-fast`), `-m "not scenario"` leaves out the sandbox replays."""
    for item in items:
        if any(item.get_closest_marker(kind) for kind in KINDS) or not isinstance(item, pytest.Function):
            continue
        fixtures = [definitions[-1].func for definitions in item._fixtureinfo.name2fixturedefs.values() if definitions]
        item.add_marker(kind_of(item.path, [item.obj, *fixtures]))


def example_spec() -> JobSpec:
    return spec_of(EXAMPLE_MANIFEST.read_bytes(), NOW)


def team_policy_for(*specs: JobSpec) -> str:
    """Each spec's team allowed what it names; teams naming the same resource share it (ownership)."""
    return json.dumps({"teams": shared_with_each_other({spec.team: team_allowance(spec) for spec in specs})})


@pytest.fixture
def stack() -> Iterator[LocalStack]:
    """The stack with the example's team allowed and its account prepared."""
    spec = example_spec()
    with start_local_stack(NOW, team_policy=team_policy_for(spec)) as local:
        prepare_account(local.client, spec)
        yield local


@pytest.fixture
def example_manifest() -> bytes:
    return EXAMPLE_MANIFEST.read_bytes()


@pytest.fixture
def long_training() -> Iterator[LocalStack]:
    """The example's stack with an 8-hour training: still running when an execution is stopped or fails."""
    spec = example_spec()
    with start_local_stack(
        NOW,
        team_policy=team_policy_for(spec),
        behaviour=lambda _request: TrainingBehaviour(duration=8 * 3600),
    ) as local:
        prepare_account(local.client, spec)
        yield local


SCORING_OPENS = datetime(2026, 12, 5, 0, tzinfo=UTC)  # the example scoring window's: 01:00 in Berlin
SCORING_NIGHT, SCORING_OBJECTS = 40_000_000, 400
SCORING_TEAM = {
    "instanceFamilies": ["c5"],
    "maxInstances": 12,
    "roles": ["arn:aws:iam::123456789012:role/spotline/media-*"],
    "s3Prefixes": ["s3://media-recs-data/", "s3://media-recs-scores/"],
    "images": ["123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:*"],
}


@pytest.fixture
def scoring_stack() -> Iterator[LocalStack]:
    """A stack five minutes before the example scoring window opens: the night's 40 M records in
    400 objects, the team's model, and Batch Transform at 1,500 records/s per instance."""
    with scoring_stack_of(SCORING_OBJECTS) as local:
        yield local


@contextmanager
def scoring_stack_of(objects: int) -> Iterator[LocalStack]:
    """`scoring_stack` with the night's records in `objects` objects."""
    with start_local_stack(
        SCORING_OPENS - timedelta(minutes=5), team_policy={"teams": {"media-recs": SCORING_TEAM}}
    ) as local:
        local.standin.transforms.weather = TransformWeather(records_per_second=1500, start_delay=480)
        s3 = local.client("s3")
        for bucket in ("media-recs-data", "media-recs-scores"):
            s3.create_bucket(Bucket=bucket)
        for index in range(objects):
            key = f"pairs/2026-12-05/part-{index:04d}.csv"
            s3.put_object(Bucket="media-recs-data", Key=key, Body=b"0123456789\n" * 100)
            local.standin.transform_records[("media-recs-data", key)] = SCORING_NIGHT // objects
        ensure_role(local.client("iam"), "arn:aws:iam::123456789012:role/spotline/media-scoring", "media-recs")
        local.client("sagemaker").create_model(
            ModelName="media-recs-ranker-2026-11",
            ExecutionRoleArn="arn:aws:iam::123456789012:role/spotline/media-scoring",
            PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:2026.11"},
            Tags=[{"Key": "spotline:team", "Value": "media-recs"}],  # the team's model, as its roles are
        )
        yield local


def sample_event(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "events" / name).read_text())  # type: ignore[no-any-return]


def subscribe_to_alerts(stack: LocalStack, name: str = "alert-inbox") -> str:
    """A queue subscribed to the alert topic (what on-call receives); returns its URL."""
    sqs, sns = stack.client("sqs"), stack.client("sns")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=stack.physical["AlertTopic"], Protocol="sqs", Endpoint=arn)
    return url  # type: ignore[no-any-return]


def received_alerts(stack: LocalStack, url: str) -> list[dict[str, Any]]:
    """Every alert the inbox holds, drained."""
    found, sqs = [], stack.client("sqs")
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            found.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found


def upload(stack: LocalStack, key: str, body: bytes) -> str:
    """Put a manifest into the ingest bucket; returns its version id."""
    return stack.client("s3").put_object(Bucket=stack.bucket, Key=key, Body=body)["VersionId"]  # type: ignore[no-any-return]


def run_upload(stack: LocalStack, body: bytes, key: str = EXAMPLE_KEY) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Upload, deliver the S3 event to Intake, and run the execution to its end."""
    upload(stack, key, body)
    (started,) = stack.deliver_events()
    execution = stack.wait_for_execution(started["executionArn"])
    return execution, stack.history(started["executionArn"])


def deny_next(operation: str, code: str = "AccessDenied") -> None:
    """S3 answers the next call of `operation` (e.g. "s3.GetObject") with 403 `code`, as a bucket
    policy or an object's KMS key would; moto never does (it enforces no IAM here)."""
    remaining = {"n": 1}

    def deny(**_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if remaining["n"] <= 0:
            return None
        remaining["n"] -= 1
        error = {"Code": code, "Message": "Access Denied" if code == "AccessDenied" else "Forbidden"}
        return AWSResponse("https://s3.amazonaws.com", 403, {}, None), {  # type: ignore[arg-type]
            "Error": error,
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }

    boto3.DEFAULT_SESSION.events.register(f"before-call.{operation}", deny)  # type: ignore[union-attr]


def entered_states(history: list[dict[str, Any]]) -> list[str]:
    return [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]


def emitted_metrics(captured_stdout: str) -> list[dict[str, Any]]:
    """The EMF documents Powertools printed."""
    return [json.loads(line) for line in captured_stdout.splitlines() if line.startswith('{"_aws"')]
