"""How a scoring run is sized, split and kept on schedule (spotline.core.scoring.scoring_plan), each
figure checked against the formula worked out here, not read back from the code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from spotline.core.scoring.scoring_plan import (
    STARTUP_SECONDS,
    WAVES,
    InputObject,
    ShardRun,
    next_look_seconds,
    pace,
    size,
    split,
)

START = datetime(2026, 12, 5, 0, tzinfo=UTC)
DUE = START + timedelta(hours=3)
NIGHT = 40_000_000


def _size(records: int = NIGHT, rps: float = 1500, objects: int = 400, max_instances: int = 12, due: datetime = DUE):
    return size(
        records=records,
        records_per_second=rps,
        throughput_source="declared",
        start=START,
        due=due,
        max_instances=max_instances,
        headroom_percent=30,
        objects=objects,
    )


def test_forty_million_records_in_three_hours_at_1500_per_second_take_the_formulas_count() -> None:
    sizing = _size()
    # Each instance scores WAVES (6) shards in turn, each a transform job with its 8-minute start-up:
    # 10,800 s - 6 x 480 s = 7,920 s of scoring each. 40,000,000 x 1.3 = 52,000,000 records wanted:
    # 4 instances score 4 x 1,500 x 7,920 = 47,520,000 (short; one start-up each would have said
    # 40,000,000 / (1,500 x 10,320) x 1.3 = 3.36, so 4), 5 score 5 x 1,500 x 7,920 = 59,400,000.
    assert sizing.instances == sizing.needed == 5
    assert (sizing.at_risk, sizing.warning) == (None, None)
    assert sizing.to_dict()["secondsLeft"] == 7920
    assert sizing.to_dict()["startupsPerInstance"] == WAVES == 6


def test_a_run_already_split_is_resized_with_the_start_ups_its_shards_left_need() -> None:
    # 24 shards left and 2h50m (10,200 s) to go: 4 instances run 6 each (6 x 480 s = 2,880 s of
    # start-ups, 7,320 s of scoring): 4 x 1,500 x 7,320 = 43,920,000 < 52,000,000; 5 run at most
    # ceil(24 / 5) = 5 each (2,400 s, 7,800 s of scoring): 5 x 1,500 x 7,800 = 58,500,000.
    resized = size(
        records=NIGHT,
        records_per_second=1500,
        throughput_source="probe",
        start=START + timedelta(minutes=10),
        due=DUE,
        max_instances=12,
        headroom_percent=30,
        objects=400,
        shards=24,
    )
    assert (resized.needed, resized.instances, resized.startups, resized.seconds_left) == (5, 5, 5, 7800)


def test_max_instances_or_too_few_objects_bound_the_count_and_say_so() -> None:
    capped = _size(rps=150, max_instances=12)
    # 52,000,000 / (150 x 7,920) = 43.8: 44 instances, 264 shards, 6 start-ups each.
    assert (capped.needed, capped.instances) == (44, 12)
    assert capped.at_risk is not None and "maxInstances allows 12" in capped.at_risk
    one_file = _size(objects=1)
    assert one_file.instances == 1
    assert one_file.warning == (
        "the input has 1 object(s) for 4 instance(s): Batch Transform gives each instance whole objects, "
        "so at most 1 can work; split it into at least 4 objects"
    )
    assert one_file.at_risk is not None and "the input's 1 object(s) allows 1" in one_file.at_risk


def test_a_window_already_closing_is_at_risk_from_the_start() -> None:
    sizing = _size(due=START + timedelta(seconds=STARTUP_SECONDS - 60))
    assert sizing.instances == 12
    assert sizing.at_risk == "the window closes 1 min before a transform job could start scoring"


def test_shards_cover_every_object_once_balanced_by_bytes() -> None:
    objects = [InputObject(f"pairs/part-{i:04d}.csv", 1000 + 37 * (i % 11)) for i in range(400)]
    shards = split(objects, 4)
    assert len(shards) == 4 * WAVES
    assert sorted(k for s in shards for k in s.keys) == sorted(o.key for o in objects)
    sizes = [s.size for s in shards]
    assert max(sizes) - min(sizes) <= max(o.size for o in objects)
    assert [s.index for s in shards] == list(range(len(shards)))
    assert len(split(objects[:2], 4)) == 2  # never more shards than objects


def _shards(count: int, size: int, done: int, started: int, minutes_each: float) -> list[ShardRun]:
    """`done` shards finished one after another at `minutes_each`, `started` running since START."""
    runs = []
    for index in range(count):
        if index < done:
            begin = START + timedelta(minutes=minutes_each * (index // 4))
            runs.append(ShardRun(index, size, begin, begin + timedelta(minutes=minutes_each)))
        elif index < done + started:
            runs.append(ShardRun(index, size, START + timedelta(minutes=minutes_each * (done // 4))))
        else:
            runs.append(ShardRun(index, size))
    return runs


def test_on_pace_the_run_keeps_its_instances_busy_and_starts_no_more() -> None:
    # 12 shards of 3.33 M records each; at 1500/s a shard takes 37 min: 4 finished, 4 running.
    shards = _shards(12, 1000, done=4, started=4, minutes_each=NIGHT / 12 / 1500 / 60)
    now = START + timedelta(minutes=NIGHT / 12 / 1500 / 60)
    decided = pace(shards, records=NIGHT, records_per_second=1500, target=4, max_instances=12, now=now, due=DUE)
    assert (decided.target, decided.start, decided.at_risk) == (4, 0, None)
    assert decided.measured_records_per_second == pytest.approx(1500)


def test_a_slow_night_adds_instances_for_what_is_left() -> None:
    # Half the declared throughput: a shard takes 74 min, and the 8 left need more than 4 instances.
    minutes = NIGHT / 12 / 750 / 60
    shards = _shards(12, 1000, done=4, started=4, minutes_each=minutes)
    now = START + timedelta(minutes=minutes)
    decided = pace(shards, records=NIGHT, records_per_second=1500, target=4, max_instances=12, now=now, due=DUE)
    assert decided.measured_records_per_second == pytest.approx(750)
    assert decided.target > 4 and decided.start == min(4, decided.target - 4) and decided.at_risk is None
    assert decided.projected_end is not None and decided.projected_end <= DUE
    # A shard takes start-up plus 74 min: the 4 running end then, so the 4 waiting must start now.
    shard = timedelta(seconds=STARTUP_SECONDS + NIGHT / 12 / 750)
    assert decided.projected_end == now + shard


def test_a_running_shard_slower_than_it_should_be_lowers_the_pace_before_it_ends() -> None:
    # 20 shards: 4 done at 1500/s (22 min each); the 4 running have run 15 min past their 22, so
    # tonight's pace is at most 2/3 of it, and the 12 waiting would not end by the close on 4 instances.
    minutes = NIGHT / 20 / 1500 / 60
    shards = _shards(20, 1000, done=4, started=4, minutes_each=minutes)
    now = START + timedelta(minutes=2 * minutes + 15)
    on_pace = pace(
        shards,
        records=NIGHT,
        records_per_second=1500,
        target=4,
        max_instances=12,
        now=START + timedelta(minutes=2 * minutes),
        due=DUE,
    )
    assert on_pace.target == 4
    decided = pace(shards, records=NIGHT, records_per_second=1500, target=4, max_instances=12, now=now, due=DUE)
    assert decided.target > 4 and decided.start == decided.target - 4  # before the running ones end


def test_when_even_max_instances_cannot_make_it_the_run_is_at_risk_with_the_figures() -> None:
    minutes = NIGHT / 12 / 300 / 60  # a fifth of the declared throughput
    shards = _shards(12, 1000, done=4, started=4, minutes_each=minutes)
    now = START + timedelta(minutes=minutes)
    decided = pace(shards, records=NIGHT, records_per_second=1500, target=4, max_instances=5, now=now, due=DUE)
    assert decided.target == 5 and decided.start == 1
    assert decided.at_risk is not None
    assert decided.at_risk.startswith("13,333,333 records in 4 shard(s) not started, at 300/s per instance, end about ")
    assert decided.at_risk.endswith(" even on maxInstances (5)")


def _look(shards: list[ShardRun], now: datetime, due: datetime, projected: datetime | None = None) -> int:
    # 1,000 records per byte-unit of size: a shard of size 1 at 1 record/s takes 1,000 s.
    total = sum(s.size for s in shards) or 1
    return next_look_seconds(
        shards, records=1000 * total, records_per_second=1.0, now=now, due=due, projected_end=projected
    )


def test_a_run_looks_when_a_shard_should_end_and_spreads_its_looks_over_the_rest_otherwise() -> None:
    week = START + timedelta(days=7)
    running = ShardRun(0, 3, started_at=START)  # 3,000 s
    pending = ShardRun(1, 3)
    assert _look([running, pending], START, week) == 3000  # the instance frees up then: the next shard starts
    assert _look([running, pending], START + timedelta(seconds=2950), week) == 120  # never closer than 2 min
    # Nothing about to end: 200 looks over what is left (a week: 3,024 s), at most an hour apart.
    long = ShardRun(0, 1000, started_at=START)  # 1,000,000 s
    assert _look([long], START, week) == round(7 * 86400 / 200)
    assert _look([long], START, START + timedelta(days=30)) == 3600
    assert _look([long], START, DUE) == 120  # 3 h left: every 2 minutes, as before
    # A shard overdue by 2 h is looked at again after 30 min (a quarter), not every 2 minutes.
    assert _look([running], START + timedelta(seconds=3000 + 7200), week) == 1800
    # Late: as many looks over the time it is late, so a long-late run stays within the history limit.
    assert _look([long], DUE + timedelta(days=2), DUE, projected=DUE + timedelta(days=2)) == round(2 * 86400 / 200)


def test_a_week_of_looks_stays_far_under_the_history_limit() -> None:
    # One shard scoring for 6 days, due in 7: the looks a run makes, about 9 history events each.
    due, shard, now, looks = START + timedelta(days=7), ShardRun(0, 518, started_at=START), START, 0
    end = START + timedelta(seconds=518_000)
    while now < end:
        now += timedelta(seconds=_look([shard], now, due, projected=end))
        looks += 1
    assert looks * 9 < 25_000 / 4, looks  # every 2 minutes: 4,317 looks, 38,853 events
