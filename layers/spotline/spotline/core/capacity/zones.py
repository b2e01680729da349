"""One Availability Zone per attempt of a job of many instances (pure).

Instances of a distributed job talk to each other on every step, EFA works within one zone
("EFA ... isn't supported over different availability zones", AWS ParallelCluster user guide,
Elastic Fabric Adapter), and SageMaker exposes no placement group for training jobs, only
VpcConfig.Subnets: so each attempt is given the subnets of one zone. Which one: where the last
attempt ran, unless it was interrupted there or found no capacity there; then the next zone, in the
order of the stack's TrainingSubnetIds. An attempt on a training plan runs in the plan's zone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from spotline.core.state import RunStatus


@dataclass(frozen=True, slots=True)
class ZoneChoice:
    zone: str
    reason: str
    subnets: tuple[str, ...]


def by_zone(subnet_zones: Mapping[str, str], subnets: Sequence[str]) -> dict[str, list[str]]:
    """`subnets` grouped by their zone ({subnet: zone}), zones in the order their first subnet comes."""
    grouped: dict[str, list[str]] = {}
    for subnet in subnets:
        if subnet in subnet_zones:
            grouped.setdefault(subnet_zones[subnet], []).append(subnet)
    return grouped


def choose_zone(
    zones: Mapping[str, Sequence[str]], previous: str | None, status: RunStatus | None, plan_zone: str | None = None
) -> ZoneChoice:
    """The zone of the next attempt among `zones` ({zone: its subnets}, at least one), its subnets,
    and why, in a sentence. `plan_zone`: the zone of the training plan the attempt runs on."""
    order = list(zones)
    if plan_zone is not None and plan_zone in zones:
        return ZoneChoice(
            plan_zone, f"{plan_zone}: the training plan's reserved capacity is there", tuple(zones[plan_zone])
        )
    if status is not None and status.next_zone in zones and status.next_zone != previous:
        zone = str(status.next_zone)  # the check that moved the job chose it, and said why
        return ZoneChoice(zone, f"{zone}: {status.explanation}", tuple(zones[zone]))
    if previous is None or previous not in zones:
        zone, reason = order[0], f"{order[0]}: the first of the stack's zones"
    elif (left := _left_because(status)) is None:
        zone, reason = previous, f"{previous}: where the last attempt ran"
    elif len(order) == 1:
        zone, reason = previous, f"{previous}: the only zone of the stack's subnets, though it {left}"
    else:
        zone = str(next_zone(order, previous))
        reason = f"{zone}: {previous} {left}"
    return ZoneChoice(zone, reason, tuple(zones[zone]))


def next_zone(zones: Sequence[str], current: str | None, left: Collection[str] = ()) -> str | None:
    """The zone after `current` in the stack's order (round the list), skipping those in `left`
    (zones the run's earlier attempts ran in: a zone a job moved away from is not taken again, so it
    never flaps between two zones without spot); None when there is none."""
    if current is None or current not in zones:
        return None
    order = list(zones)
    start = order.index(current)
    after = [order[(start + step) % len(order)] for step in range(1, len(order))]
    return next((zone for zone in after if zone not in left), None)


def _left_because(status: RunStatus | None) -> str | None:
    """Why the last attempt's zone is left: what was observed there; None to stay."""
    if status is None:
        return None
    if status.state == "interrupted" or (status.interruptions or 0) > 0:
        return "interrupted the last attempt"
    if status.capacity_short:
        return "had no capacity for the last attempt (CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY)"
    if status.capacity_wait_seconds > 0 and status.state in ("queued", "starting"):
        return f"kept the last attempt waiting {status.capacity_wait_seconds // 60} min for capacity"
    return None
