"""The simulation across regions: the optimum, moves and their copies, the policies, the grid and
`spotline simulate --regions --json` (on trace files the tests write)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from spotline_dev.cli.entry import main as cli_main
from spotline_dev.research.simulate.model import Command, Job, View, simulate
from spotline_dev.research.simulate.optimum import optimal_costs, optimal_costs_across_regions
from spotline_dev.research.simulate.regions import (
    EagerNextRegion,
    GreedyAcrossRegions,
    SpotlineAcrossRegions,
    region_of_zone,
    region_sets,
)
from spotline_dev.research.trace_series import read_trace_folder

START = datetime(2023, 2, 15, tzinfo=UTC)
GIB = 1024**3


def _job(**changes: object) -> Job:
    values: dict[str, object] = {
        "work": 240,
        "deadline": 480,
        "overhead": 20,
        "checkpoint": 15,
        "step_seconds": 60,
        "copy": 3,
        "copy_cost": 0.05,
    }
    values.update(changes)
    return Job(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(12))
def test_a_second_region_with_the_same_capacity_buys_nothing(seed: int) -> None:
    """Moving between two regions that have spot at the same moments saves nothing and costs a
    copy: the optimum is the one region's (which brute force checks, test_optimum.py)."""
    rng = np.random.default_rng(seed)
    d, work = int(rng.integers(0, 4)), int(rng.integers(3, 12))
    job = Job(
        work=work,
        deadline=work + d + int(rng.integers(0, 15)),
        overhead=d,
        checkpoint=3,
        step_seconds=600,
        copy=int(rng.integers(0, 3)),
        copy_cost=0.05,
    )
    windows = rng.random((3, job.deadline + 2)) < 0.6
    one = optimal_costs(job, windows, horizon=job.deadline)
    twice = optimal_costs_across_regions(job, np.stack([windows, windows], axis=1), horizon=job.deadline)
    assert np.allclose(twice, one)
    other = optimal_costs_across_regions(job, np.stack([windows, ~windows], axis=1), horizon=job.deadline)
    assert np.all(other <= one + 1e-9)  # a region with other moments of spot never makes it dearer


def test_the_optimum_across_regions_pays_the_copy_of_a_move() -> None:
    # Region 0 has spot for the first half only, region 1 for the second half only: finishing on
    # spot needs one move, with its copy (3 steps) and its price.
    # 2 start-up + 6 training in region 0, then 3 copy + 2 start-up + 4 training in region 1: 17.
    job = Job(work=10, deadline=17, overhead=2, checkpoint=1, step_seconds=600, copy=3, copy_cost=0.05)
    first = np.r_[np.ones(8, bool), np.zeros(40, bool)]
    second = ~first
    best = optimal_costs_across_regions(job, np.stack([first, second]))[job.deadline]
    spot_step = job.spot_price * job.step_hours
    training = job.work * spot_step
    starts = 2 * job.billed_start * spot_step
    assert best == pytest.approx(training + starts + job.copy_cost)
    assert optimal_costs(job, second)[job.deadline] > best  # region 1 alone needs on-demand


def test_a_move_copies_the_checkpoint_before_the_attempt_starts() -> None:
    job = _job()

    class MoveAt60:
        name, wakes_on_events = "move", False

        def decide(self, view: View) -> Command:
            return Command("spot", view.t + 1, region=0 if view.t < 60 else 1)

    outcome = simulate(job, np.ones((2, job.deadline), bool), MoveAt60())
    assert outcome.regions == (0, 1) and outcome.moves == 1 and outcome.copies == 1
    # 20 start-up + 240 work + a stop at 60 (saved), then 3 copy + 20 start-up: done at 283
    assert outcome.finished_at == 60 + 3 + 20 + (240 - 40)
    spot_step = job.spot_price * job.step_hours
    assert outcome.cost == pytest.approx((240 + 2 * job.billed_start) * spot_step + job.copy_cost)


