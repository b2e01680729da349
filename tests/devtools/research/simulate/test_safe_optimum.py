"""The safe optimum: the hindsight optimum when safety is off, brute force on tiny jobs, the
worked examples of docs/simulation.md, and a lower bound on every policy that never misses."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from devtools.research.simulate.fixture_traces import HOUR, Flags, fixture_logs, flags, job, random_trace
from spotline_dev.research.simulate import (
    GridSpec,
    Job,
    optimal_costs,
    optimal_costs_across_regions,
    run_grid,
    safe_costs,
    safe_costs_across_regions,
)
from spotline_dev.research.simulate import grid as grid_module
from spotline_dev.research.simulate.grid import safe_optima
from spotline_dev.research.simulate.safe_optimum import safe_costs_by_deadline
from spotline_dev.research.traces import all_traces, read_logs

# --- safety off: the hindsight optimum ---------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_without_safety_it_is_the_hindsight_optimum(seed: int) -> None:
    rng = np.random.default_rng(500 + seed)
    work = int(rng.integers(20, 90))
    trace = random_trace(rng, 3 * work, mean_up=rng.uniform(5, 80), mean_down=rng.uniform(2, 30))
    loosest = job(work, 3 * work, overhead=int(rng.integers(0, 8)), checkpoint=int(rng.integers(1, 12)))
    best = optimal_costs(loosest, trace, horizon=3 * work)
    for slack in (0.05, 0.2, 0.5, 1.0, 2.0):
        j = replace(loosest, deadline=int(work * (1 + slack)))
        hindsight = float(safe_costs(j, trace[: j.deadline], safe=False))
        assert hindsight == pytest.approx(float(best[j.deadline]), abs=1e-9), slack
        assert hindsight <= float(safe_costs(j, trace[: j.deadline])) + 1e-9
        assert float(safe_costs(j, trace[: j.deadline])) <= j.on_demand_cost + 1e-9 or math.isinf(hindsight)


@pytest.mark.parametrize("seed", range(4))
def test_without_safety_it_is_the_hindsight_optimum_across_regions(seed: int) -> None:
    rng = np.random.default_rng(700 + seed)
    work = int(rng.integers(20, 60))
    windows = np.array(
        [[random_trace(rng, 2 * work, rng.uniform(5, 60), rng.uniform(2, 30)) for _ in range(3)] for _ in range(2)]
    )  # (2 windows, 3 regions, steps)
    j = job(work, int(work * 1.7), overhead=int(rng.integers(1, 6)), checkpoint=int(rng.integers(1, 8)))
    j = replace(j, copy=int(rng.integers(0, 4)), copy_cost=float(rng.uniform(0.0, 0.2)))
    hindsight = optimal_costs_across_regions(j, windows)[:, j.deadline]
    assert safe_costs_across_regions(j, windows, safe=False).tolist() == pytest.approx(hindsight.tolist())
    safe = safe_costs_across_regions(j, windows)
    assert np.all(hindsight <= safe + 1e-9)
    for i in range(2):  # a batch is each window on its own
        assert float(safe_costs_across_regions(j, windows[i])) == pytest.approx(float(safe[i]))


@pytest.mark.parametrize("seed", range(30))
def test_every_deadline_at_once_is_each_deadline_on_its_own(seed: int) -> None:
    """The shared program plus a strip per deadline gives the numbers of one program per deadline."""
    rng = np.random.default_rng(1000 + seed)
    places, batch = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    work, d, c = int(rng.integers(5, 60)), int(rng.integers(1, 8)), int(rng.integers(1, 9))
    first = int(rng.integers(1, 9)) if seed % 3 == 0 else None
    latest = int(work * rng.uniform(1.2, 2.5)) + d
    windows = np.array(
        [
            [random_trace(rng, latest, rng.uniform(3, 40), rng.uniform(1, 20)) for _ in range(places)]
            for _ in range(batch)
        ]
    )
    j = replace(job(work, latest, overhead=d, checkpoint=c), copy=int(rng.integers(0, 4)), copy_cost=0.05)
    deadlines = sorted({int(x) for x in rng.integers(work, latest + 1, size=5)} | {latest})
    each = [
        safe_costs_across_regions(replace(j, deadline=D), windows[..., :D], first_interval=first) for D in deadlines
    ]
    together = safe_costs_by_deadline(j, windows, deadlines, first_interval=first)
    np.testing.assert_allclose(together, np.stack(each, axis=-1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(safe_costs_by_deadline(j, windows[0], deadlines, first_interval=first), together[0])


# --- brute force over every request sequence ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class State:
    instance: str  # "none", "spot" or "on-demand"
    left: int  # start-up steps still to go
    progress: int
    saved: int
    trained: int  # training steps in this attempt
    cost: float


def brute_force(j: Job, avail: Flags, *, first: int | None, safe: bool) -> float:
    """Every sequence of per-step requests (none, spot, on-demand), played step by step with the
    optimum's conventions (a start billed when it begins and needing capacity for all of it, a
    stop that saves, the step before a preemption kept) and, with `safe`, the check that an
    on-demand restart from the last save still finishes by the deadline."""
    work, deadline, d = j.work, j.deadline, j.overhead
    every = j.checkpoint
    first = every if first is None else first
    best = math.inf

    def saves(trained: int) -> bool:
        if first is None or trained < first:
            return False
        return trained == first or (every is not None and (trained - first) % every == 0)

    def visit(t: int, state: State) -> None:
        nonlocal best
        if state.progress == work:
            best = min(best, state.cost)
            return
        if t == deadline:
            return
        if safe:
            if state.instance == "on-demand":
                if t + state.left + work - state.progress > deadline:
                    return
            elif t + d + work - state.saved > deadline:
                return
        if state.instance == "spot" and state.left == 0 and not avail[t]:
            state = replace(state, instance="none", saved=state.progress)
        for request in ("none", "spot", "on-demand"):
            now = state
            if request != now.instance:
                now = replace(now, instance="none", left=0, saved=now.progress, trained=0)
                if request == "on-demand":
                    now = replace(now, instance=request, left=d, cost=now.cost + j.billed_start)
                elif request == "spot" and all(avail[t : t + max(d, 1)]) and t + max(d, 1) <= len(avail):
                    now = replace(now, instance=request, left=d, cost=now.cost + j.billed_start * j.spot_price)
            if now.instance == "none":
                visit(t + 1, now)
            elif now.left:
                visit(t + 1, replace(now, left=now.left - 1))
            else:
                price = j.spot_price if now.instance == "spot" else j.on_demand_price
                trained = now.trained + 1
                progress = now.progress + 1
                visit(
                    t + 1,
                    replace(
                        now,
                        progress=progress,
                        trained=trained,
                        saved=progress if saves(trained) else now.saved,
                        cost=now.cost + price,
                    ),
                )

    visit(0, State("none", 0, 0, 0, 0, 0.0))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_safe_optimum_equals_brute_force_on_tiny_jobs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    work, d, c = int(rng.integers(2, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 4))
    deadline = int(rng.integers(work + d, 9))
    avail = rng.random(deadline) < rng.uniform(0.4, 0.9)
    first = int(rng.integers(1, 4)) if seed % 3 == 0 else None
    j = job(work, deadline, overhead=d, checkpoint=c, step_seconds=HOUR)
    assert j.billed_start == 1  # one-hour steps: the start's last hour is billed
    for safe in (True, False):
        expected = brute_force(j, avail, first=first, safe=safe)
        assert float(safe_costs(j, avail, first_interval=first, safe=safe)) == pytest.approx(expected), safe


@pytest.mark.parametrize("seed", range(8))
def test_a_job_without_checkpoints_saves_only_when_it_stops(seed: int) -> None:
    rng = np.random.default_rng(900 + seed)
    work, d = int(rng.integers(2, 4)), int(rng.integers(1, 3))
    deadline = int(rng.integers(work + d, 9))
    avail = rng.random(deadline) < 0.7
    j = job(work, deadline, overhead=d, checkpoint=None, step_seconds=HOUR)
    expected = brute_force(j, avail, first=None, safe=True)
    assert float(safe_costs(j, avail)) == pytest.approx(expected)
    assert safe_costs_by_deadline(j, avail[None], [deadline]).tolist() == pytest.approx([expected])


# --- worked examples (one-hour steps, one billed start-up step, spot at 0.3) ---------------------


def hourly(work: int, deadline: int, overhead: int, checkpoint: int) -> Job:
    return Job(work=work, deadline=deadline, overhead=overhead, checkpoint=checkpoint, step_seconds=HOUR)


def test_spot_back_too_late_to_bet_on() -> None:
    """(a) W 6, D 12, d 2, c 2; spot up 0-5, down 6-7, up again: hindsight bets on the second spot
    attempt (2.4); a safe schedule finishes on on-demand from t = 6 (4.5)."""
    j, avail = hourly(6, 12, 2, 2), flags("111111001111")
    assert float(safe_costs(j, avail, safe=False)) == pytest.approx(2.4)
    assert float(safe_costs(j, avail)) == pytest.approx(4.5)


def test_slack_below_two_restarts_and_a_checkpoint_leaves_on_demand() -> None:
    """(b) W 6, D 10, d 2, c 3, spot always up: no safe training step on spot."""
    j, avail = hourly(6, 10, 2, 3), flags("1" * 10)
    assert float(safe_costs(j, avail, safe=False)) == pytest.approx(2.1)
    assert float(safe_costs(j, avail)) == pytest.approx(7.0)


def test_a_stop_that_saves_lets_a_safe_schedule_train_one_step_on_spot() -> None:
    """(c) As (b) with D 11: one spot step, a stop that saves it, then on-demand."""
    j, avail = hourly(6, 11, 2, 3), flags("1" * 11)
    assert float(safe_costs(j, avail)) == pytest.approx(0.3 + 0.3 + 1 + 5)


def test_an_earlier_first_checkpoint_makes_spot_safe() -> None:
    """(b) again with the first save after one step: spot can train while a save is near."""
    j, avail = hourly(6, 10, 2, 3), flags("1" * 10)
    assert float(safe_costs(j, avail, first_interval=1)) < 7.0
    with pytest.raises(ValueError, match="positive"):
        safe_costs(j, avail, first_interval=0)


def test_an_infeasible_deadline_costs_infinity() -> None:
    j = hourly(6, 7, 2, 3)
    assert math.isinf(float(safe_costs(j, flags("1" * 7))))
    with pytest.raises(ValueError, match="steps"):
        safe_costs(hourly(6, 12, 2, 3), flags("1" * 11))


# --- a lower bound on every policy that never misses ---------------------------------------------


def test_no_policy_that_never_misses_pays_less_than_the_safe_optimum(tmp_path: Path) -> None:
    traces = all_traces(read_logs(fixture_logs(tmp_path)))
    grid = GridSpec(
        work_hours=(4.0,), slacks=(0.2, 0.4, 1.0), start_every_hours=8.0, policies=("greedy", "uniform", "spotline")
    )
    rows = run_grid(traces, grid)
    never_missed = {r.policy for r in rows} - {r.policy for r in rows if not r.met}
    assert {"greedy", "spotline"} <= never_missed
    assert any(r.safe_optimum > r.optimum + 1e-9 for r in rows)  # safety costs something on these traces
    for row in rows:
        assert row.optimum <= row.safe_optimum + 1e-9 <= row.on_demand_cost + 2e-9
        if row.policy in never_missed:
            assert row.cost >= row.safe_optimum - 1e-9, (row.policy, row.trace, row.start_hours, row.slack)


def test_the_grid_gives_each_slack_the_first_checkpoint_its_jobs_get(monkeypatch: pytest.MonkeyPatch) -> None:
    """The yardstick saves first when the job does (`Job.first_checkpoint`, sized to the slack), so
    no policy goes below it for having checkpointed sooner. A first save after 2 minutes for the
    tightest slack only, with a restart long enough that it matters."""
    monkeypatch.setattr(
        grid_module,
        "first_checkpoint_for",
        lambda **kw: 120.0 if kw["deadline_seconds"] < 1.2 * kw["work_seconds"] else None,
    )
    grid = GridSpec(work_hours=(16.0,), slacks=(0.1, 0.5), overhead_seconds=45 * 60)
    assert (grid.job(16.0, 0.1).first_checkpoint, grid.job(16.0, 0.5).first_checkpoint) == (2, None)
    rng = np.random.default_rng(7)
    loosest = grid.job(16.0, 0.5)
    windows = np.stack([random_trace(rng, loosest.deadline, mean_up, 10) for mean_up in (100, 200, 400, 800)])
    safe = safe_optima(grid, 16.0, windows)
    for slack in grid.slacks:
        job = grid.job(16.0, slack)
        each = safe_costs(job, windows[:, : job.deadline], first_interval=job.first_checkpoint)
        np.testing.assert_allclose(safe[slack], each)
    tight = grid.job(16.0, 0.1)
    assert (safe[0.1] < safe_costs(tight, windows[:, : tight.deadline]) - 1e-9).any()  # the first save matters here
