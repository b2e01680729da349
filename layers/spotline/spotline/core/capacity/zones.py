"""One Availability Zone per attempt of a job of many instances (pure).

Instances of a distributed job talk to each other on every step, EFA works within one zone
("EFA ... isn't supported over different availability zones", AWS ParallelCluster user guide,
Elastic Fabric Adapter), and SageMaker exposes no placement group for training jobs, only
VpcConfig.Subnets: so each attempt is given the subnets of one zone. Which one: where the last
attempt ran, unless it was interrupted there or found no capacity there; then the next zone, in the
order of the stack's TrainingSubnetIds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


def choose_zone(zones: Mapping[str, Sequence[str]], previous: str | None, status: RunStatus | None) -> ZoneChoice:
    """The zone of the next attempt among `zones` ({zone: its subnets}, at least one), its subnets,
    and why, in a sentence."""
    order = list(zones)
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


def next_zone(zones: Sequence[str], current: str | None) -> str | None:
    """The zone after `current` in the stack's order (round the list); None with one zone or none known."""
    if current is None or current not in zones or len(zones) < 2:
        return None
    return zones[(list(zones).index(current) + 1) % len(zones)]


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
