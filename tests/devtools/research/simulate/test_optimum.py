"""The offline optimum: a lower bound on every run that meets its deadline, and equal to brute
force on tiny grids."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from devtools.research.simulate.fixture_traces import HOUR, START, Flags, flags, job, random_trace
from spotline_dev.research.simulate import POLICIES, Capacity, Job, Scripted, optimal_costs, run_policy, simulate

# --- invariants --------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_no_run_that_meets_its_deadline_is_cheaper_than_the_optimum(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    work = int(rng.integers(30, 120))
    trace = random_trace(rng, 3 * work, mean_up=rng.uniform(10, 120), mean_down=rng.uniform(2, 40))
    loosest = job(work, 3 * work, overhead=int(rng.integers(1, 8)), checkpoint=int(rng.integers(2, 12)))
    best = optimal_costs(loosest, trace, horizon=3 * work)
    for slack in (0.1, 0.3, 0.6, 1.0, 2.0):
        j = replace(loosest, deadline=int(work * (1 + slack)))
        optimum = float(best[j.deadline])
        for name in POLICIES:
            outcome = run_policy(name, j, trace[: j.deadline], START)
            if outcome.met:
                assert outcome.cost >= optimum - 1e-9, (name, slack)
            if name in ("on-demand", "greedy", "uniform") and math.isfinite(optimum):
                assert outcome.met or j.deadline < work + j.overhead, (name, slack)


# --- the offline optimum against brute force ---------------------------------------------------


def play(modes: Sequence[Capacity], avail: Flags, work: int, d: int, j: Job) -> tuple[int | None, float]:
    """An independent step-by-step evaluation of one mode sequence (nothing lost, as the optimum)."""
    instance: Capacity = "none"
    left = progress = 0
    cost = 0.0
    for t, mode in enumerate(modes):
        if progress == work:
            return t, cost
        if instance == "spot" and not avail[t]:
            instance = "none"
        if mode != instance:
            instance = "none"
            if mode == "on-demand" or (mode == "spot" and avail[t]):
                instance, left = mode, d
        if instance == "none":
            continue
        price = j.spot_price if instance == "spot" else j.on_demand_price
        if left:
            cost += price * j.step_hours if left <= j.billed_start else 0.0  # the last steps are billed
            left -= 1
        else:
            progress += 1
            cost += price * j.step_hours
    return (len(modes), cost) if progress == work else (None, cost)


TINY = [
    (flags("1101101"), 3, 1, False),
    (flags("0111011"), 2, 2, True),
    (flags("1010101"), 2, 0, False),
    (flags("1111111"), 4, 2, False),
    (flags("0000000"), 3, 1, True),
    (flags("1100111"), 3, 1, True),
    (flags("0110110"), 3, 0, True),
]


@pytest.mark.parametrize(("avail", "work", "d", "billed"), TINY)
def test_optimum_equals_brute_force_over_every_mode_sequence(avail: Flags, work: int, d: int, billed: bool) -> None:
    steps = len(avail)
    j = job(work, steps, overhead=d, checkpoint=1, step_seconds=HOUR, overhead_billed=billed)
    brute = [math.inf] * (steps + 1)
    for modes in itertools.product(("none", "spot", "on-demand"), repeat=steps):
        done, cost = play(modes, avail, work, d, j)
        if done is not None:
            for deadline in range(done, steps + 1):
                brute[deadline] = min(brute[deadline], cost)
    assert optimal_costs(j, avail).tolist() == pytest.approx(brute)


@pytest.mark.parametrize("seed", range(8))
def test_the_simulator_playing_every_sequence_reaches_the_optimum_exactly(seed: int) -> None:
    """With a checkpoint every step nothing is ever lost, so the best scripted run is the optimum."""
    rng = np.random.default_rng(seed)
    steps = 6
    avail = rng.random(steps) < 0.65
    j = job(int(rng.integers(1, 4)), steps, overhead=int(rng.integers(0, 3)), checkpoint=1, step_seconds=HOUR)
    best = math.inf
    for modes in itertools.product(("none", "spot", "on-demand"), repeat=steps):
        outcome = simulate(j, avail, Scripted(modes))
        if outcome.met:
            best = min(best, outcome.cost)
    assert float(optimal_costs(j, avail)[steps]) == pytest.approx(best)


def test_the_optimum_of_a_batch_is_the_optimum_of_each_window() -> None:
    rng = np.random.default_rng(7)
    windows = np.stack([random_trace(rng, 120, 15, 6) for _ in range(4)])
    j = job(50, 120, overhead=4)
    batch = optimal_costs(j, windows)
    for i, window in enumerate(windows):
        assert batch[i].tolist() == pytest.approx(optimal_costs(j, window).tolist())
    assert np.all(batch[:, 1:] <= batch[:, :-1])  # a later deadline never costs more


def test_the_optimum_uses_spot_when_it_knows_it_will_last() -> None:
    j = job(10, 14, overhead=3, step_seconds=HOUR)
    # One-hour steps: the start's last hour is billed (SageMaker bills from instance acquisition).
    assert optimal_costs(j, flags("1" * 14))[14] == pytest.approx(11 * 0.3)
    assert optimal_costs(j, flags("1" * 5 + "0" * 9))[14] == pytest.approx(11.0)  # too short to help
    assert optimal_costs(j, flags("1" * 14))[12] == math.inf
