"""The stack's peer regions in the local stack (the template's PeerRegions): in each, the same
stack's job queue and quota shares, served by a Batch/SageMaker stand-in of that region with its
own spot weather. What the peer stacks' rules do (forward the Batch and SageMaker events of the
attempts placed there to this region's default bus) the local stack does by putting every
stand-in's events on this region's bus; Spotline's functions reach a peer's Batch and SageMaker
through their region's endpoints, which its stand-in answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import boto3

from spotline_dev.harness.standin import BatchSageMakerStandIn, ServiceJobView, SpotWeather, TrainingBehaviour
from spotline_dev.harness.standin.sagemaker.ledger import RunLedger, runs_of
from spotline_dev.harness.standin.sagemaker.training_jobs import CheckpointStore

if TYPE_CHECKING:
    from spotline_dev.harness.local.handles import LocalStack


def start_peers(
    stack: LocalStack,
    weathers: Mapping[str, SpotWeather],
    behaviour: Callable[[dict[str, Any]], TrainingBehaviour],
    checkpoints: Callable[[str], CheckpointStore],
    session: boto3.Session,
) -> None:
    """A stand-in per peer region, answering that region's endpoints from now on."""
    for region, weather in weathers.items():
        if region == stack.region:
            continue
        peer = BatchSageMakerStandIn(
            stack.clock.now, weather, behaviour, checkpoints(region), account=stack.account, region=region
        )
        peer.install(session)
        stack.peers[region] = peer


def mirror_queues(stack: LocalStack) -> None:
    """Each peer's namesake of every job queue of the stack, with its quota shares as they are here
    (the same template deployed there, the same team registry applied)."""
    batch = stack.client("batch")
    for logical, settings in stack.queue_settings.items():
        here = stack.physical[logical]
        shares = (
            batch.list_quota_shares(jobQueue=here).get("quotaShares", []) if settings["scheduling_policy_arn"] else []
        )
        for peer in stack.peers.values():
            arn = peer.register_queue(
                settings["name"],
                scheduling_policy_arn=settings["scheduling_policy_arn"],
                capacity=settings["capacity"],
                time_limits=settings["time_limits"],
            )
            for share in shares:
                sharing = share.get("resourceSharingConfiguration") or {}
                peer.register_quota_share(
                    arn,
                    share["quotaShareName"],
                    {str(c["capacityUnit"]): int(c["maxCapacity"]) for c in share.get("capacityLimits") or []},
                    strategy=str(sharing.get("strategy") or "LEND_AND_BORROW"),
                    borrow_limit=int(sharing.get("borrowLimit", -1)),
                    in_share_preemption=(share.get("preemptionConfiguration") or {}).get("inSharePreemption")
                    == "ENABLED",
                    state=str(share.get("state") or "ENABLED"),
                )


def every_standin(stack: LocalStack) -> list[BatchSageMakerStandIn]:
    return [stack.standin, *stack.peers.values()]


def every_job(stack: LocalStack) -> list[ServiceJobView]:
    """Every service job of every region."""
    return [job for standin in every_standin(stack) for job in standin.jobs]


def every_ledger(stack: LocalStack, *, by_service_job: bool = False) -> dict[str, RunLedger]:
    """What every region's stand-in billed, per run (a run's jobs in any region), oldest first."""
    entries = sorted((e for s in every_standin(stack) for e in s.ledger_entries()), key=lambda e: e.created)
    return runs_of(entries, stack.standin.weather.on_demand_start_delay, by_service_job=by_service_job)


def next_change_after(stack: LocalStack, now: datetime) -> datetime | None:
    moments = [m for s in every_standin(stack) if (m := s.next_change_after(now)) is not None]
    return min(moments, default=None)


def state_change_events(stack: LocalStack) -> list[dict[str, Any]]:
    """Every region's Batch and SageMaker events since the last call, in time order."""
    entries = [e for s in every_standin(stack) for e in s.state_change_events()]
    return sorted(entries, key=lambda e: e["Time"])
