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
import random
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from functools import partial
from types import SimpleNamespace
from typing import Any
from unittest import mock

import boto3
from moto import mock_aws
from moto.moto_api._internal import mock_random
from moto.moto_api._internal.moto_random import MotoRandom
from moto.s3 import models as moto_s3_models
from moto.stepfunctions.parser.asl.component.common.retry import jitter_strategy_decl
from moto.utilities.utils import get_partition

from spotline.aws.common import clients as spotline_aws
from spotline.aws.teams import team_registry
from spotline.core.spec import catalog
from spotline.core.teams.quota_shares import format_capacity
from spotline_dev.harness.local.cloudformation import install_stack_description
from spotline_dev.harness.local.custom_resources import with_parameters
from spotline_dev.harness.local.events import install_service_events
from spotline_dev.harness.local.executions import Executions
from spotline_dev.harness.local.faults import Faults
from spotline_dev.harness.local.handles import ACCOUNT, REGION, STACK, Behaviour, LocalStack
from spotline_dev.harness.local.lambdas import InProcessLambdas
from spotline_dev.harness.local.moto_shortcuts import (
    share_botocore_data,
    skip_repeated_botocore_work,
    skip_repeated_moto_work,
)
from spotline_dev.harness.local.network import build_network, network_parameters
from spotline_dev.harness.local.peers import mirror_queues, start_peers
from spotline_dev.harness.local.permissions.checker import PermissionCheck, install_permission_check
from spotline_dev.harness.local.registry import seed_registry
from spotline_dev.harness.local.resources import create_resources
from spotline_dev.harness.local.template import (
    load_template,
)
from spotline_dev.harness.local.virtual_time import VirtualClock, install_time_hooks
from spotline_dev.harness.standin import BatchSageMakerStandIn, SpotWeather, TrainingBehaviour
from spotline_dev.harness.standin.file_systems import FileSystemsStandIn
from spotline_dev.harness.standin.price_list import PriceListStandIn

RANDOM_SEED = 12
STOP_TASKS_SECONDS = 30.0
_STACKS_STARTED = itertools.count()


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

    def put(self, s3_uri: str, name: str, body: bytes, at: datetime) -> None:
        """Another object under the checkpoint prefix (a shard's marker), uploaded at `at`: its
        LastModified is the sandbox's time, not the machine's."""
        bucket, _, prefix = s3_uri.removeprefix("s3://").partition("/")
        stored = self._backend(bucket).put_object(bucket, f"{prefix.rstrip('/')}/{name}".lstrip("/"), body)
        stored.last_modified = at.replace(tzinfo=None)


def _attribute(stack: LocalStack, logical: str, attribute: str | None) -> str:
    """A resource's Ref (attribute None) or attribute as the local stack created it (KeyError if not)."""
    if (logical, attribute) in stack.attributes:
        return stack.attributes[(logical, attribute)]
    if attribute in (None, "Name") and logical in stack.physical:
        return stack.physical[logical]
    raise KeyError(f"{logical}.{attribute}")


def _watched_resource(permissions: PermissionCheck, made: Any) -> Any:
    permissions.watch(made.meta.client)
    return made


def _put_event(stack: LocalStack, entry: dict[str, Any]) -> None:
    """Put one entry on the default bus, as an AWS service does (moto accepts any source)."""
    answer = stack.client("events").put_events(Entries=[entry])
    if answer.get("FailedEntryCount"):
        raise RuntimeError(f"PutEvents refused {entry['DetailType']}: {answer['Entries']}")


def _stop_execution(stack: LocalStack, execution_arn: str, cause: str) -> None:
    stack.client("stepfunctions").stop_execution(executionArn=execution_arn, cause=cause)


def _forget_prices() -> None:
    """The Lambda containers' cached prices (spotline.aws.billing.pricing), if a handler loaded it: not
    imported here, since its logger reads Powertools' settings when made, and the handlers'
    environment sets them first."""
    loaded = sys.modules.get("spotline.aws.billing.pricing")
    if loaded is not None:
        loaded.forget_cached()


