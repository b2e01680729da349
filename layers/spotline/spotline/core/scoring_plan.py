"""How a scoring run is sized, split and kept on schedule (pure).

- **Size**: instances = records / (records per second per instance x seconds left in the window,
  less a transform job's start-up) plus the headroom (30 % by default), rounded up, within
  `maxInstances`, and never more than the input has objects: Batch Transform "partitions the
  Amazon S3 objects in the input by key and maps Amazon S3 objects to instances", and "if you have
  one input file but initialize multiple compute instances, only one instance processes the input
  file and the rest of the instances are idle" (SageMaker developer guide, Batch Transform).
- **Split**: a transform job cannot grow (there is no UpdateTransformJob), so the input's objects
  are split into shards, about WAVES per instance, balanced by bytes, each scored by a transform
  job of one instance reading a manifest file of its objects (S3DataType ManifestFile). The run
  keeps as many shards in flight as it has instances; more can start for what is left.
- **Pace**: from the finished shards (records per second per instance, measured), the run works
  out how many instances the rest needs to end by the window's close, and starts shards up to
  that, within `maxInstances`. When even `maxInstances` cannot make it, the run is at risk.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

STARTUP_SECONDS = 480.0
"""A transform job's start before it scores (instances, the model's container), assumed."""
WAVES = 3
"""Shards per instance: enough to add instances for what is left, few enough to start rarely."""
MAX_SHARDS = 500
"""The most transform jobs one run starts (execution state stays small)."""


@dataclass(frozen=True, slots=True)
class InputObject:
    key: str
    size: int


@dataclass(frozen=True, slots=True)
class Sizing:
    """The run's instance count and the figures it comes from."""

    records: int
    records_per_second: float  # per instance
    throughput_source: str  # declared | measured (the last nights') | probe (measured tonight)
    seconds_left: float  # from the start to the window's close, less STARTUP_SECONDS
    needed: int  # the formula's count, before maxInstances and the objects bound it
    instances: int
    headroom_percent: int
    objects: int
    at_risk: str | None = None  # why the window cannot be met even so
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "recordsPerSecond": round(self.records_per_second, 3),
            "throughputSource": self.throughput_source,
            "secondsLeft": round(self.seconds_left),
            "needed": self.needed,
            "instances": self.instances,
            "headroomPercent": self.headroom_percent,
            "objects": self.objects,
            "atRisk": self.at_risk,
            "warning": self.warning,
        }


def size(
    *,
    records: int,
    records_per_second: float,
    throughput_source: str,
    start: datetime,
    due: datetime,
    max_instances: int,
    headroom_percent: int,
    objects: int,
) -> Sizing:
    """The instances a run needs to score `records` by `due` (module docstring)."""
    seconds_left = (due - start).total_seconds() - STARTUP_SECONDS
    if seconds_left <= 0:
        needed = max_instances
        reason: str | None = f"the window closes {_minutes(-seconds_left)} before a transform job could start scoring"
    else:
        needed = max(1, math.ceil(records / (records_per_second * seconds_left) * (1 + headroom_percent / 100) - 1e-9))
        reason = None
    instances = max(1, min(needed, max_instances, objects))
    capacity = instances * records_per_second * max(seconds_left, 0)
    if reason is None and capacity < records:
        bound = "maxInstances" if instances == max_instances else f"the input's {objects} object(s)"
        reason = (
            f"{records:,} records at {records_per_second:,.0f}/s per instance need {needed} instance(s) "
            f"(with {headroom_percent} % headroom) in {_minutes(seconds_left)}; {bound} allows {instances}"
        )
    warning = None
    if objects < needed:
        warning = (
            f"the input has {objects} object(s) for {needed} instance(s): Batch Transform gives each instance "
            f"whole objects, so at most {objects} can work; split it into at least {needed} objects"
        )
    return Sizing(
        records,
        records_per_second,
        throughput_source,
        seconds_left,
        needed,
        instances,
        headroom_percent,
        objects,
        reason,
        warning,
    )


@dataclass(frozen=True, slots=True)
class Shard:
    index: int
    keys: tuple[str, ...]
    size: int