def test_a_move_before_any_checkpoint_copies_nothing() -> None:
    job = _job()

    class MoveAt5:
        name, wakes_on_events = "move", False

        def decide(self, view: View) -> Command:
            return Command("spot", view.t + 1, region=0 if view.t < 5 else 1)

    outcome = simulate(job, np.ones((2, job.deadline), bool), MoveAt5())
    assert outcome.copies == 0 and outcome.finished_at == 5 + 20 + 240


def test_spotline_starts_where_the_fleet_saw_spot_and_meets_the_deadline_without_on_demand() -> None:
    job = _job()
    windows = np.stack([np.zeros(job.deadline, bool), np.ones(job.deadline, bool)])  # none at home
    policy = SpotlineAcrossRegions(job, START, ("us-east-1", "us-west-2"), 10 * GIB)
    outcome = simulate(job, windows, policy)
    assert outcome.met and outcome.on_demand_steps == 0
    assert outcome.regions == (1,)
    assert policy.choices[0].startswith("us-west-2: about 20 min lost to restarts and waits (spot capacity seen")


def test_spotline_moves_a_stuck_attempt_to_a_region_with_spot_and_copies_its_checkpoint() -> None:
    job = _job()
    home = np.r_[np.ones(100, bool), np.zeros(job.deadline - 100, bool)]  # spot at home for 100 steps
    away = np.r_[np.zeros(90, bool), np.ones(job.deadline - 90, bool)]
    policy = SpotlineAcrossRegions(job, START, ("us-east-1", "us-west-2"), 10 * GIB)
    outcome = simulate(job, np.stack([home, away]), policy)
    assert outcome.met and outcome.on_demand_steps == 0
    assert outcome.regions == (0, 1) and outcome.copies == 1
    assert any(
        reason.startswith("us-west-2:") and "checkpoint copy from us-east-1" in reason for reason in policy.choices
    )


def test_spotline_stays_and_falls_back_when_no_region_has_spot() -> None:
    job = _job(deadline=300)
    policy = SpotlineAcrossRegions(job, START, ("us-east-1", "us-west-2"), 10 * GIB)
    outcome = simulate(job, np.zeros((2, job.deadline), bool), policy)
    assert outcome.met and outcome.moves == 0 and outcome.on_demand_steps == job.work


def test_eager_next_region_moves_at_each_preemption_and_knows_no_deadline() -> None:
    job = _job(deadline=300)
    flaky = np.tile(np.r_[np.ones(30, bool), np.zeros(30, bool)], 5)
    outcome = simulate(job, np.stack([flaky, np.roll(flaky, 30)]), EagerNextRegion(2))
    assert outcome.moves >= 3 and outcome.on_demand_steps == 0


def test_greedy_across_regions_moves_to_capacity_it_sees() -> None:
    job = _job()
    home = np.r_[np.ones(50, bool), np.zeros(job.deadline - 50, bool)]
    outcome = simulate(job, np.stack([home, np.ones(job.deadline, bool)]), GreedyAcrossRegions())
    assert outcome.met and outcome.on_demand_steps == 0 and outcome.regions == (0, 1)


def test_zones_name_their_regions() -> None:
    assert region_of_zone("us-west-2b") == "us-west-2"
    assert region_of_zone("us-gov-west-1a") == "us-gov-west-1"
    assert region_of_zone("us-west-2") is None
    assert region_of_zone("zone-x") is None


def _write_traces(folder: Path, spot: dict[str, list[int]]) -> Path:
    root = folder / "1-node" / "aws-02-15-2023"
    root.mkdir(parents=True)
    for zone, data in spot.items():
        (root / f"{zone}_v100_1.json").write_text(json.dumps({"metadata": {"gap_seconds": 300}, "data": data}))
    return folder / "1-node"


def test_a_region_has_spot_when_any_of_its_zones_has(tmp_path: Path) -> None:
    folder = _write_traces(
        tmp_path, {"us-east-1a": [1, 0, 0, 1] * 12, "us-east-1b": [0, 0, 1, 1] * 12, "us-west-2a": [1] * 48}
    )
    (regions,) = region_sets(read_trace_folder(folder).traces)
    assert regions.regions == ("us-east-1", "us-west-2")
    flags = regions.availability(300, 0, 8)
    assert flags[0].tolist() == [True, False, True, True] * 2
    assert flags[1].all()


