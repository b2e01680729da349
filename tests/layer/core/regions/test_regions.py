"""Where the next spot attempt runs (spotline.core.regions.regions) and a job's resources in another
region (spotline.core.regions.replicas)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from state_samples import checkpoint_copy_state, final_status_state, previous_attempt_state

from builders import spec_of
from spotline.core.billing.outcome import checkpoint_copies, figures
from spotline.core.regions.regions import (
    COPY_FIXED_SECONDS,
    GIB,
    SIGHTING_FRESH_SECONDS,
    RegionRecord,
    Sighting,
    choose_region,
    copy_estimate,
    latest_sightings,
    region_records,
)
from spotline.core.regions.replicas import place, replica_of
from spotline.core.spec.model import JobSpec
from spotline.core.state import AttemptRecord
from spotline.core.state.execution_state import JobSummary

NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
REGIONS = ("us-east-1", "us-east-2", "us-west-2")


def _seen(region: str, spot: bool, minutes_ago: float = 5) -> Sighting:
    return Sighting(region, NOW - timedelta(minutes=minutes_ago), spot)


def test_a_copy_between_regions_takes_time_and_money_by_size_and_nothing_in_place() -> None:
    seconds, usd = copy_estimate(10 * GIB, "us-east-1", "us-west-2")
    assert seconds == pytest.approx(COPY_FIXED_SECONDS + 100) and usd == pytest.approx(0.20)
    assert copy_estimate(10 * GIB, "us-east-1", "us-east-2")[1] == pytest.approx(0.10)
    assert copy_estimate(10 * GIB, "us-east-1", "us-east-1") == (0.0, 0.0)
    assert copy_estimate(0, "us-east-1", "us-west-2") == (0.0, 0.0)


def test_only_fresh_sightings_count_and_the_latest_wins() -> None:
    old = Sighting("us-west-2", NOW - timedelta(seconds=SIGHTING_FRESH_SECONDS + 1), True)
    latest = latest_sightings([old, _seen("us-east-1", True, 20), _seen("us-east-1", False, 2)], NOW)
    assert set(latest) == {"us-east-1"} and latest["us-east-1"].spot is False


def test_a_regions_record_is_its_share_of_spot_and_interruptions_per_spot_hour_over_a_day() -> None:
    hourly = [_seen("us-east-1", k % 4 != 0, 60 * k) for k in range(24)]  # a quarter without spot
    interrupted = [Sighting("us-east-1", NOW - timedelta(hours=h), False, interruption=True) for h in (1.5, 7.5)]
    records = region_records([*hourly, *interrupted, _seen("us-west-2", True, 25 * 60)], NOW)
    assert set(records) == {"us-east-1"}  # us-west-2's sighting is older than a day
    record = records["us-east-1"]
    assert record.share == pytest.approx(18 / 26)
    assert record.observed_seconds == 23 * 3600  # from the first sighting of the day
    # two interruptions in 15.9 spot hours, shrunk toward the 0.25/h prior weighted as 4 spot hours
    assert record.interruptions_per_hour == pytest.approx((2 + 1) / (23 * 18 / 26 + 4))
    assert record.mean_outage_seconds == pytest.approx(3600 * (8 / 26) / (record.interruptions_per_hour * 18 / 26))


COMMON = {"restart_seconds": 1200, "checkpoint_interval_seconds": 900, "remaining_seconds": 4 * 3600}


def test_placing_goes_where_spot_was_seen_and_the_record_is_best() -> None:
    sightings = latest_sightings([_seen(r, True) for r in REGIONS], NOW)
    choice = choose_region(
        situation="placing",
        current="us-east-1",
        allowed=REGIONS,
        sightings=sightings,
        checkpoint_bytes=0,
        checkpoint_region="us-east-1",
        records={r: RegionRecord(0.9, rate) for r, rate in zip(REGIONS, (0.4, 0.2, 0.05), strict=True)},
        **COMMON,
    )
    assert choice.region == "us-west-2" and choice.moves
    assert [e.region for e in choice.estimates] == list(REGIONS)
    # 20 min restart + the next hour (of 4 h left) x 0.05 interruptions an hour x (20 + 7.5) min
    assert choice.reason.startswith("us-west-2: about 21 min lost to restarts and waits (spot capacity seen, 0.05")


def test_a_record_is_charged_for_the_next_hour_of_work_or_what_is_left_not_for_all_of_it() -> None:
    """A day's rate says little about the hours after the next (capacity comes in bursts): a region
    with 2.5 interruptions per spot hour is charged 1 h x 2.5 x 27.5 min, not 4 h worth."""
    sightings = latest_sightings([_seen(r, True) for r in REGIONS], NOW)
    records = {r: RegionRecord(0.9, rate) for r, rate in zip(REGIONS, (2.5, 0.5, 0.5), strict=True)}
    args = {
        "situation": "placing",
        "current": "us-east-1",
        "allowed": REGIONS,
        "sightings": sightings,
        "checkpoint_bytes": 0,
        "checkpoint_region": "us-east-1",
        "records": records,
        "restart_seconds": 1200,
        "checkpoint_interval_seconds": 900,
    }
    four_hours = choose_region(remaining_seconds=4 * 3600, **args)  # type: ignore[arg-type]
    assert [e.seconds for e in four_hours.estimates] == pytest.approx([1200 + 2.5 * 1650, *[1200 + 0.5 * 1650] * 2])
    half_hour = choose_region(remaining_seconds=1800, **args)  # type: ignore[arg-type]
    assert [e.seconds for e in half_hour.estimates] == pytest.approx([1200 + 1.25 * 1650, *[1200 + 0.25 * 1650] * 2])


def test_a_stuck_attempt_moves_to_a_region_where_spot_was_seen_and_pays_the_copy() -> None:
    sightings = latest_sightings([_seen("us-east-2", False), _seen("us-west-2", True)], NOW)
    choice = choose_region(
        situation="stuck",
        current="us-east-1",
        allowed=REGIONS,
        sightings=sightings,
        checkpoint_bytes=10 * GIB,
        checkpoint_region="us-east-1",
        stuck_since=NOW - timedelta(minutes=10),
        **COMMON,
    )
    assert choice.region == "us-west-2" and choice.moves
    by_region = {e.region: e for e in choice.estimates}
    assert math.isinf(by_region["us-east-2"].seconds)  # no spot when last seen
    assert by_region["us-east-1"].note.startswith("waits here for spot capacity")
    assert by_region["us-west-2"].copy_usd == pytest.approx(0.20)
    assert by_region["us-west-2"].to_dict()["copySeconds"] == 130
    assert "checkpoint copy from us-east-1" in choice.reason


def test_a_stuck_attempt_stays_when_no_region_has_spot_or_capacity_came_back_where_it_is() -> None:
    nowhere = choose_region(
        situation="stuck",
        current="us-east-1",
        allowed=REGIONS,
        sightings=latest_sightings([_seen(r, False) for r in REGIONS], NOW),
        checkpoint_bytes=GIB,
        checkpoint_region="us-east-1",
        stuck_since=NOW - timedelta(minutes=10),
        **COMMON,
    )
    assert nowhere.region == "us-east-1" and not nowhere.moves
    assert "waits here for spot capacity (about 240 min more)" in nowhere.reason  # no record: 1/2 share, 0.25/h
    back = choose_region(
        situation="stuck",
        current="us-east-1",
        allowed=REGIONS,
        sightings=latest_sightings([_seen("us-east-1", True, 1), _seen("us-west-2", True)], NOW),
        checkpoint_bytes=GIB,
        checkpoint_region="us-east-1",
        stuck_since=NOW - timedelta(minutes=10),
        **COMMON,
    )
    assert back.region == "us-east-1" and not back.moves  # no copy: it wins on time


MANIFEST = """
apiVersion: spotline/v1
kind: TrainingJob
metadata: {name: ranker, team: search}
spec:
  image: 123456789012.dkr.ecr.us-east-1.amazonaws.com/search/ranker:1.0
  roleArn: arn:aws:iam::123456789012:role/search-training
  resources: {instanceType: ml.g5.xlarge}
  inputs: [{name: train, s3Uri: "s3://search-data/train/"}]
  output: {s3Uri: "s3://search-data/output/"}
  checkpoint: {s3Uri: "s3://search-ckpt/ranker/"}
  capacity: {regions: [us-east-1, us-west-2]}
