"""ROSS (arXiv 2601.14612) as a peer: the injected on-demand interval by hand, seeds, the grid."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from devtools.research.simulate.fixture_traces import START, fixture_logs, flags, job, random_trace
from spotline_dev.cli.entry import main as cli_main
from spotline_dev.research.simulate import GridSpec, run_grid, simulate, summarize
from spotline_dev.research.simulate.policies import POLICIES, RANDOMIZED, run_policy
from spotline_dev.research.simulate.ross import Ross, critical_ratio, draw
from spotline_dev.research.traces import all_traces, read_logs


def _tight() -> tuple[int, int]:
    """K = 4 (sqrt K = 2, c = 5/3): 60 steps of work, a deadline of 100 = c x 60, no restart."""
    return 60, 100


def test_the_critical_ratio_is_sqrt_k_s() -> None:
    assert critical_ratio(4.0) == pytest.approx(5 / 3)
    assert critical_ratio(1 / 0.3) == pytest.approx(1.6461, abs=1e-4)


def test_at_the_critical_ratio_the_interval_is_drawn_at_once_and_costs_sqrt_k_on_steady_spot() -> None:
    work, deadline = _tight()
    j = job(work, deadline, overhead=0, checkpoint=5, spot_price=0.25)
    # xi1 = 0, W1 = 60, delta = 60 / 3 = 20, start = floor(0.5 x (60 - 20)) = 20: on-demand [20, 40).
    outcome = simulate(j, np.ones(deadline, bool), Ross(j, 0.5))
    assert outcome.met and outcome.switched_at == 20
    assert (outcome.spot_steps, outcome.on_demand_steps) == (40, 20)
    optimum = work * 0.25 * j.step_hours
    assert outcome.cost == pytest.approx(2 * optimum)  # sqrt(K) x the optimum: the always-spot adversary


def test_with_no_spot_the_job_waits_in_warm_up_injects_then_runs_on_demand_from_the_last_safe_moment() -> None:
    j = job(60, 200, overhead=0, checkpoint=5, spot_price=0.25)
    # Waits until xi1 = 200 - c x 60 = 100; interval [100 + floor(0.5 x 40), + 20) = [120, 140);
    # then waits again until the last safe moment 200 - 40 = 160.
    outcome = simulate(j, np.zeros(200, bool), Ross(j, 0.5))
    assert outcome.met and outcome.switched_at == 120 and outcome.finished_at == 200
    assert outcome.on_demand_steps == 60 and outcome.spot_steps == 0


def test_the_interval_includes_the_restart() -> None:
    j = job(60, 110, overhead=10, checkpoint=5, spot_price=0.25)
    # (D - t - d) / W = 100 / 60 = c at t = 0; the interval is d + delta = 30 steps from step 20.
    policy = Ross(j, 0.5)
    outcome = simulate(j, np.ones(110, bool), policy)
    assert policy.interval == (20, 50)
    assert outcome.met and outcome.on_demand_steps == 20 and outcome.switched_at == 20


def test_hedged_ross_uses_spot_in_the_interval_until_it_goes_missing_then_stays_on_demand() -> None:
    work, deadline = _tight()
    j = job(work, deadline, overhead=0, checkpoint=5, spot_price=0.25)
    trace = flags("1" * 22 + "0" * 8 + "1" * 70)
    outcome = simulate(j, trace, Ross(j, 0.5, hedged=True))
    # Spot [0, 22) (2 steps since the checkpoint at 20 lost), on-demand [22, 40), spot again from 40.
    assert outcome.met and outcome.switched_at == 22 and outcome.on_demand_steps == 18
    assert outcome.lost_steps == 2 and outcome.finished_at == 62
    steady = simulate(j, np.ones(deadline, bool), Ross(j, 0.5, hedged=True))
    assert steady.on_demand_steps == 0 and steady.cost == pytest.approx(work * 0.25 * j.step_hours)


def test_a_loose_job_on_steady_spot_never_reaches_the_ratio() -> None:
    j = job(60, 200, overhead=0, checkpoint=5, spot_price=0.25)
    policy = Ross(j, 0.99)
    outcome = simulate(j, np.ones(200, bool), policy)
    assert outcome.met and outcome.on_demand_steps == 0 and policy.interval is None


def test_the_draw_is_the_same_for_a_seed_and_differs_between_seeds() -> None:
    j = job(240, 300)
    assert draw(3, START, j) == draw(3, START, j)
    assert len({draw(seed, START, j) for seed in range(8)}) == 8
    assert draw(0, START, j) != draw(0, START, replace(j, deadline=301))
    rng = np.random.default_rng(7)
    trace = random_trace(rng, 300, mean_up=20, mean_down=10)
    for name in RANDOMIZED:
        runs = [run_policy(name, j, trace, START, seed) for seed in (0, 1, 0)]
        assert runs[0] == runs[2]
        assert POLICIES[name](j, START).name == name


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("hedged", [False, True])
def test_ross_never_misses_a_deadline_on_declared_work(seed: int, hedged: bool) -> None:
    rng = np.random.default_rng(seed)
    work = int(rng.integers(40, 160))
    overhead = int(rng.integers(0, 8))
    deadline = work + overhead + int(work * rng.uniform(0.0, 1.5))  # every deadline feasible on on-demand
    j = job(work, deadline, overhead=overhead, checkpoint=int(rng.integers(3, 15)))
    trace = random_trace(rng, j.deadline, mean_up=rng.uniform(5, 60), mean_down=rng.uniform(2, 30))
    outcome = simulate(j, trace, Ross(j, float(rng.random()), hedged=hedged))
    assert outcome.met
    assert math.isfinite(outcome.cost)


def test_the_grid_runs_ross_once_per_seed_on_fixture_traces(tmp_path: Path) -> None:
    traces = all_traces(read_logs(fixture_logs(tmp_path)))
    grid = GridSpec(work_hours=(4.0,), slacks=(0.2, 1.0), start_every_hours=12.0, seeds=3)
    rows = run_grid(traces, grid)
    summaries = {s.policy: s for s in summarize(rows, grid.policies)}
    assert summaries["ross"].runs == summaries["ross-hedged"].runs == 3 * summaries["greedy"].runs > 0
    assert summaries["ross"].missed == summaries["ross-hedged"].missed == 0
    assert summaries["ross-hedged"].mean_vs_optimum <= summaries["ross"].mean_vs_optimum
    firsts = [r for r in rows if r.policy == "ross"][::3]
    assert len({(r.trace, r.start_hours, r.slack) for r in firsts}) == len(firsts)  # seeds of a job in a row


def test_spotline_simulate_seeds_sets_the_runs_of_a_randomized_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["simulate", "--traces", str(fixture_logs(tmp_path / "logs")), "--out", str(tmp_path / "out"), "--jobs", "1"]
    grid = ["--work-hours", "4", "--slack", "50", "--start-every-hours", "12", "--no-plot", "--json"]
    assert cli_main([*args, *grid, "--seeds", "2"]) == 0
    policies = json.loads(capsys.readouterr().out)["policies"]
    assert policies["ross"]["runs"] == policies["ross-hedged"]["runs"] == 2 * policies["greedy"]["runs"] > 0
    assert cli_main([*args, *grid, "--seeds", "0"]) == 2
