"""How a scoring run is sized, split and kept on schedule (pure).

- **Size**: the fewest instances n with n x records per second per instance x (seconds left in
  the window, less the start-ups each instance pays) >= records plus the headroom (30 % by
  default), within `maxInstances`, and never more than the input has objects. Each instance scores
  its shards one after the other, each shard a transform job with its own start-up: with S shards
  (`split`: WAVES per instance, at most the objects and MAX_SHARDS), an instance pays
  ceil(S / n) start-ups, not one. Batch Transform "partitions the
  Amazon S3 objects in the input by key and maps Amazon S3 objects to instances", and "if you have
  one input file but initialize multiple compute instances, only one instance processes the input
  file and the rest of the instances are idle" (SageMaker developer guide, Batch Transform).
- **Split**: a transform job cannot grow (there is no UpdateTransformJob), so the input's objects
  are split into shards, WAVES (6) per instance, balanced by bytes, each scored by a transform
  job of one instance reading a manifest file of its objects (S3DataType ManifestFile). The run
  keeps as many shards in flight as it has instances; more can start for what is left.
- **Pace**: from the finished shards (records per second per instance, measured), the run works
  out how many instances the rest needs to end by the window's close, shard by shard (each a new
  transform job with its start-up, on the instance free first), and starts shards up to that,
  within `maxInstances`. When even `maxInstances` cannot make it, the run is at risk.
- **Look**: a run looks at its shards when one should end (an instance frees up for the next
  shard, or the run is done), and otherwise spreads its looks over what is left (LOOKS_AHEAD over
  the time to its projected end or its due, whichever is later; as many over the time it is late),
  between LOOK_SECONDS and MAX_LOOK_SECONDS apart. A shard that should have ended is looked at
  again after a quarter of the time it is overdue. Every look adds about nine events to the
  execution's history, which Step Functions caps at 25,000: a run due in a week looks a few
  hundred times (about 800 when it scores to its end), where every two minutes would be 5,040
  looks and 45,000 events.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from spotline.core.spec.model import to_rfc3339

STARTUP_SECONDS = 480.0
"""A transform job's start before it scores (instances, the model's container), assumed."""
WAVES = 6
"""Shards per instance: enough to add instances for what is left, few enough to start rarely."""
MAX_SHARDS = 500
"""The most transform jobs one run starts (execution state stays small)."""
LOOK_SECONDS = 120
"""The shortest time between two looks at a run."""
MAX_LOOK_SECONDS = 3600
"""The longest: a slow night is noticed within the hour."""
LOOKS_AHEAD = 200
"""Looks spread over the rest of the run when no shard is about to end."""


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
    seconds_left: float  # from the start to the window's close, less the start-ups each instance pays
    needed: int  # the formula's count, before maxInstances and the objects bound it
    instances: int
    headroom_percent: int
    objects: int
    at_risk: str | None = None  # why the window cannot be met even so
    warning: str | None = None
    startups: int = 1  # the transform jobs (each with its start-up) each of `instances` runs in turn

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
            "startupsPerInstance": self.startups,
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
    shards: int | None = None,
) -> Sizing:
    """The instances a run needs to score `records` by `due` (module docstring). `shards`: the
    shards left to score when the run is already split (a resize), else those `split` would make."""
    window = (due - start).total_seconds()
    wanted = records * (1 + headroom_percent / 100)

    def scoring_seconds(n: int) -> float:
        return window - startups_per_instance(n, objects, shards) * STARTUP_SECONDS

    if window - STARTUP_SECONDS <= 0:
        needed = max_instances
        reason: str | None = (
            f"the window closes {_minutes(STARTUP_SECONDS - window)} before a transform job could start scoring"
        )
    else:
        # With enough instances each pays one start-up (the count the one-start-up formula gives);
        # fewer pay more: the fewest whose instances, each after its start-ups, score it all.
        most = max(
            math.ceil(wanted / (records_per_second * (window - STARTUP_SECONDS)) - 1e-9),
            shards if shards is not None else min(objects, MAX_SHARDS),
            1,
        )
        needed = next(
            n
            for n in range(1, most + 1)
            if scoring_seconds(n) > 0 and n * records_per_second * scoring_seconds(n) >= wanted - 1e-6
        )
        reason = None
    instances = max(1, min(needed, max_instances, objects))
    startups = startups_per_instance(instances, objects, shards)
    seconds_left = window - startups * STARTUP_SECONDS
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
        startups,
    )


def startups_per_instance(instances: int, objects: int, shards: int | None = None) -> int:
    """The transform jobs one of `instances` runs in turn, each with its start-up: the run's shards
    (`shards`, or as many as `split` makes of `objects` for that many instances) over its instances."""
    count = shards if shards is not None else min(objects, instances * WAVES, MAX_SHARDS)
    return max(1, math.ceil(max(count, 1) / max(instances, 1)))


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
    look_seconds: float = 0.0,
) -> Pace:
    """Keep `target` shards in flight, more when the rest will not end by `due` at tonight's pace
    (module docstring). Tonight's pace: the most recently finished shards' records per second,
    and no more than a running shard that has not finished yet can have gone (its records over the
    time it has run, once that is longer than they should have taken). `look_seconds`: how often
    the run looks; a shard waits half of it on average after an instance frees up."""
    total = sum(s.size for s in shards) or 1
    per_byte = records / total
    done = sorted(
        (s for s in shards if s.ended_at is not None and s.started_at is not None and not s.failed),
        key=lambda s: s.ended_at or now,
    )
    recent = [
        s.size * per_byte / max((s.ended_at - s.started_at).total_seconds(), 1.0)
        for s in done[-RECENT:]
        if s.ended_at and s.started_at
    ]
    measured = sorted(recent)[len(recent) // 2] if recent else None
    rate = measured or records_per_second
    running = [s for s in shards if s.started_at is not None and s.ended_at is None and not s.failed]
    for shard in running:
        elapsed = (now - shard.started_at).total_seconds() if shard.started_at else 0.0
        if elapsed > shard.size * per_byte / rate:  # overdue: it has gone no faster than this
            rate = min(rate, shard.size * per_byte / elapsed)
    pending = [s for s in shards if s.started_at is None]
    free_at = [_ends(s, per_byte, rate, now) for s in running]
    if not pending:
        end = max(free_at, default=now)
        return Pace(target, 0, measured, end, _late(end, due))
    needed = next(
        (
            n
            for n in range(max(1, len(running)), max_instances + 1)
            if _finish(free_at, pending, n, per_byte=per_byte, rate=rate, now=now, gap=look_seconds / 2) <= due
        ),
        max_instances + 1,
    )
    wanted = max(target, min(needed, max_instances))
    start = max(0, min(len(pending), wanted - len(running)))
    end = _finish(
        free_at, pending, max(wanted, len(running), 1), per_byte=per_byte, rate=rate, now=now, gap=look_seconds / 2
    )
    at_risk = None
    if needed > max_instances:
        left = sum(s.size for s in pending) * per_byte
        at_risk = (
            f"{left:,.0f} records in {len(pending)} shard(s) not started, at {rate:,.0f}/s per instance, end about "
            f"{_minutes((end - due).total_seconds())} after {to_rfc3339(due)} even on maxInstances ({max_instances})"
        )
    return Pace(wanted, start, measured, end, at_risk)


RECENT = 4
"""The finished shards tonight's pace is read from (their median), the latest first."""