"""
REPLICAS = {
    "s3://search-data/": {"us-west-2": "s3://search-data-usw2/"},
    "s3://search-data/train/": {"us-west-2": "s3://search-train-usw2/"},
    "s3://search-ckpt/": {"us-west-2": "s3://search-ckpt-usw2/"},
    "123456789012.dkr.ecr.us-east-1.amazonaws.com/search/": {
        "us-west-2": "123456789012.dkr.ecr.us-west-2.amazonaws.com/search/"
    },
}


def parse_manifest(text: str) -> JobSpec:
    return spec_of(text, NOW)


def test_a_job_is_placed_in_another_region_through_its_teams_replicas_the_longest_prefix_first() -> None:
    spec = parse_manifest(MANIFEST)
    assert spec.regions == ("us-east-1", "us-west-2")
    placed, problems = place(spec, "us-west-2", "us-east-1", REPLICAS)
    assert problems == [] and placed is not None
    assert placed.uris == {
        "spec.inputs[0].s3Uri": "s3://search-train-usw2/",
        "spec.output.s3Uri": "s3://search-data-usw2/output/",
        "spec.checkpoint.s3Uri": "s3://search-ckpt-usw2/ranker/",
        "spec.image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/search/ranker:1.0",
    }
    home, _ = place(spec, "us-east-1", "us-east-1", {})
    assert home is not None and home.uris["spec.image"] == spec.image


def test_a_resource_without_a_replica_names_its_field_and_the_region() -> None:
    spec = parse_manifest(MANIFEST)
    replicas = {k: v for k, v in REPLICAS.items() if not k.startswith("s3://search-ckpt/")}
    placed, problems = place(spec, "us-west-2", "us-east-1", replicas)
    assert placed is None
    assert [(p.path, p.message) for p in problems] == [
        ("spec.checkpoint.s3Uri", "s3://search-ckpt/ranker/ has no replica in us-west-2 (team policy replicas)")
    ]
    assert replica_of("s3://other/x", "us-west-2", REPLICAS) is None


def test_a_runs_checkpoint_copies_are_counted_and_their_transfer_is_in_its_cost() -> None:
    spec = parse_manifest(MANIFEST)
    copy = checkpoint_copy_state(bytes=10 * GIB, seconds=12.5, fromRegion="us-east-1", toRegion="us-west-2")
    status = final_status_state(billableSeconds=3600, trainingSeconds=3600, interruptions=0)
    attempts = [
        previous_attempt_state(capacity="spot", finalStatus=status),
        previous_attempt_state(capacity="spot", finalStatus=status, checkpointCopy=copy),
        previous_attempt_state(capacity="spot", finalStatus=status, checkpointCopy={**copy, "toRegion": "us-east-2"}),
    ]
    copies = checkpoint_copies([AttemptRecord.from_state(a) for a in attempts])
    assert copies == {"count": 2, "bytes": 20 * GIB, "seconds": 25.0, "usd": pytest.approx(0.30)}
    with_copies = figures(JobSummary.of(spec), [AttemptRecord.from_state(a) for a in attempts], region="us-east-1")
    without = figures(
        JobSummary.of(spec),
        [AttemptRecord.from_state({k: v for k, v in a.items() if k != "checkpointCopy"}) for a in attempts],
        region="us-east-1",
    )
    assert without.checkpoint_copies is None and with_copies.checkpoint_copies == copies
    assert without.cost_usd is not None and with_copies.cost_usd == pytest.approx(without.cost_usd + 0.30)
