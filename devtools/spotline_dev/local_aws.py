"""The Spotline stack in one process: moto for AWS, the real handlers invoked in-process,
the real state machine file executed by moto's interpreter, and a virtual clock.

Everything is created from `template.yaml`: buckets, queues, topics, functions (with their
environment), EventBridge rules (with their patterns) and state machines (with their
definition substitutions). The hooks into moto (Lambda invocation, Wait and Retry sleeps)
are moto internals, which is why moto's version is pinned exactly.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from types import SimpleNamespace
from typing import Any
from unittest import mock
from urllib.parse import urlparse

import boto3
from moto import mock_aws
from moto.awslambda.exceptions import LambdaClientError
from moto.moto_api._internal import mock_random
from moto.moto_api._internal.moto_random import MotoRandom
from moto.s3 import models as moto_s3_models
from moto.sqs.models import sqs_backends
from moto.utilities.utils import get_partition

from spotline.aws import clients as spotline_aws
from spotline.core.quota_shares import format_capacity
from spotline_dev.lambda_context import LocalLambdaContext
from spotline_dev.local_cloudformation import install_stack_description
from spotline_dev.local_custom_resources import with_parameters
from spotline_dev.local_events import install_service_events
from spotline_dev.local_executions import ExecutionRecord, Executions, history_of
from spotline_dev.local_faults import Fault, Faults
from spotline_dev.local_moto_shortcuts import (
    share_botocore_data,
    skip_repeated_botocore_work,
    skip_repeated_moto_work,
)
from spotline_dev.local_resources import ACCOUNT, REGION, STACK, create_resources
from spotline_dev.standin import BatchSageMakerStandIn, SpotWeather, TrainingBehaviour
from spotline_dev.template import (
    load_template,
)
from spotline_dev.virtual_time import POLL_SECONDS, VirtualClock, install_time_hooks, is_parked, park

RANDOM_SEED = 12
STOP_TASKS_SECONDS = 30.0
_STACKS_STARTED = itertools.count()
Handler = Callable[[Any, Any], Any]
Behaviour = Callable[[dict[str, Any]], TrainingBehaviour]


def two_hour_training(_request: dict[str, Any]) -> TrainingBehaviour:
    return TrainingBehaviour(duration=2 * 3600)


class _OwnVersionIds:
    """moto's randomness for S3, but version ids from their own stream. Execution names derive
    from the manifest's version id, and the uploads come in the same order in every replay, while
    moto draws its other ids from the shared stream too, not always in the same order (its
    executions run in threads): fleet replays gave other names without this."""

    def __init__(self, seed: int) -> None:
        self._own = MotoRandom(seed)

    def uuid4(self) -> Any:
        return self._own.uuid4()

    def __getattr__(self, name: str) -> Any:
        return getattr(mock_random, name)


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
    account: str = ACCOUNT  # the account and region the stack plays (the sandbox: the manifests')
    region: str = REGION
    _clients: dict[str, Any] = field(default_factory=dict, repr=False)

    def kill_after_call(self, operation: str, times: int = 1) -> None:
        """Kill the Lambda runtime right after the next `times` calls of `operation` (e.g.
        "batch.SubmitServiceJob") return: the call took effect, the invocation fails with
        Runtime.ExitError as Lambda reports a killed runtime."""
        remaining = {"n": times}

        def kill(**_: Any) -> None:
            if remaining["n"] > 0:
                remaining["n"] -= 1
                raise RuntimeKilled(f"Runtime exited with error: signal: killed (after {operation})")

        boto3.DEFAULT_SESSION.events.register(f"after-call.{operation}", kill)  # type: ignore[union-attr]

    def throttle(self, logical_id: str, times: int = 1) -> None:
        """Make the Lambda service refuse the next `times` invocations (TooManyRequestsException)."""
        self.throttles[self.functions[logical_id]] = times

    def inject_fault(self, logical_id: str, *, count: int, start: datetime | None = None) -> Fault:
        """Make `count` invocations of the function (logical id, e.g. CheckTrainingStatusFunction)
        from `start` (virtual time; default now) raise InjectedFault instead of running."""
        if logical_id not in self.functions:
            raise KeyError(f"{logical_id} is not a function of the template ({', '.join(sorted(self.functions))})")
        assert self.faults is not None
        return self.faults.add(self.functions[logical_id], Fault(logical_id, start or self.clock.now(), count))

    def stop_executions_after(self, seconds: float) -> None:
        """Stop every execution started from now on `seconds` (virtual) after its start, as
        on-call would in the console (StopExecution; it ends ABORTED)."""
        assert self.executions is not None
        self.executions.stop_after = seconds

    def execution(self, execution_arn: str) -> ExecutionRecord:
        """The execution's virtual start and end, and the status change event put when it ended."""
        assert self.executions is not None
        return self.executions.records[execution_arn]

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


