"""A deployed Spotline stack as the commands see it: its CloudFormation outputs (the ingest
bucket, the state machines, the job queue, the team registry and its writer), found with the
caller's own AWS session.

The layer's AWS adapters (`spotline.aws`) take their clients from boto3's default session, so
`--profile` and `--region` are applied to it: the CLI and what it reuses from the layer (the
clean-up of a run's jobs) then act with the same credentials, in the same region.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError, ProfileNotFound

from spotline.aws.common import clients
from spotline.aws.common.clients import error_code, reset_clients
from spotline.core.training.service_jobs import execution_arn

OUTPUTS = {
    "bucket": "IngestBucketName",
    "state_machine_arn": "TrainingLifecycleArn",
    "job_queue_arn": "TrainingJobQueueArn",
    "registry_bucket": "TeamRegistryBucketName",
    "apply_function": "ApplyTeamChangeFunctionName",
}
LOCAL_PROBE_TIMEOUT_SECONDS = 2.0  # is the endpoint a `spotline local` server? A local one answers at once
LOCAL_WAIT_TIMEOUT_SECONDS = 600.0  # a wait on a local server's clock: the longest a command pauses, and more
OPTIONAL_OUTPUTS = {"scoring_machine_arn": "ScoringRunArn"}  # a stack deployed before scoring runs has none


class OperateError(Exception):
    """A command cannot do what it was asked; the message says why and what to check.
    `usage` marks the caller's mistake (exit 2), `not_found` a stack or run that does not
    exist (exit 1); anything else is AWS's answer (exit 4)."""

    def __init__(self, message: str, *, usage: bool = False, not_found: bool = False) -> None:
        super().__init__(message)
        self.usage, self.not_found = usage, not_found


@dataclass
class Surroundings:
    """How the commands wait and what time they think it is (one instance, SURROUNDINGS): the
    tests against the local stack set its virtual clock and let it deliver events while they wait."""

    pause: Callable[[float], None] = time.sleep
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))


SURROUNDINGS = Surroundings()


class LocalServerClock:
    """The surroundings of a command against `spotline local` (AWS_ENDPOINT_URL points at it): its
    time is the server's virtual time, and a wait asks the server to let that much of it pass."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _call(self, method: str, path: str, timeout: float = LOCAL_WAIT_TIMEOUT_SECONDS) -> dict[str, Any]:
        request = urllib.request.Request(f"{self.url}/_spotline/{path}", method=method)
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            data = json.loads(answer.read())
        if not isinstance(data, dict):
            raise ValueError(f"{self.url}/_spotline/{path} answered {type(data).__name__}, not an object")
        return data

    def now(self) -> datetime:
        return datetime.fromisoformat(str(self._call("GET", "clock")["now"]))

    def pause(self, seconds: float) -> None:
        self._call("POST", f"wait?seconds={seconds:g}")


def local_server_at(endpoint: str | None) -> LocalServerClock | None:
    """The `spotline local` server `endpoint` is, if it is one (it answers GET /_spotline/clock)."""
    if not endpoint or not endpoint.startswith(("http://127.", "http://localhost", "http://[::1]")):
        return None
    server = LocalServerClock(endpoint.rstrip("/"))
    try:
        clock = server._call("GET", "clock", timeout=LOCAL_PROBE_TIMEOUT_SECONDS)
    except (OSError, ValueError):
        return None
    return server if clock.get("server") == "spotline-local" else None


def use_local_server() -> None:
    """With AWS_ENDPOINT_URL on a `spotline local` server, read time and wait on its clock."""
    server = local_server_at(os.environ.get("AWS_ENDPOINT_URL"))
    if server is not None:
        SURROUNDINGS.now, SURROUNDINGS.pause = server.now, server.pause


@dataclass(frozen=True)
class Deployment:
    stack: str
    region: str
    bucket: str
    state_machine_arn: str
    job_queue_arn: str
    registry_bucket: str
    apply_function: str
    training_capacity: str = ""  # the TrainingCapacity parameter: what quotas are checked against
    peer_regions: tuple[str, ...] = ()  # the PeerRegions parameter: where a run's attempts may also run
    scoring_machine_arn: str = ""  # the ScoringRun state machine ("" for a stack without one)

    @property
    def state_machines(self) -> tuple[str, ...]:
        """The stack's state machines whose executions are runs: training first, then scoring."""
        return tuple(arn for arn in (self.state_machine_arn, self.scoring_machine_arn) if arn)

    def execution_arn(self, name: str, machine: str | None = None) -> str:
        return execution_arn(machine or self.state_machine_arn, name)

    def client(self, service: str) -> Any:
        """The layer's client for the service (one per process, botocore's standard retries)."""
        return clients.client(service, self.region)


def use_session(*, profile: str | None, region: str | None) -> None:
    """Apply `--profile` and `--region` to boto3's default session (nothing when neither is given).
    With no region anywhere else, AWS_REGION counts, as for the aws CLI (botocore reads only
    AWS_DEFAULT_REGION)."""
    try:
        if profile:
            boto3.setup_default_session(profile_name=profile, region_name=region)
        region = region or (None if boto3._get_default_session().region_name else os.environ.get("AWS_REGION"))
        if region:
            boto3._get_default_session()._session.set_config_variable("region", region)
    except ProfileNotFound as exc:
        raise OperateError(f"{exc} (see `aws configure list-profiles`)", usage=True) from None
    reset_clients()


def connect(stack: str, *, profile: str | None = None, region: str | None = None) -> Deployment:
    """The stack's outputs and parameters, read with DescribeStacks."""
    use_session(profile=profile, region=region)
    use_local_server()
    session = boto3._get_default_session()
    if not session.region_name:
        raise OperateError("no AWS region: add --region or set AWS_REGION (or a region in the profile)", usage=True)
    try:
        described = session.client("cloudformation").describe_stacks(StackName=stack)["Stacks"]
    except ClientError as exc:
        if error_code(exc) == "ValidationError":
            raise OperateError(f"there is no stack {stack} in {session.region_name}", not_found=True) from None
        raise OperateError(aws_failure(exc)) from None
    except (BotoCoreError, NoRegionError) as exc:
        raise OperateError(aws_failure(exc)) from None
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described[0].get("Outputs", [])}
    missing = [key for key in OUTPUTS.values() if key not in outputs]
    if missing:
        raise OperateError(f"stack {stack} has no {', '.join(missing)} output (is it a Spotline stack?)")
    parameters = {p["ParameterKey"]: p.get("ParameterValue") for p in described[0].get("Parameters", [])}
    return Deployment(
        stack=stack,
        region=str(session.region_name),
        peer_regions=tuple(r for r in str(parameters.get("PeerRegions") or "").split(",") if r),
        training_capacity=str(parameters.get("TrainingCapacity") or ""),
        **{attribute: str(outputs[key]) for attribute, key in OUTPUTS.items()},
        **{attribute: str(outputs[key]) for attribute, key in OPTIONAL_OUTPUTS.items() if key in outputs},
    )


def aws_failure(exc: Exception) -> str:
    """An AWS error in a sentence, with the one thing to check."""
    if isinstance(exc, NoCredentialsError):
        return "no AWS credentials: set a profile (--profile) or the AWS_* variables"
    code = error_code(exc)
    if code in ("AccessDenied", "AccessDeniedException", "UnauthorizedOperation"):
        return f"access denied: {exc} (docs/platform/operating.md lists the permissions each command needs)"
    if code in ("ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId"):
        return f"the AWS credentials were refused: {exc}"
    return str(exc)