def split(objects: Sequence[InputObject], instances: int) -> list[Shard]:
    """The input's objects in about WAVES shards per instance, balanced by bytes (largest first,
    each to the smallest shard so far), in key order within a shard."""
    count = max(1, min(len(objects), instances * WAVES, MAX_SHARDS))
    bins: list[list[InputObject]] = [[] for _ in range(count)]
    sizes = [0] * count
    for item in sorted(objects, key=lambda o: (-o.size, o.key)):
        smallest = min(range(count), key=lambda i: (sizes[i], i))
        bins[smallest].append(item)
        sizes[smallest] += item.size
    shards = [Shard(0, tuple(sorted(o.key for o in b)), sum(o.size for o in b)) for b in bins if b]
    shards.sort(key=lambda s: s.keys[0])
    return [Shard(index, shard.keys, shard.size) for index, shard in enumerate(shards)]


@dataclass(frozen=True, slots=True)
class ShardRun:
    """A shard as the run sees it: not started, or its transform job's times."""

    index: int
    size: int
    started_at: datetime | None = None  # TransformStartTime, or when submitted while none
    ended_at: datetime | None = None
    failed: bool = False


@dataclass(frozen=True, slots=True)
class Pace:
    """What the run does now: the instances it keeps busy and how many shards it starts."""

    target: int
    start: int
    measured_records_per_second: float | None
    projected_end: datetime | None
    at_risk: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "start": self.start,
            "measuredRecordsPerSecond": None
            if self.measured_records_per_second is None
            else round(self.measured_records_per_second, 3),
            "projectedEnd": None if self.projected_end is None else self.projected_end.isoformat(),
            "atRisk": self.at_risk,
        }


def pace(
    shards: Sequence[ShardRun],
    *,
    records: int,
    records_per_second: float,
    target: int,
    max_instances: int,
    now: datetime,
    due: datetime,
) -> Pace:
    """Keep `target` shards in flight, more when the finished ones show the rest will not end by
    `due` at this pace (module docstring)."""
    total = sum(s.size for s in shards) or 1
    per_byte = records / total
    done = [s for s in shards if s.ended_at is not None and not s.failed and s.started_at is not None]
    scored = sum(s.size for s in done) * per_byte
    busy = sum((s.ended_at - s.started_at).total_seconds() for s in done if s.ended_at and s.started_at)
    measured = scored / busy if done and busy > 0 else None
    rate = measured or records_per_second
    running = [s for s in shards if s.started_at is not None and s.ended_at is None]
    pending = [s for s in shards if s.started_at is None]
    left = sum(s.size for s in pending) * per_byte + sum(
        max(0.0, s.size * per_byte - rate * (now - s.started_at).total_seconds()) for s in running if s.started_at
    )
    seconds = (due - now).total_seconds()
    if not pending:
        end = now if not running else now + timedelta(seconds=left / (rate * len(running)))
        return Pace(target, 0, measured, end, _late(end, due))
    usable = seconds - STARTUP_SECONDS
    needed = max_instances + 1 if usable <= 0 else math.ceil(left / (rate * usable) - 1e-9)
    wanted = max(target, min(needed, max_instances))
    start = max(0, min(len(pending), wanted - len(running)))
    in_flight = len(running) + start
    end = now + timedelta(seconds=STARTUP_SECONDS + left / (rate * max(in_flight, 1)))
    at_risk = None
    if needed > max_instances:
        at_risk = (
            f"{left:,.0f} records left at {rate:,.0f}/s per instance need {needed} instance(s) to end by "
            f"{due.isoformat()}; maxInstances is {max_instances}: about {_minutes((end - due).total_seconds())} late"
        )
    return Pace(wanted, start, measured, end, at_risk)


def _late(end: datetime, due: datetime) -> str | None:
    over = (end - due).total_seconds()
    return f"the shards in flight end about {_minutes(over)} after the window closes" if over > 0 else None


def _minutes(seconds: float) -> str:
    return f"{max(0, round(seconds / 60))} min"