class S3CheckpointStore:
    """progress.json under a checkpoint prefix, in the local stack's S3 (as training code writes it).
    The stand-in's SageMaker writes and reads it in moto's S3 directly, as S3 stores a PutObject
    (the bucket's default encryption and versioning apply); Spotline's handlers read it through
    the S3 API."""

    def __init__(self, region: str, account: str = ACCOUNT) -> None:
        self.region, self.account = region, account

    def _backend(self, bucket: str) -> Any:
        """The S3 backend holding `bucket` (S3's names are global; moto keeps them per account)."""
        backends = moto_s3_models.s3_backends
        partition, account = backends.bucket_accounts.get(bucket, (get_partition(self.region), self.account))
        return backends[account][partition]

    def _location(self, s3_uri: str) -> tuple[str, str]:
        bucket, _, prefix = s3_uri.removeprefix("s3://").partition("/")
        return bucket, f"{prefix.rstrip('/')}/progress.json".lstrip("/")

    def read(self, s3_uri: str) -> dict[str, Any] | None:
        bucket, key = self._location(s3_uri)
        try:
            stored = self._backend(bucket).get_object(bucket, key)
        except Exception:  # no such bucket (moto raises it): nothing written yet, as a 404 would say
            return None
        return json.loads(stored.value) if stored is not None else None

    def write(self, s3_uri: str, progress: dict[str, Any]) -> None:
        bucket, key = self._location(s3_uri)
        self._backend(bucket).put_object(bucket, key, json.dumps(progress).encode())


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


def _put_event(stack: LocalStack, entry: dict[str, Any]) -> None:
    """Put one entry on the default bus, as an AWS service does (moto accepts any source)."""
    answer = stack.client("events").put_events(Entries=[entry])
    if answer.get("FailedEntryCount"):
        raise RuntimeError(f"PutEvents refused {entry['DetailType']}: {answer['Entries']}")


def _stop_execution(stack: LocalStack, execution_arn: str, cause: str) -> None:
    stack.client("stepfunctions").stop_execution(executionArn=execution_arn, cause=cause)


class _InProcessLambdas:
    """Replaces moto's Docker-based Lambda runner with a direct call of the real handler."""

    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.handlers: dict[str, Handler] = {}
        # One invocation at a time (Powertools metrics are process-wide); re-entrant so a handler can
        # trigger another function in-process, as an event it causes would.
        self.lock = threading.RLock()
        self._invoking: int | None = None  # the thread running a handler

    def settle(self, timeout: float) -> None:
        """The stack is ending: executions a test left running stop at their next wait (the clock
        closes) or at their next Lambda task, and this returns once no handler runs (or the one
        that does is stopped for good in a wait). A handler still running could otherwise put a
        client from whatever session is current into the layer's cache, and the next stack's
        handlers would use it: their calls would miss that stack's stand-in."""
        self.stack.clock.close()
        deadline = time.monotonic() + timeout
        while not is_parked(self._invoking):
            if self.lock.acquire(timeout=POLL_SECONDS):
                self.lock.release()
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(f"a Lambda handler of the local stack still runs {timeout:.0f} s after its end")

    def invoke(self, function: Any, event: Any = None) -> tuple[str, bool, str]:
        if self.stack.throttles.get(function.function_name, 0) > 0:
            self.stack.throttles[function.function_name] -= 1
            raise LambdaClientError("TooManyRequestsException", "Rate Exceeded.")
        handler = self.handlers[function.function_name]
        payload = event if event is not None else {}
        context = LocalLambdaContext(function_name=function.function_name, invoked_function_arn=function.function_arn)
        record = Invocation(function.function_name, payload, at=self.stack.clock.now())
        with self.lock:
            if self.stack.clock.closed:
                park()  # the stack is gone: no more tasks
            outer, self._invoking = self._invoking, threading.get_ident()
            self.stack.invocations.append(record)
            try:
                fault = self.stack.faults.due(function.function_name) if self.stack.faults else None
                if fault is not None:
                    raise fault
                result = handler(payload, context)
            except Exception as exc:
                record.error = "Runtime.ExitError" if isinstance(exc, RuntimeKilled) else type(exc).__name__
                error = {
                    "errorMessage": str(exc),
                    "errorType": record.error,
                    "stackTrace": traceback.format_exception(exc)[-3:],
                }
                return json.dumps(error), True, ""
            finally:
                self._invoking = outer
        record.result = result
        return json.dumps(result), False, ""


