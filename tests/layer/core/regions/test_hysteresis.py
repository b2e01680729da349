"""Region moves that learn (issue 48): a "no" is not forgotten, a region the run left is blocked
until spot is seen there or its time passes, a move must save more than the copy, and a prior
is said as one (spotline.core.regions.regions)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from spotline.core.regions.regions import (
    GIB,
    Departure,
    RegionRecord,
    Sighting,
    blocked_regions,
    choose_region,
    latest_sightings,
    region_records,
)

NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
REGIONS = ("us-east-1", "us-west-2")
COMMON = {"restart_seconds": 1200, "checkpoint_interval_seconds": 900, "remaining_seconds": 4 * 3600}


def _at(minutes_ago: float) -> datetime:
    return NOW - timedelta(minutes=minutes_ago)


def test_a_record_knows_when_spot_was_last_seen_and_how_long_it_has_been_dry() -> None:
    seen = [Sighting("us-east-1", _at(m), m > 90) for m in range(180, 0, -10)]  # spot until 1h40m ago
    record = region_records(seen, NOW)["us-east-1"]
    assert record.last_spot_at == _at(100)
    assert record.dry_seconds == 90 * 60  # from the first check without spot after it
    never = region_records([Sighting("us-west-2", _at(m), False) for m in (60, 30)], NOW)["us-west-2"]
    assert (never.last_spot_at, never.dry_seconds) == (None, 3600)
    # no spot hour behind the rate: the prior, said as one
    assert (
        never.observed()
        == "seen: 0 interruptions in 1h, 0 of 2 checks with spot; 0.25 interruptions per spot hour assumed (prior)"
    )
    assert "prior" not in region_records(seen, NOW)["us-east-1"].observed().split(", so")[0]


def test_one_interruption_in_an_hour_of_spot_is_shrunk_toward_the_prior() -> None:
    seen = [Sighting("us-west-2", _at(m), True) for m in range(75, 5, -5)]
    seen.append(Sighting("us-west-2", _at(4), False, interruption=True))
    record = region_records(seen, NOW)["us-west-2"]
    assert 0.35 < record.interruptions_per_hour < 0.45  # not 1 interruption / 1.2 h = 0.85/h


def test_a_region_whose_last_checks_saw_no_spot_pays_the_rest_of_that_outage_not_a_flat_prior() -> None:
    # us-west-2 had no spot at its checks for 3h40m; its last check is older than 30 min.
    dry = [Sighting("us-west-2", _at(m), False) for m in range(220, 40, -10)]
    records = region_records(dry, NOW)
    choice = choose_region(
        situation="stuck",
        current="us-east-1",
        allowed=REGIONS,
        sightings=latest_sightings(dry, NOW),
        checkpoint_bytes=0,
        checkpoint_region="us-east-1",
        records={"us-east-1": RegionRecord(0.9, 0.1), **records},  # about 67 min more here
        stuck_since=_at(40),
        stuck_seconds=40 * 60,
        **COMMON,
    )
    assert not choice.moves
    west = choice.estimates[1]
    assert west.spot is None and west.note.startswith("no spot at its last checks, 3h40m without spot so far")
    assert west.seconds > 3 * 3600 > choice.estimates[0].seconds


def test_a_blocked_region_is_no_candidate_and_says_why() -> None:
    choice = choose_region(
        situation="placing",
        current="us-east-1",
        allowed=REGIONS,
        sightings={},
        checkpoint_bytes=0,
        checkpoint_region="us-east-1",
        blocked={"us-east-1": "left at 11:00 after 40m without spot; blocked until spot is seen there or 12:40"},
        **COMMON,
    )
    assert choice.region == "us-west-2"
    assert math.isinf(choice.estimates[0].seconds) and choice.estimates[0].note.startswith("left at 11:00")


def test_a_move_must_save_more_than_the_checkpoint_copy() -> None:
    args = {
        "situation": "stuck",
        "current": "us-east-1",
        "allowed": REGIONS,
        "sightings": {},
        "checkpoint_bytes": 60 * GIB,
        "checkpoint_region": "us-east-1",
        "records": {r: RegionRecord(0.9, 0.0) for r in REGIONS},
        "stuck_since": _at(35),
        **COMMON,
    }
    # here: restart + 35 min waited; there: restart + copy (30 s + 600 s) + 20 min assumed: saves 4.5 min
    near = choose_region(stuck_seconds=35 * 60, **args)  # type: ignore[arg-type]
    assert not near.moves and near.region == "us-east-1"
    assert near.reason == (
        "us-east-1: a move to us-west-2 would save about 4 min, less than the checkpoint copy (10 min)"
    )
    # 42 min waited: saves 11.5 min, more than the copy's 10.5
    far = choose_region(stuck_seconds=42 * 60, **args)  # type: ignore[arg-type]
    assert far.moves and far.region == "us-west-2"


def test_a_region_left_is_blocked_until_spot_is_seen_there_or_its_time_passes_doubling_at_each_return() -> None:
    left = Departure("us-east-1", _at(30), 40 * 60)
    blocked = blocked_regions([left], {}, {}, NOW)
    assert blocked == {
        "us-east-1": "left at 11:30 after 40m without spot; blocked until spot is seen there or 12:30"
    }  # max(1 h, the 40 min seen)
    assert blocked_regions([left], {}, {}, NOW + timedelta(minutes=30)) == {}
    # spot seen there by the fleet since the run left: open again at once
    assert blocked_regions([left], {"us-east-1": Sighting("us-east-1", _at(5), True)}, {}, NOW) == {}
    assert blocked_regions([left], {"us-east-1": Sighting("us-east-1", _at(5), False)}, {}, NOW) == blocked
    record = RegionRecord(0.5, 0.1, last_spot_at=_at(10))
    assert blocked_regions([left], {}, {"us-east-1": record}, NOW) == {}
    # the second time the run leaves it: twice as long (2 x max(1 h, 90 min))
    again = Departure("us-east-1", _at(10), 90 * 60)
    (why,) = blocked_regions([left, again], {}, {}, NOW).values()
    assert why.endswith("or 14:50")