def _ends(shard: ShardRun, per_byte: float, rate: float, now: datetime) -> datetime:
    """When a running shard should end at `rate` (not before now)."""
    started = shard.started_at or now
    return max(now, started + timedelta(seconds=shard.size * per_byte / rate))


def _finish(
    free_at: list[datetime],
    pending: Sequence[ShardRun],
    instances: int,
    *,
    per_byte: float,
    rate: float,
    now: datetime,
    gap: float = 0.0,
) -> datetime:
    """When the last shard ends with `instances` in flight: each pending shard, largest first, on
    the instance free first (a new transform job each, with its start-up, `gap` after the instance
    frees up but for the ones free now)."""
    slots = sorted(free_at + [now] * max(0, instances - len(free_at)))
    for shard in sorted(pending, key=lambda s: -s.size):
        slots.sort()
        wait = gap if slots[0] > now else 0.0
        slots[0] = slots[0] + timedelta(seconds=wait + STARTUP_SECONDS + shard.size * per_byte / rate)
    return max(slots, default=now)


def _late(end: datetime, due: datetime) -> str | None:
    over = (end - due).total_seconds()
    return f"the shards in flight end about {_minutes(over)} after the window closes" if over > 0 else None


def _minutes(seconds: float) -> str:
    return f"{max(0, round(seconds / 60))} min"


def next_look_seconds(
    shards: Sequence[ShardRun],
    *,
    records: int,
    records_per_second: float,
    now: datetime,
    due: datetime,
    projected_end: datetime | None,
) -> int:
    """Seconds until the run's next look (module docstring, Look): `shards` as they are after
    this look's starts, `records_per_second` per instance the pace it expects."""
    per_byte = records / (sum(s.size for s in shards) or 1)
    horizon = max(projected_end or now, due)
    wait = max((horizon - now).total_seconds(), (now - due).total_seconds()) / LOOKS_AHEAD
    for shard in shards:
        if shard.started_at is None or shard.ended_at is not None or shard.failed:
            continue
        expected = shard.started_at + timedelta(seconds=shard.size * per_byte / records_per_second)
        overdue = (now - expected).total_seconds()
        wait = min(wait, overdue / 4 if overdue > 0 else -overdue)
    return round(min(max(wait, LOOK_SECONDS), MAX_LOOK_SECONDS))
