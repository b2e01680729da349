"""Where a spot attempt should run next, across the regions a manifest allows (pure).

Spot capacity differs far more between places than between hours, so a job whose spot attempt
is stuck (waiting for capacity, or interrupted) may move to another region of
`spec.capacity.regions` rather than wait or pay on-demand. Spotline knows a region's spot
capacity only from what its own fleet saw there (`Sighting`: a start, a wait, an interruption;
CheckTrainingStatus records one at each check) — AWS offers no spot signal for SageMaker
training (EC2's spot placement scores cover EC2 instance types and fleets, not SageMaker's
pools), so none is used.

**The rule** (`choose_region`), deadline first, then money. A region's estimate is the time
lost before the job is done there, beyond the work itself:

- the restart (its measured overhead), plus the copy of the latest checkpoint when it is
  elsewhere (`copy_estimate`), plus `UNSIGHTED_PENALTY_SECONDS` when nothing was seen there lately;
  a region whose latest fresh sighting saw none is not a candidate, and one whose last sightings of
  the day saw none pays the rest of that outage (a "no" is not forgotten after 30 minutes);
- plus the interruptions the next hour of work is likely to meet there (`INTERRUPTION_HORIZON_SECONDS`,
  or the work left if less): those hours x the region's interruptions per hour of spot
  (`RegionRecord`, from the fleet's sightings of the last day) x (a restart + half a checkpoint
  interval of lost work);
- for the stuck attempt's own region, the rest of its outage instead of the restart's wait:
  the region's mean outage from the same record, or as long as it has lasted so far if that is
  longer (an outage that has lasted an hour is likely to last about as long again).

**Hysteresis.** A region the run left for lack of spot is blocked (`blocked_regions`) until the
fleet sees spot there again or `max(1 h, the wait seen there)` passes, doubled at each return. A
stuck attempt moves only when the move saves more than the checkpoint copy it pays. One
interruption is no reason to move (only to a region where spot is seen now), and the run's moves are bounded
(`spotline.core.capacity.assess.look_elsewhere`). The interruption rate is shrunk toward the prior
(`PRIOR_SPOT_HOURS`), and a prior is always said as one, never as something seen.

The region with the least time wins; among equal times the cheaper copy, then the current
region, then the order of `capacity.regions` (the home region first). A running attempt is
never moved. No candidate: the job keeps waiting where it is (and the deadline policy may
still switch it to on-demand, in the region where its checkpoint is: no copy before the last
resort).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from spotline.core.common.durations import format_duration
from spotline.core.common.errors import ManifestError

REGIONS_PATH = "spec.capacity.regions"


def home_region_missing(regions: Sequence[str], home: str) -> ManifestError | None:
    """The stack's rule for `capacity.regions` (ValidateResources refuses the run otherwise): a
    list, when there is one, includes the home region, the stack's own, where the manifest is dropped."""
    if not regions or home in regions:
        return None
    return ManifestError(
        REGIONS_PATH,
        f"must include {home}, the region the manifest was dropped in: the run, its on-demand fallback "
        "and its records stay there",
    )


COPY_SECONDS_PER_GIB = 10.0
"""A server-side S3 copy between regions moves about 100 MiB/s (multipart UploadPartCopy in
parallel parts); a conservative planning figure, the measured copy replaces it in the report."""
COPY_FIXED_SECONDS = 30.0
"""Listing and starting the copy, whatever its size."""
TRANSFER_USD_PER_GIB = 0.02
"""S3 data transfer to another AWS Region (US regions; $0.01 between us-east-1 and us-east-2)."""
_CHEAPER_PAIRS = {frozenset({"us-east-1", "us-east-2"}): 0.01}
SIGHTING_FRESH_SECONDS = 30 * 60
"""A sighting older than this says nothing about spot capacity now."""
UNSIGHTED_PENALTY_SECONDS = 20 * 60
"""What an unsighted region is assumed to cost in waiting: one restart's worth."""
RECORD_WINDOW_SECONDS = 24 * 3600
"""The fleet's record of a region covers the last day of sightings."""
UNKNOWN_RECORD_SHARE = 0.5
UNKNOWN_RECORD_RATE = 0.25
"""Interruptions per hour of spot assumed for a region without a record (about the 2023 traces'
us-east-1, the worst of the three regions)."""
PRIOR_SPOT_HOURS = 4.0
"""The prior's weight in a record's rate, in spot hours: one interruption in an hour of spot
makes 0.4/h, not 1/h (`region_records`)."""
INTERRUPTION_HORIZON_SECONDS = 3600.0
"""The work ahead whose interruptions a region's record is asked to predict. Spot capacity comes
and goes in bursts: a day's rate said little about the hours after it on the 2023 preemption
traces of Wu et al., and a job decides again at every interruption. Charging a region its rate
over all the work left kept jobs waiting where spot was gone (docs/simulation.md, "Trace sets it
was not tuned on")."""
BLOCK_MIN_SECONDS = 3600.0
"""A region left for lack of spot is blocked for at least this long (doubling at each return):
in the 2023 traces an outage that has lasted 30 min lasts about another 1-3 h."""
GIB = 1024**3

