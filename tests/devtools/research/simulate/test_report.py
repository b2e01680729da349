"""The summaries: misses counted over all runs and over the feasible ones, the optimum's line."""

from __future__ import annotations

from datetime import timedelta

import pytest

from devtools.research.simulate.fixture_traces import START
from spotline_dev.research.simulate import (
    POLICIES,
    GridSpec,
    optimum_summary,
    run_grid,
    safe_optimum_summary,
    summarize,
)
from spotline_dev.research.traces import Config, Trace


def test_misses_are_counted_over_all_runs_and_over_feasible_ones() -> None:
    # Spot for the first hour only; 2h jobs: a 10% slack is infeasible (restart 20m > 12m).
    trace = Trace(
        Config("aws", "us-east-1z", "v100", 1),
        "fixture.log",
        ((START, "available"), (START + timedelta(hours=1), "preempted")),
        START + timedelta(hours=10),
    )
    grid = GridSpec(work_hours=(2.0,), slacks=(0.1, 1.0), start_every_hours=100)
    rows = run_grid([trace], grid)
    assert len(rows) == 2 * sum(len(grid.seeds_of(name)) for name in POLICIES)
    feasible = {r.slack: r.feasible for r in rows}
    assert feasible == {0.1: False, 1.0: True}
    summaries = {s.policy: s for s in summarize(rows, grid.policies)}
    assert (summaries["on-demand"].missed, summaries["on-demand"].missed_feasible) == (1, 0)
    assert (summaries["spot-ckpt"].missed, summaries["spot-ckpt"].missed_feasible) == (2, 1)
    assert summaries["spot-ckpt"].miss_rate == 1.0
    for name in ("greedy", "uniform", "spotline"):
        assert summaries[name].missed_feasible == 0, name
    best = optimum_summary(rows)
    assert (best.runs, best.feasible, best.missed) == (2, 1, 1)
    safe = safe_optimum_summary(rows)
    assert (safe.runs, safe.feasible, safe.missed) == (2, 1, 1)
    # One feasible job: each optimum's mean over the other is the inverse of the other's.
    assert safe.mean_vs_optimum >= 1.0 and best.mean_vs_safe_optimum == pytest.approx(1 / safe.mean_vs_optimum)
    assert summaries["on-demand"].mean_vs_safe_optimum >= 1.0
    missed = next(r for r in rows if r.policy == "spot-ckpt" and r.slack == 1.0)
    assert not missed.met and missed.finished_hours is None
    # Spot paid from the acquisition of instances (the start's last 10 minutes) until the capacity went.
    assert missed.cost == pytest.approx((60 - 20 + 10) / 60 * 0.3)
