"""What a test, the sandbox or a local command holds of a running local stack (`LocalStack`, made
by `stack.start_local_stack`): its clients, clock, stand-in, resources by logical id, and what
happened in it (invocations, executions, delivery errors)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

import boto3
from moto.iam.models import iam_backends
from moto.sagemaker import models as moto_sagemaker_models
from moto.sqs.models import sqs_backends

from spotline.aws.common.clients import reset_clients
from spotline_dev.harness.local.dataset_bus import put_dataset_event
from spotline_dev.harness.local.executions import ExecutionRecord, Executions, history_of
from spotline_dev.harness.local.faults import CallThrottles, Fault, Faults
from spotline_dev.harness.local.permissions.checker import PermissionCheck
from spotline_dev.harness.local.virtual_time import VirtualClock
from spotline_dev.harness.standin import BatchSageMakerStandIn, TrainingBehaviour
from spotline_dev.harness.standin.file_systems import FileSystemsStandIn
from spotline_dev.harness.standin.price_list import PriceListStandIn

REGION = "us-east-1"
ACCOUNT = "123456789012"
STACK = "spotline-local"
Handler = Callable[[Any, Any], Any]
Behaviour = Callable[[dict[str, Any]], TrainingBehaviour]


class RuntimeKilled(Exception):
    """The local stand-in for a Lambda runtime that dies mid-invocation."""


@dataclass
class Invocation:
    function: str
    event: Any
    result: Any = None
    error: str | None = None
    at: datetime | None = None  # virtual time of the invocation


@dataclass
class LocalStack:
    """Handles to what `start_local_stack` created, by logical id."""

    template: dict[str, Any]
    clock: VirtualClock
    physical: dict[str, str]
    standin: BatchSageMakerStandIn
    session: boto3.Session  # every client of the stack (the handlers' too) comes from it
    functions: dict[str, str] = field(default_factory=dict)  # logical id -> function name
    rule_taps: dict[str, tuple[str, str]] = field(default_factory=dict)  # queue url -> (function, rule)
    rule_sources: dict[str, tuple[str, ...]] = field(default_factory=dict)  # rule -> its pattern's sources
    delivery_errors: list[str] = field(default_factory=list)  # service events whose delivery failed
    invocations: list[Invocation] = field(default_factory=list)
    throttles: dict[str, int] = field(default_factory=dict)  # function name -> invocations to refuse
    faults: Faults | None = None  # set by start_local_stack
    executions: Executions | None = None  # set by start_local_stack
    outputs: dict[str, tuple[str, str]] = field(default_factory=dict)  # the template's: key -> (value, description)
    queue_capacities: dict[str, dict[str, int] | None] = field(default_factory=dict)  # queue -> limits per type
    queue_settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # queue -> its register_queue arguments
    peers: dict[str, BatchSageMakerStandIn] = field(default_factory=dict)  # peer region -> its Batch and SageMaker
    file_systems: FileSystemsStandIn | None = None  # FSx for Lustre and EFS as the sandbox registers them
    network: dict[str, Any] = field(default_factory=dict)  # with `network=True`: vpc, subnets (zone -> id), group
    peer_networks: dict[str, dict[str, Any]] = field(default_factory=dict)  # peer region -> its stack's network
    account: str = ACCOUNT  # the account and region the stack plays (the sandbox: the manifests')
    region: str = REGION
    attributes: dict[tuple[str, str | None], str] = field(default_factory=dict)  # (logical id, attribute) -> value
    permissions: PermissionCheck | None = None  # every call of a function, checked against its role
    price_list: PriceListStandIn | None = None  # AWS's Price List API (GetProducts), set by start_local_stack
    _clients: dict[str, Any] = field(default_factory=dict, repr=False)
    _call_throttles: CallThrottles | None = field(default=None, repr=False)

    def kill_after_call(self, operation: str, times: int = 1, *, skip: int = 0) -> None:
        """Kill the Lambda runtime right after the next `times` calls of `operation` (e.g.
        "batch.SubmitServiceJob") return, the first `skip` calls left alone: the call took
        effect, the invocation fails with Runtime.ExitError as Lambda reports a killed runtime."""
        remaining = {"n": times, "skip": skip}

        def kill(**_: Any) -> None:
            if remaining["skip"] > 0:
                remaining["skip"] -= 1
                return
            if remaining["n"] > 0:
                remaining["n"] -= 1
                raise RuntimeKilled(f"Runtime exited with error: signal: killed (after {operation})")

        boto3.DEFAULT_SESSION.events.register(f"after-call.{operation}", kill)  # type: ignore[union-attr]

    def throttle(self, logical_id: str, times: int = 1) -> None:
        """Make the Lambda service refuse the next `times` invocations (TooManyRequestsException)."""
        self.throttles[self.functions[logical_id]] = times

    def inject_fault(self, logical_id: str, *, count: int, start: datetime | None = None, kind: str = "error") -> Fault:
        """Make `count` invocations of the function (logical id, e.g. CheckTrainingStatusFunction)
        from `start` (virtual time; default now) raise InjectedFault instead of running (`kind`
        "error"), or run and then time out, their answer lost (`kind` "timeout": Sandbox.Timedout)."""
        if logical_id not in self.functions:
            raise KeyError(f"{logical_id} is not a function of the template ({', '.join(sorted(self.functions))})")
        assert self.faults is not None
        fault = Fault(logical_id, start or self.clock.now(), count, kind=kind)
        return self.faults.add(self.functions[logical_id], fault)

    def throttle_calls(
        self, logical_id: str, times: int = 1, *, start: datetime | None = None, operations: tuple[str, ...] = ()
    ) -> CallThrottles:
        """Make AWS throttle the next `times` calls the function (logical id) makes from `start`
        (virtual time; default now), of `operations` only if given ("s3.GetObject"): each answered
        as its service answers a throttle (ThrottlingException, S3 SlowDown), botocore retrying it."""
        if logical_id not in self.functions:
            raise KeyError(f"{logical_id} is not a function of the template ({', '.join(sorted(self.functions))})")
        if self._call_throttles is None:
            self._call_throttles = CallThrottles(self.clock.now)
            self._call_throttles.install(self.session.events)
            # A client copies the session's hooks when it is made: the functions' clients made
            # before now (a setup's, an event delivered) are made again, with this hook.
            reset_clients()
        self._call_throttles.add(logical_id, times, start or self.clock.now(), operations)
        return self._call_throttles

    def stop_executions_after(self, seconds: float) -> None:
        """Stop every execution started from now on `seconds` (virtual) after its start, as
        on-call would in the console (StopExecution; it ends ABORTED)."""
        assert self.executions is not None
        self.executions.stop_after = seconds

    def execution(self, execution_arn: str) -> ExecutionRecord:
        """The execution's virtual start and end, and the status change event put when it ended."""
        assert self.executions is not None
        return self.executions.records[execution_arn]

    def resource_tags(self, arn: str) -> dict[str, str] | None:
        """The tags of a resource a function's call names (IAM's aws:ResourceTag/<key>): the
        stand-in's jobs in any region, and moto's roles and SageMaker models; None when unknown."""
        parts = arn.split(":")
        if len(parts) < 6:
            return None
        service, region, account = parts[2], parts[3], parts[4]
        if service in ("batch", "sagemaker"):
            standin = self.standin if region == self.region else self.peers.get(region)
            tags = standin.resource_tags(arn) if standin is not None else None
            if tags is not None or not arn.rpartition(":")[2].startswith("model/"):
                return tags
            try:
                listed, _token = moto_sagemaker_models.sagemaker_backends[account][region].list_tags(arn)
            except Exception:  # no such model: moto raises its own not-found error
                return None
            return {t["Key"]: t["Value"] for t in listed}
        if service == "iam":
            role = self._role(arn.rpartition("/")[2], account)
            if role is None:
                return None
            kept: Any = role.tags.values() if isinstance(role.tags, dict) else role.tags
            return {t["Key"]: t["Value"] for t in kept}
        return None

    def _role(self, name: str, account: str | None = None) -> Any:
        return next((r for r in iam_backends[account or self.account]["global"].roles.values() if r.name == name), None)

    def role_arn(self, name: str) -> str | None:
        """The ARN (with its path) of the account's role `name`, as IAM authorizes calls on it."""
        role = self._role(name)
        return str(role.arn) if role is not None else None

    def logical_id(self, function_name: str) -> str:
        """The template's logical id of a function of the stack, by its name."""
        return next(logical for logical, name in self.functions.items() if name == function_name)

    def client(self, service: str) -> Any:
        """A boto3 client of the local stack (one per service: creating one takes milliseconds)."""
        if service not in self._clients:
            self._clients[service] = self.session.client(service, region_name=self.region)  # type: ignore[call-overload]
        return self._clients[service]

    @property
    def bucket(self) -> str:
        return self.physical["IngestBucket"]

    def state_machine_arn(self, logical_id: str = "TrainingLifecycle") -> str:
        return self.physical[logical_id]

    # --- events --------------------------------------------------------------------------

    def deliver_events(
        self, on_error: Callable[[str, RuntimeError], None] | None = None, sources: tuple[str, ...] | None = None
    ) -> list[Any]:
        """Deliver what EventBridge rules matched to their Lambda targets, as EventBridge would.

        moto matches rules but cannot invoke Lambda targets, so each rule has an SQS tap; this
        drains the taps and invokes the rule's function with each event. Returns the results.
        A failed invocation raises, unless `on_error(rule, error)` is given: then it is reported
        there, the event dropped (as after Lambda's asynchronous retries) and delivery goes on.
        With `sources`, only the rules matching events of those sources are drained.
        """
        sqs, results = self.client("sqs"), []
        for queue_url, (function, rule) in self.rule_taps.items():
            if sources is not None and not set(self.rule_sources.get(rule, ())) & set(sources):
                continue
            while _tap_has_messages(queue_url):
                messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
                if not messages:
                    break
                for message in messages:
                    event = _as_eventbridge_delivers(json.loads(message["Body"]), self.clock.now(), self.account)
                    try:
                        results.append(self.invoke(function, event))
                    except RuntimeError as error:
                        if on_error is None:
                            raise
                        on_error(rule, error)
                    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        return results

    def put_dataset_event(self, detail_type: str, detail: Any, *, publisher: str | None = None, times: int = 1) -> None:
        """Put a "Dataset Ready" or "Training Requested" event on the stack's dataset event bus, as
        the preprocessing pipeline would, as `publisher` (a principal ARN; default one the stack's
        DatasetEventPublishers names), judged by the bus's policy (spotline_dev.harness.local.dataset_bus)."""
        put_dataset_event(self, detail_type, detail, publisher=publisher, times=times)

    def invoke(self, logical_id: str, event: Any) -> Any:
        response = self.client("lambda").invoke(FunctionName=self.functions[logical_id], Payload=json.dumps(event))
        payload = json.loads(response["Payload"].read())
        if response.get("FunctionError"):
            raise RuntimeError(f"{logical_id} failed: {payload.get('errorType')}: {payload.get('errorMessage')}")
        return payload

    # --- executions ----------------------------------------------------------------------

    def wait_for_execution(self, execution_arn: str, timeout: float = 120.0) -> dict[str, Any]:
        """Describe the execution once it has ended and its status change event has been put.
        An execution of this stack is waited for on its end (`ExecutionRecord.ended`), not polled:
        a poll is a whole DescribeExecution through moto, taken from the execution's own thread."""
        sfn = self.client("stepfunctions")
        record = self.executions.records.get(execution_arn) if self.executions else None
        if record is not None:
            if not record.ended.wait(timeout):
                raise TimeoutError(f"{execution_arn} still RUNNING after {timeout}s of wall time")
            return sfn.describe_execution(executionArn=execution_arn)  # type: ignore[no-any-return]
        deadline = time.monotonic() + timeout
        while True:  # not started through this stack's hooks: no record to wait on
            described = sfn.describe_execution(executionArn=execution_arn)
            if described["status"] != "RUNNING":
                return described  # type: ignore[no-any-return]
            if time.monotonic() > deadline:
                raise TimeoutError(f"{execution_arn} still RUNNING after {timeout}s of wall time")
            time.sleep(0.005)

    def history(self, execution_arn: str) -> list[dict[str, Any]]:
        """The execution's history events, as GetExecutionHistory answers them (read in-process)."""
        return history_of(execution_arn)


def _tap_has_messages(queue_url: str) -> bool:
    """Whether a rule's tap holds a message to deliver, asked of moto's queue in-process: most taps
    are empty at most deliveries, and an empty ReceiveMessage is a whole request through moto."""
    account, name = queue_url.rsplit("/", 2)[1:]
    region = urlparse(queue_url).netloc.split(".")[1]
    return bool(sqs_backends[account][region].get_queue(name).messages)


def _as_eventbridge_delivers(event: dict[str, Any], now: datetime, account: str) -> dict[str, Any]:
    """moto's S3 -> EventBridge event differs from AWS's in three ways: `time` is the wall-clock
    time (the local stack lives on the virtual clock, where the upload just happened), the
    ETag key is `eTag` instead of `etag`, and moto's rule targets receive the event without its
    `account` (the rule pattern did match on it)."""
    event = json.loads(json.dumps(event))
    event["time"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    event.setdefault("account", account)
    obj = event.get("detail", {}).get("object")
    if isinstance(obj, dict) and "eTag" in obj:
        obj["etag"] = obj.pop("eTag")
    return event