Situation = Literal["placing", "stuck"]


@dataclass(frozen=True, slots=True)
class Sighting:
    """What Spotline saw of spot capacity in a region for one instance type at one moment."""

    region: str
    at: datetime
    spot: bool
    """A spot attempt started or ran (True), or waited for capacity or was interrupted (False)."""
    instance_type: str = ""
    interruption: bool = False
    """A running spot attempt was interrupted here (then `spot` is False)."""
    instances: int = 1
    """How many instances of the type the job seen asked for (all or nothing: one CreateTrainingJob
    gets them all or none)."""

    def tells_about(self, instances: int) -> bool:
        """Whether this sighting says something of a job of `instances`: spot for M instances was
        there for any job of M or fewer; none for M was none for M or more. A sighting of one node
        on spot says nothing of sixteen (16-node availability comes in much shorter stretches)."""
        return self.instances >= instances if self.spot else self.instances <= instances


@dataclass(frozen=True, slots=True)
class RegionRecord:
    """What the fleet saw of a region over the last day."""

    share: float
    """The part of the sightings that saw spot capacity."""
    interruptions_per_hour: float
    """Interruptions per hour of spot capacity."""
    observed_seconds: float = 0.0
    """From the first sighting of the day to now."""
    sightings: int = 0
    """How many sightings the record counts (0: a record given by its rates alone)."""
    spot_sightings: int = 0
    interruptions: int = 0
    last_spot_at: datetime | None = None
    """The newest sighting with spot (None: none in the day)."""
    dry_seconds: float = 0.0
    """How long the region has been without spot when its newest sighting saw none: from the first
    sighting without spot after the last with spot (0: the newest saw spot, or no sighting)."""

    def observed(self) -> str:
        """What the record rests on, as seen: `1 interruption in 1h14m, 5 of 6 checks with spot`.
        A rate with no spot hour behind it is the prior, and says so."""
        rate = f"{self.interruptions_per_hour:.2f} interruptions per spot hour"
        if not self.sightings:
            return f"{rate} in the last day"
        count = f"{self.interruptions} interruption{'s' * (self.interruptions != 1)}"
        span = format_duration(round(self.observed_seconds))
        seen = f"seen: {count} in {span}, {self.spot_sightings} of {self.sightings} checks with spot"
        if not self.spot_sightings:
            return f"{seen}; {rate} assumed (prior)"
        return f"{seen}, so {rate} (with a {PRIOR_SPOT_HOURS:.0f} h prior)"

    @property
    def mean_outage_seconds(self) -> float:
        """The mean length of a stretch without spot: the time without spot over the interruptions;
        without an interruption on record, the time without spot observed (all of it, for a region
        never seen with spot), at least `UNSIGHTED_PENALTY_SECONDS`."""
        if self.interruptions_per_hour > 0 and self.share > 0:
            return 3600 * (1 - self.share) / (self.interruptions_per_hour * self.share)
        return max(UNSIGHTED_PENALTY_SECONDS, (1 - self.share) * self.observed_seconds)


UNKNOWN_RECORD = RegionRecord(UNKNOWN_RECORD_SHARE, UNKNOWN_RECORD_RATE)