@contextmanager
def start_local_stack(
    start: datetime | None = None,
    *,
    environment: dict[str, str] | None = None,
    weather: SpotWeather | None = None,
    behaviour: Behaviour = two_hour_training,
    capacity: Mapping[str, int] | None = None,
    account: str = ACCOUNT,
    region: str = REGION,
    parameters: Mapping[str, str] | None = None,
) -> Iterator[LocalStack]:
    """Start moto and the Batch/SageMaker stand-in, create the stack from template.yaml, and
    yield handles to it. `environment` overrides function variables (e.g. TEAM_POLICY);
    `capacity` the training queue's capacity per instance type (the template's TrainingCapacity);
    `account` and `region` the AWS account and region it plays; `parameters` the stack's
    parameter values where they differ from the template's defaults (e.g. TrainingRolePath)."""
    overrides = dict(parameters or {}) | ({"TrainingCapacity": format_capacity(capacity)} if capacity else {})
    template = with_parameters(load_template(), overrides)
    clock = VirtualClock(start or datetime.now(UTC))
    with ExitStack() as exits:
        exits.enter_context(
            mock.patch.dict(
                os.environ,
                {
                    "AWS_ACCESS_KEY_ID": "testing",
                    "AWS_SECRET_ACCESS_KEY": "testing",
                    "AWS_SESSION_TOKEN": "testing",
                    "AWS_DEFAULT_REGION": region,
                    "AWS_REGION": region,
                    "MOTO_ACCOUNT_ID": account,
                },
            )
        )
        exits.enter_context(mock_aws(config={"stepfunctions": {"execute_state_machine": True}}))
        # moto's ids (S3 version ids, hence execution names) repeat from one replay to the next, and
        # differ between the stacks of one process (the layer caches by version id, as per Lambda process).
        seed = RANDOM_SEED + next(_STACKS_STARTED)
        mock_random.seed(seed)
        skip_repeated_moto_work(exits)
        share_botocore_data(exits)
        skip_repeated_botocore_work(exits)
        exits.enter_context(mock.patch.object(moto_s3_models, "random", _OwnVersionIds(seed)))
        physical: dict[str, str] = {}
        boto3.setup_default_session()  # moto cleared it; handlers' clients come from this session
        session = boto3._get_default_session()
        # The layer's clients come from this session whatever becomes of boto3.DEFAULT_SESSION: a
        # thread of an earlier stack calling boto3.client() while moto had cleared it once made a
        # session of its own there, and the custom resource's calls missed the stand-in.
        exits.enter_context(
            mock.patch.object(spotline_aws, "boto3", SimpleNamespace(client=session.client, resource=session.resource))
        )
        checkpoints = S3CheckpointStore(region, account)
        standin = BatchSageMakerStandIn(
            clock.now, weather or SpotWeather(), behaviour, checkpoints, account=account, region=region
        )
        standin.install(session)
        stack = LocalStack(
            template=template,
            clock=clock,
            physical=physical,
            standin=standin,
            session=session,
            account=account,
            region=region,
        )
        lambdas = _InProcessLambdas(stack)
        install_time_hooks(exits, clock)
        exits.callback(clock.close)
        stack.faults = Faults(clock.now)
        stack.executions = Executions(clock, partial(_put_event, stack), partial(_stop_execution, stack))
        stack.executions.install(exits)
        exits.enter_context(
            mock.patch(
                "moto.awslambda.models.LambdaFunction._invoke_lambda",
                lambda self, event=None: lambdas.invoke(self, event),
            )
        )
        exits.callback(spotline_aws.reset_clients)
        spotline_aws.reset_clients()
        create_resources(stack, lambdas.handlers, exits, environment or {})
        install_service_events(stack)
        install_stack_description(stack, STACK, region=region, account=account, created=clock.now())
        exits.callback(lambdas.settle, STOP_TASKS_SECONDS)  # first on the way out: moto still answers
        yield stack