def test_spotline_simulate_regions_json_keeps_the_shape_and_adds_single_regions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    day = 288  # 5-minute ticks: us-west-2 loses spot for six hours a day, while us-east-1 has it
    west = [0 if 100 <= k % day < 172 else 1 for k in range(3 * day)]
    east = [1 if 90 <= k % day < 200 else 0 for k in range(3 * day)]
    spot = {"us-east-1a": east, "us-west-2a": west}
    folder = _write_traces(tmp_path, spot)
    argv = ["simulate", "--traces", str(folder), "--regions", "--out", str(tmp_path / "out"), "--jobs", "1"]
    grid = ["--work-hours", "4", "--slack", "50", "100", "--start-every-hours", "3", "--json"]
    assert cli_main([*argv, *grid]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["grid"]["regions"] == ["us-east-1", "us-west-2"]
    assert set(document["policies"]) == {
        "on-demand",
        "greedy",
        "uniform",
        "eager-next-region",
        "eager-next-region-fixed",
        "skynomad",
        "spotline",
    }
    figures = {"runs", "meanOverOptimum", "meanOverSafeOptimum", "worstOverOptimum", "meanOverOnDemand"}
    figures |= {"missed", "missedFeasible"}
    assert set(document["policies"]["spotline"]) == figures
    assert set(document["singleRegion"]) == {"us-east-1", "us-west-2"}
    assert set(document["singleRegion"]["us-west-2"]["policies"]["spotline"]) == figures
    assert document["policies"]["spotline"]["missedFeasible"] == 0
    assert document["safeOptimum"]["meanOverOptimum"] >= 1.0
    assert document["singleRegion"]["us-west-2"]["safeOptimum"]["meanOverOptimum"] >= 1.0
    across = document["policies"]["spotline"]["meanOverOnDemand"]
    assert across < min(r["policies"]["spotline"]["meanOverOnDemand"] for r in document["singleRegion"].values())
    assert document["whereSpotCanStart"]["jobs"] == document["grid"]["jobs"]  # slack 2h and 4h: all of them
    assert (tmp_path / "out" / "runs.csv").read_text().splitlines()[0].endswith(",moves")


def test_spotline_moves_between_two_regions_at_most_four_times_when_their_spot_alternates() -> None:
    # Spot an hour at home, then an hour in us-west-2, and so on: each wait is an hour at most.
    job = _job(deadline=1440)
    home = (np.arange(job.deadline) // 60) % 2 == 0
    policy = SpotlineAcrossRegions(job, START, ("us-east-1", "us-west-2"), 10 * GIB)
    outcome = simulate(job, np.stack([home, ~home]), policy)
    assert outcome.met and outcome.on_demand_steps == 0
    assert outcome.moves == 4 and outcome.regions == (0, 1, 0, 1, 0)  # the bound: 4 x (2 regions - 1)


def test_spotline_counts_no_copy_in_its_restart_before_anything_is_saved() -> None:
    """As CheckTrainingStatus: the copy a move would add is the checkpoint prefix's (none before the
    first save: `copy_estimate` of 0 bytes is 0 s), so a first attempt keeps the slack a run in one
    region has."""
    job = _job()
    policy = SpotlineAcrossRegions(job, START, ("us-east-1", "us-west-2"), 10 * GIB)
    outcome = simulate(job, np.ones((2, job.deadline), bool), policy)
    assert outcome.met
    restarts = [(clock.progress > 0, clock.restart_overhead_seconds) for clock in policy.clocks]
    assert (False, 20 * 60.0) in restarts
    assert (True, (20 + 3) * 60.0) in restarts
    assert all(seconds == (23 if saved else 20) * 60.0 for saved, seconds in restarts)
