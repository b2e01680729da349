"""Spot weather (capacity gaps, interruptions, start delays) and what the training code does."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime

from spotline_dev.harness.standin.base.clock import EPS
from spotline_dev.harness.standin.base.training_plans import ReservedPlan


@dataclass
class SpotWeather:
    """Spot capacity, the same for every job (times in seconds)."""

    capacity_gaps: list[tuple[datetime, datetime]] = field(default_factory=list)
    interruptions: list[float] = field(default_factory=list)
    spot_start_delay: float = 300.0
    on_demand_start_delay: float = 480.0
    queue_delay: float = 30.0
    restart_delay: float | None = None
    spot_price_ratio: float = 0.3
    requeue_wait: float | None = None
    """How long Batch keeps a service job RUNNABLE after an attempt it retries before it starts
    the next one: a capacity failure waits this long for capacity to return, a retryStrategy
    RETRY this long to be scheduled again. None: `queue_delay`, as for a new job."""
    on_demand_gaps: list[tuple[datetime, datetime]] = field(default_factory=list)
    """When on-demand capacity of the type is short: an on-demand job cannot start then (it waits,
    within MaxPendingTimeInSeconds); one already running keeps its instances."""
    instance_types: dict[str, SpotWeather] = field(default_factory=dict)
    """Capacity of one instance type where it differs from the rest (scenario `instanceTypes:`)."""
    speed: float = 1.0
    """How fast the training code runs on the type, relative to its `duration` (0.8: it takes 25 %
    longer); what progress.json then measures."""
    training_plans: list[ReservedPlan] = field(default_factory=list)
    """Reserved capacity the account has bought (scenario `trainingPlans:`)."""
    zones: dict[str, SpotWeather] = field(default_factory=dict)
    """Capacity of one Availability Zone where it differs from the region's (scenario `zones:`),
    for a job whose VpcConfig subnets are all there."""
    subnet_zones: dict[str, str] = field(default_factory=dict)
    """The zone of each subnet of the stack's VPC (TrainingSubnetIds), for the zones a job with a
    VpcConfig may run in."""

    @property
    def requeue_delay(self) -> float:
        return self.queue_delay if self.requeue_wait is None else self.requeue_wait

    def for_type(self, instance_type: str) -> SpotWeather:
        """The capacity of `instance_type`: its own weather if it has one, else the default."""
        return self.instance_types.get(instance_type, self)

    def for_job(self, instance_type: str, subnets: list[str], created: float, spot: bool) -> tuple[SpotWeather, str]:
        """The capacity a job of `instance_type` meets and the zone it runs in ("" when the
        scenario has no zone weather or the job no subnets). A job's VpcConfig subnets pin it to
        their zones (SageMaker VpcConfig.Subnets: "The ID of the subnets in the VPC to which you
        want to connect your training job"); how SageMaker picks among several zones is not
        documented: the stand-in takes the one that starts it soonest, the first subnet's on a tie.
        A zone's weather replaces the region's for every type; the type's speed stays its own."""
        by_type = self.for_type(instance_type)
        zones = list(dict.fromkeys(self.subnet_zones[s] for s in subnets if s in self.subnet_zones))
        if not self.zones or not zones:
            return by_type, ""
        best: tuple[float, SpotWeather, str] | None = None
        for zone in zones:
            weather = replace(self.zones[zone], speed=by_type.speed) if zone in self.zones else by_type
            delay = weather.spot_start_delay if spot else weather.on_demand_start_delay
            start = capacity_from(
                merged_gaps(weather.capacity_gaps if spot else weather.on_demand_gaps), created, delay
            )
            if best is None or start < best[0] - EPS:
                best = (start, weather, zone)
        assert best is not None
        return best[1], best[2]


@dataclass
class TrainingBehaviour:
    """What the training code in the image does (times in seconds)."""

    duration: float
    fail_after: float | None = None
    hardware_faults: tuple[float, ...] = ()
    """Cumulative training times at which a GPU of one instance fails (scenario
    `training.hardwareFaults`), on any capacity: SageMaker repairs the cluster and restarts."""
    upload_seconds: float = 60.0
    steps_per_hour: int = 60
    steps: int | None = None
    """The job's steps when set (a slower type takes longer for the same steps)."""

    @property
    def total_steps(self) -> int:
        if self.steps is not None:
            return self.steps
        return max(1, math.ceil(self.duration / 3600 * self.steps_per_hour))

    def at_speed(self, speed: float) -> TrainingBehaviour:
        """The same steps on a type `speed` times as fast."""
        if speed == 1.0:
            return self
        return replace(self, duration=self.duration / speed, steps=self.total_steps)


def merged_gaps(gaps: list[tuple[datetime, datetime]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted((a.timestamp(), b.timestamp()) for a, b in gaps if b > a):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def capacity_from(gaps: list[tuple[float, float]], t: float, length: float) -> float:
    """The earliest time from `t` with spot capacity for `length` seconds in a row."""
    candidate = t
    for start, end in gaps:
        if end <= candidate + EPS:
            continue
        if start >= candidate + length - EPS:
            break
        candidate = end
    return candidate


def next_gap_start(gaps: list[tuple[float, float]], t: float) -> float:
    return next((start for start, _ in gaps if start >= t - EPS), math.inf)
