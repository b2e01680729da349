"""The local stack over HTTP: a client in another process, with AWS_ENDPOINT_URL on the server and
made-up credentials, reaches moto, the Batch/SageMaker stand-in and the stack description through
the same before-send chain an in-process client goes through, and gets AWS's error shapes back."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from spotline_dev.harness.serve.server import LocalOptions, serving

START = datetime(2026, 12, 1, tzinfo=UTC)
CLIENT = r"""
import json, sys
import boto3
from botocore.exceptions import ClientError

out = {}
cf = boto3.client("cloudformation")
stack = cf.describe_stacks(StackName="spotline-local")["Stacks"][0]
outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
out["outputs"] = sorted(outputs)
try:
    cf.describe_stacks(StackName="another-stack")
except ClientError as error:
    out["missingStack"] = error.response["Error"]["Code"]
s3 = boto3.client("s3")
s3.put_object(Bucket=outputs["IngestBucketName"], Key="notes/a.txt", Body=b"hello")
out["object"] = s3.get_object(Bucket=outputs["IngestBucketName"], Key="notes/a.txt")["Body"].read().decode()
out["size"] = s3.head_object(Bucket=outputs["IngestBucketName"], Key="notes/a.txt")["ContentLength"]
queue = outputs["TrainingJobQueueArn"]
out["queue"] = boto3.client("batch").describe_job_queues(jobQueues=[queue])["jobQueues"][0]["jobQueueArn"]
try:
    boto3.client("sagemaker").describe_training_job(TrainingJobName="nothing-like-it")
except ClientError as error:
    out["missingJob"] = error.response["Error"]["Code"]
out["machines"] = [m["name"] for m in boto3.client("stepfunctions").list_state_machines()["stateMachines"]]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with serving(LocalOptions(port=0, speed=0), START) as server:
        host, port = str(server.server_address[0]), int(server.server_address[1])
        yield f"http://{host}:{port}"


def _client_env(endpoint: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "anything",
        "AWS_SECRET_ACCESS_KEY": "anything",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    }


def test_a_boto3_client_in_another_process_reaches_every_part_of_the_stack(endpoint: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLIENT],
        check=False,
        env=_client_env(endpoint),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert {"IngestBucketName", "TrainingLifecycleArn", "TrainingJobQueueArn"} <= set(seen["outputs"])
    assert seen["missingStack"] == "ValidationError"  # CloudFormation's answer, as XML, parsed by botocore
    assert (seen["object"], seen["size"]) == ("hello", 5)  # HEAD keeps the object's Content-Length
    assert seen["queue"].endswith(":job-queue/spotline-local-training")  # the stand-in's Batch
    assert seen["missingJob"] == "ValidationException"  # SageMaker's answer for a job it does not have
    assert seen["machines"] == ["spotline-local-training-lifecycle", "spotline-local-scoring-run"]


def test_the_clock_stands_still_until_a_client_waits(endpoint: str) -> None:
    def clock(method: str = "GET", path: str = "clock") -> dict[str, str]:
        request = urllib.request.Request(f"{endpoint}/_spotline/{path}", method=method)
        with urllib.request.urlopen(request, timeout=60) as answer:
            return dict(json.loads(answer.read()))

    before = datetime.fromisoformat(clock()["now"])
    assert datetime.fromisoformat(clock()["now"]) == before
    after = datetime.fromisoformat(clock("POST", "wait?seconds=600")["now"])
    assert (after - before).total_seconds() == 600


def test_an_unsigned_request_is_refused_with_the_reason(endpoint: str) -> None:
    request = urllib.request.Request(f"{endpoint}/", data=b"Action=DescribeStacks", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 400
    assert "not signed with AWS SigV4" in json.loads(refused.value.read())["message"]