@dataclass(frozen=True, slots=True)
class RegionEstimate:
    """One region considered: the time before training resumes there and the copy's price."""

    region: str
    seconds: float
    """`inf` when the region is not a candidate."""
    copy_seconds: float
    copy_usd: float
    spot: bool | None
    """The latest fresh sighting: spot seen (True), none (False), nothing fresh (None)."""
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "secondsToTrain": None if math.isinf(self.seconds) else round(self.seconds),
            "copySeconds": round(self.copy_seconds),
            "copyUsd": round(self.copy_usd, 4),
            "spotSighted": self.spot,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class RegionChoice:
    region: str
    moves: bool
    """The chosen region differs from the current one."""
    estimates: tuple[RegionEstimate, ...]
    reason: str
    moves_made: int = 0
    """The run's moves between regions before this choice."""
    moves_allowed: int | None = None
    """How many a run may make (None: no bound applies, as for a first placement)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "moves": self.moves,
            "reason": self.reason,
            "considered": [e.to_dict() for e in self.estimates],
            "regionMoves": self.moves_made,
            "regionMovesAllowed": self.moves_allowed,
        }


def arn_in_region(arn: str, region: str | None) -> str:
    """The same ARN in `region` (None, or a name that is no ARN: as it is): the stack's namesake
    queue, service jobs and state machine in a peer region."""
    if not region or not arn.startswith("arn:"):
        return arn
    parts = arn.split(":")
    parts[3] = region
    return ":".join(parts)


def region_of_arn(arn: str) -> str:
    """`arn:aws:states:us-east-1:...` -> `us-east-1` ("" for what is no ARN)."""
    parts = arn.split(":")
    return parts[3] if arn.startswith("arn:") and len(parts) > 3 else ""


def copy_estimate(checkpoint_bytes: int, source: str, target: str) -> tuple[float, float]:
    """(seconds, USD) to copy a checkpoint of `checkpoint_bytes` from `source` to `target`."""
    if source == target or checkpoint_bytes <= 0:
        return 0.0, 0.0
    gib = checkpoint_bytes / GIB
    per_gib = _CHEAPER_PAIRS.get(frozenset({source, target}), TRANSFER_USD_PER_GIB)
    return COPY_FIXED_SECONDS + COPY_SECONDS_PER_GIB * gib, per_gib * gib


def latest_sightings(sightings: Iterable[Sighting], now: datetime) -> dict[str, Sighting]:
    """The latest fresh sighting of each region (none older than `SIGHTING_FRESH_SECONDS`)."""
    latest: dict[str, Sighting] = {}
    for seen in sightings:
        age = (now - seen.at).total_seconds()
        if age > SIGHTING_FRESH_SECONDS or age < 0:
            continue
        if seen.region not in latest or seen.at >= latest[seen.region].at:
            latest[seen.region] = seen
    return latest


def region_records(sightings: Iterable[Sighting], now: datetime) -> dict[str, RegionRecord]:
    """Each region's record from the fleet's sightings of the last `RECORD_WINDOW_SECONDS`."""
    seen: dict[str, list[Sighting]] = {}
    for sighting in sightings:
        if 0 <= (now - sighting.at).total_seconds() <= RECORD_WINDOW_SECONDS:
            seen.setdefault(sighting.region, []).append(sighting)
    records: dict[str, RegionRecord] = {}
    for region, items in seen.items():
        share = sum(s.spot for s in items) / len(items)
        interruptions = sum(s.interruption for s in items)
        observed = (now - min(s.at for s in items)).total_seconds()
        spot_hours = share * observed / 3600
        # One interruption in a short record is not a rate: shrunk toward the prior.
        rate = (interruptions + UNKNOWN_RECORD_RATE * PRIOR_SPOT_HOURS) / (spot_hours + PRIOR_SPOT_HOURS)
        last_spot = max((s.at for s in items if s.spot), default=None)
        dry = [s.at for s in items if not s.spot and (last_spot is None or s.at > last_spot)]
        records[region] = RegionRecord(
            share,
            rate,
            observed,
            len(items),
            sum(s.spot for s in items),
            interruptions,
            last_spot,
            (now - min(dry)).total_seconds() if dry else 0.0,
        )
    return records


@dataclass(frozen=True, slots=True)
class Departure:
    """The run left `region` at `at` for lack of spot, after `waited_seconds` there without it."""

    region: str
    at: datetime
    waited_seconds: float


def blocked_regions(
    departures: Sequence[Departure],
    sightings: Mapping[str, Sighting],
    records: Mapping[str, RegionRecord],
    now: datetime,
) -> dict[str, str]:
    """The regions the run may not go back to yet, each with why. A region left for lack of spot
    stays blocked until spot is seen there again after the run left (a fresh sighting by the fleet)
    or `max(BLOCK_MIN_SECONDS, the wait seen there) x 2^(k-1)` passes, k its k-th departure."""
    blocked: dict[str, str] = {}
    count: dict[str, int] = {}
    for left in sorted(departures, key=lambda d: d.at):
        count[left.region] = k = count.get(left.region, 0) + 1
        seen, record = sightings.get(left.region), records.get(left.region)
        spot_since = (seen is not None and seen.spot and seen.at > left.at) or (
            record is not None and record.last_spot_at is not None and record.last_spot_at > left.at
        )
        until = left.at + timedelta(seconds=max(BLOCK_MIN_SECONDS, left.waited_seconds) * 2 ** (k - 1))
        if spot_since or now >= until:
            blocked.pop(left.region, None)
            continue
        blocked[left.region] = (
            f"left at {left.at:%H:%M} after {format_duration(round(left.waited_seconds))} without spot; "
            f"blocked until spot is seen there or {until:%H:%M}"
        )
    return blocked


def choose_region(
    *,
    situation: Situation,
    current: str,
    allowed: Sequence[str],
    sightings: Mapping[str, Sighting],
    restart_seconds: float,
    checkpoint_bytes: int,
    checkpoint_region: str,
    remaining_seconds: float,
    checkpoint_interval_seconds: float,
    records: Mapping[str, RegionRecord] | None = None,
    stuck_since: datetime | None = None,
    stuck_seconds: float = 0.0,
    blocked: Mapping[str, str] | None = None,
) -> RegionChoice:
    """Where the next spot attempt should run (`placing`: the first, or after on-demand; `stuck`:
    the current attempt waits for capacity or was interrupted in `current` since `stuck_since`).
    `sightings` are the latest fresh ones per region (`latest_sightings`); a sighting of spot in
    `current` after `stuck_since` means capacity came back there. `blocked` regions (`blocked_regions`)
    are no candidates; a stuck attempt moves only when it saves more than the copy."""
    records, blocked = records or {}, blocked or {}
    interruption_cost = restart_seconds + checkpoint_interval_seconds / 2
    estimates: list[RegionEstimate] = []
    for region in allowed:
        copy_seconds, copy_usd = copy_estimate(checkpoint_bytes, checkpoint_region, region)
        seen = sightings.get(region)
        spot = seen.spot if seen else None
        record = records.get(region, UNKNOWN_RECORD)
        seconds = restart_seconds + copy_seconds
        if situation == "stuck" and region == current and not _back(seen, stuck_since):
            outage = max(record.mean_outage_seconds, stuck_seconds)
            seconds += outage
            note = f"waits here for spot capacity (about {round(outage / 60)} min more)"
        elif region in blocked:
            seconds, note = math.inf, blocked[region]
        elif spot is False:
            seconds, note = math.inf, "no spot capacity when last seen"
        elif spot is None and record.dry_seconds > 0:  # a "no" not forgotten: the outage goes on
            outage = max(record.mean_outage_seconds, record.dry_seconds)
            seconds += outage
            note = (
                f"no spot at its last checks, {format_duration(round(record.dry_seconds))} without spot so far: "
                f"about {round(outage / 60)} min more assumed"
            )
        elif spot is None:  # nothing seen: a prior, said as one
            seconds += UNSIGHTED_PENALTY_SECONDS
            wait = f"a {round(UNSIGHTED_PENALTY_SECONDS / 60)} min wait assumed"
            late = f"not seen in the last {round(SIGHTING_FRESH_SECONDS / 60)} min"
            note = f"{late}: {wait}" if region in records else f"not yet observed: {wait} (prior)"
        else:
            note = "spot capacity seen"
        if math.isfinite(seconds):
            ahead = min(remaining_seconds, INTERRUPTION_HORIZON_SECONDS)
            seconds += ahead / 3600 * record.interruptions_per_hour * interruption_cost
            note += (
                f", {record.observed()}"
                if region in records
                else f", no record: {UNKNOWN_RECORD_RATE:.2f} interruptions per spot hour assumed (prior)"
            )
        if copy_seconds and math.isfinite(seconds):
            note += f"; checkpoint copy from {checkpoint_region}"
        estimates.append(RegionEstimate(region, seconds, copy_seconds, copy_usd, spot, note))
    order = {region: i for i, region in enumerate(allowed)}
    best = min(estimates, key=lambda e: (e.seconds, e.copy_usd, e.region != current, order[e.region]))
    if math.isinf(best.seconds):
        reason = "no allowed region has spot capacity that was seen lately"
        return RegionChoice(current, False, tuple(estimates), reason)
    reason = (
        f"{best.region}: about {round(best.seconds / 60)} min lost to restarts and waits "
        f"({best.note}{f', ${best.copy_usd:.2f}' if best.copy_usd >= 0.005 else ''})"
    )
    here = next((e for e in estimates if e.region == current), None)
    if situation == "stuck" and here is not None and best.region != current:
        saved = here.seconds - best.seconds
        if saved < best.copy_seconds:  # the copy is spent for sure, the rest is an estimate
            reason = (
                f"{current}: a move to {best.region} would save about {round(saved / 60)} min, "
                f"less than the checkpoint copy ({round(best.copy_seconds / 60)} min)"
            )
            return RegionChoice(current, False, tuple(estimates), reason)
    return RegionChoice(best.region, best.region != current, tuple(estimates), reason)


def _back(seen: Sighting | None, stuck_since: datetime | None) -> bool:
    return seen is not None and seen.spot and stuck_since is not None and seen.at > stuck_since


def transfer_usd(size_bytes: int, source: str, target: str) -> float:
    """The data transfer of `size_bytes` from `source` to `target` (S3 to another region)."""
    return copy_estimate(size_bytes, source, target)[1]