def table_prices() -> dict[tuple[str, str], float]:
    """What the local Price List lists by default: the bundled table's prices, in its region."""
    region = catalog.price_region()
    return {
        (region, name): known.usd_per_hour
        for name in catalog.tabled_instance_type_names()
        if (known := catalog.known_facts(name)) is not None and known.usd_per_hour is not None
    }


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
    peers: Mapping[str, SpotWeather] | None = None,
    team_policy: str | Mapping[str, Any] | None = None,
    network: bool = False,
    prices: Mapping[tuple[str, str], float] | None = None,
) -> Iterator[LocalStack]:
    """Start moto and the Batch/SageMaker stand-in, create the stack from template.yaml, and
    yield handles to it. `environment` overrides function variables (e.g. POWERTOOLS_LOG_LEVEL);
    `team_policy` (`{"teams": {...}}`, JSON or a mapping) seeds the team registry, as
    `spotline teams apply` would; `network` gives the stack a VPC its jobs run in (two subnets in
    two zones and a security group: TrainingSubnetIds, TrainingSecurityGroupIds);
    `capacity` the training queue's capacity per instance type (the template's TrainingCapacity);
    `account` and `region` the AWS account and region it plays; `parameters` the stack's
    parameter values where they differ from the template's defaults (e.g. TrainingRolePath);
    `peers` the spot weather of each peer region (the stack's PeerRegions, `spotline_dev.harness.local.peers`;
    with `network`, the stack there has a VPC of its own, its DescribeStacks parameters say so);
    `prices` the on-demand training prices AWS's Price List API lists beyond the bundled table's
    ((region, instance type) -> USD per instance-hour: a sandbox scenario's `prices:`)."""
    overrides = dict(parameters or {}) | ({"TrainingCapacity": format_capacity(capacity)} if capacity else {})
    if peers:
        overrides["PeerRegions"] = ",".join(r for r in peers if r != region)
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
                    # The stack's own clients are moto's: an endpoint the user configured (AWS_ENDPOINT_URL,
                    # endpoint_url in ~/.aws/config) must not send them elsewhere.
                    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true",
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
        # A Retrier's "JitterStrategy": "FULL" draws its wait from the global random module: seeded
        # here, so a replay's retry waits (hence its times and cost) are the same every time.
        exits.enter_context(mock.patch.object(jitter_strategy_decl, "random", random.Random(seed)))
        physical: dict[str, str] = {}
        boto3.setup_default_session()  # moto cleared it; handlers' clients come from this session
        session = boto3._get_default_session()
        checkpoints = S3CheckpointStore(region, account)
        standin = BatchSageMakerStandIn(
            clock.now, weather or SpotWeather(), behaviour, checkpoints, account=account, region=region
        )
        standin.install(session)
        file_systems = FileSystemsStandIn(account, region, clock.now().timestamp())
        file_systems.install(session)
        price_list = PriceListStandIn({**table_prices(), **(prices or {})}, clock.now())
        price_list.install(session)
        built = build_network(session, region) if network else {}
        if built:
            template = with_parameters(template, network_parameters(built))
            standin.weather.subnet_zones.update({subnet: zone for zone, subnet in built["subnets"].items()})
        stack = LocalStack(
            template=template,
            clock=clock,
            physical=physical,
            standin=standin,
            session=session,
            account=account,
            region=region,
        )
        stack.file_systems, stack.network, stack.price_list = file_systems, built, price_list
        # The layer's clients come from this session whatever becomes of boto3.DEFAULT_SESSION: a
        # thread of an earlier stack calling boto3.client() while moto had cleared it once made a
        # session of its own there, and the custom resource's calls missed the stand-in. Every call
        # they make while a function runs is checked against its role.
        permissions = stack.permissions = install_permission_check(stack, partial(_attribute, stack))
        exits.callback(permissions.assert_allowed)  # early in, so it judges once every handler has ended
        checked = SimpleNamespace(
            client=lambda *a, **k: permissions.watch(session.client(*a, **k)),
            resource=lambda *a, **k: _watched_resource(permissions, session.resource(*a, **k)),
        )
        exits.enter_context(mock.patch.object(spotline_aws, "boto3", checked))
        start_peers(stack, peers or {}, behaviour, lambda there: S3CheckpointStore(there, account), session)
        if network:  # the same stack in each peer region, with a VPC of its own there
            stack.peer_networks = {there: build_network(session, there) for there in stack.peers}
            for there, built_there in stack.peer_networks.items():
                stack.peers[there].weather.subnet_zones.update({s: z for z, s in built_there["subnets"].items()})
        lambdas = InProcessLambdas(stack)
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
        exits.callback(team_registry.forget_cached)  # a team's entry read in one stack is not the next's
        team_registry.forget_cached()
        exits.callback(_forget_prices)  # nor a price: each stack's Price List is its own
        _forget_prices()
        create_resources(stack, lambdas.handlers, exits, environment or {})
        install_service_events(stack)
        install_stack_description(stack, STACK, region=region, account=account, created=clock.now())
        exits.callback(lambdas.settle, STOP_TASKS_SECONDS)  # first on the way out: moto still answers
        if team_policy is not None:
            seed_registry(stack, team_policy)
        mirror_queues(stack)  # each peer region's stack, its registry applied as here
        yield stack
