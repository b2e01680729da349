"""The multi-region peers: SkyPilot's EAGER_NEXT_REGION (as shipped and as fixed) and SkyNomad."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from devtools.research.simulate.fixture_traces import START, flags, random_trace
from spotline_dev.research.simulate.model import Job, simulate
from spotline_dev.research.simulate.region_peers import EagerNextRegion, Lifetimes, SkyNomad
from spotline_dev.research.simulate.regions import REGION_POLICIES, run_region_policy

GIB = 1 << 30


def _job(**changes: object) -> Job:
    values: dict[str, object] = {"work": 100, "deadline": 300, "overhead": 3, "checkpoint": 5, "step_seconds": 60}
    values.update(changes)
    return Job(**values)


def _regions(*patterns: str, steps: int = 400) -> np.ndarray:
    """One row per region: the pattern, then its last character to the end."""
    return np.stack([flags(p + p[-1] * (steps - len(p))) for p in patterns])


# --- eager-next-region --------------------------------------------------------------------------


def test_eager_next_region_as_shipped_goes_back_to_the_cheapest_region_the_one_just_preempted() -> None:
    # Region 0 preempted at 30, back at 32 with region 1; region 2 never has spot.
    grid = _regions("1" * 30 + "00" + "1", "0" * 32 + "1", "0")
    policy = EagerNextRegion(3)
    outcome = simulate(_job(), grid, policy)
    # Passes at 30, then after the back-off gaps of 60 s (1 step) and 96 s (2 steps): 31, 33.
    assert [t for t, _ in policy.passes_made] == [0, 30, 31, 33]
    assert all(tried == (0, 1, 2) for _, tried in policy.passes_made)  # #10021: nothing blocked
    assert outcome.regions == (0, 0) and outcome.moves == 0 and outcome.met


def test_eager_next_region_fixed_blocks_the_preempted_region_for_three_passes() -> None:
    grid = _regions("1" * 30 + "00" + "1", "0" * 32 + "1", "0")
    policy = EagerNextRegion(3, blocks_preempted=True)
    outcome = simulate(_job(), grid, policy)
    assert policy.passes_made[1:] == [(30, (1, 2)), (31, (1, 2)), (33, (1, 2))]
    assert outcome.regions == (0, 1) and outcome.moves == 1


def test_eager_next_region_fixed_returns_to_the_preempted_region_after_its_blocked_passes() -> None:
    grid = _regions("1" * 30 + "00" + "1", "0", "0")
    policy = EagerNextRegion(3, blocks_preempted=True)
    outcome = simulate(_job(), grid, policy)
    # Three passes without region 0 (30, 31, 33), then at once one over every region.
    assert policy.passes_made[1:] == [(30, (1, 2)), (31, (1, 2)), (33, (1, 2)), (33, (0, 1, 2))]
    assert outcome.regions == (0, 0)


def test_eager_next_region_backs_off_like_skypilot_and_knows_no_deadline() -> None:
    policy = EagerNextRegion(2)
    outcome = simulate(_job(), _regions("0", "0"), policy)
    # Gaps 60, 96, 153.6, 245.76 s, then 300 s: 1, 2, 3, 5, 5, ... steps.
    assert [t for t, _ in policy.passes_made][:7] == [0, 1, 3, 6, 11, 16, 21]
    assert not outcome.met and outcome.on_demand_steps == 0


def test_eager_next_region_moves_in_region_order_at_each_preemption() -> None:
    # Region 0 up [0, 40), region 1 up [30, 90), region 2 up from 80: 0 -> 1 -> 2.
    grid = _regions("1" * 40 + "0", "0" * 30 + "1" * 60 + "0", "0" * 80 + "1")
    outcome = simulate(_job(deadline=400), grid, EagerNextRegion(3))
    assert outcome.regions == (0, 1, 2) and outcome.preemptions == 2 and outcome.met


# --- SkyNomad -------------------------------------------------------------------------------------


def test_lifetimes_nelson_aalen_with_an_exponential_tail() -> None:
    assert Lifetimes().expected(0, cap=120) == 120  # nothing failed yet: the cap
    one = Lifetimes([(50, True)])
    # S = 1 up to 50, e^-1 after; tail at 1 failure / 50 steps: 50 + e^-1 x 50.
    assert one.expected(0, cap=1000) == pytest.approx(50 * (1 + math.exp(-1)))
    assert one.expected(0, cap=60) == 60
    two = Lifetimes([(10, True), (30, False)], since=None)
    # At 10: 1 failure among 2 at risk, S = e^-0.5; tail rate 1/40: 10 + e^-0.5 x 40.
    assert two.expected(0, cap=1000) == pytest.approx(10 + math.exp(-0.5) * 40)
    aged = Lifetimes([(10, True)], since=0)
    # An open lifetime of age 20, past every failure: 1 / rate = (10 + 20) / 1.
    assert aged.expected(20, cap=1000) == pytest.approx(30)


def test_skynomad_moves_at_a_preemption_to_a_region_with_spot_and_probes_the_others() -> None:
    # Region 0 preempted at 50; region 1 never has spot; region 2 always has.
    grid = _regions("1" * 50 + "0", "0", "1")
    policy = SkyNomad(3, 10 * GIB)
    outcome = simulate(_job(deadline=400), grid, policy)
    assert outcome.regions == (0, 2) and outcome.met and outcome.on_demand_steps == 0
    assert policy.lifetimes[0].ended == [(50, True)]  # its own spot run, ended by the preemption
    assert policy.lifetimes[1] == Lifetimes()  # never seen up: no lifetime
    # Ahead of schedule at 50 (45 of 100 done in 50 of 400 steps): V = 0.3 (the floor)
    # makes spot worth less than idling; at the tick of 90, V = (55 / 310) / (45 / 90) = 0.355 > 0.3 / (1 - 3/120).
    assert policy.lifetimes[2].since == 90  # probed up at 0, then its own run from 90
    assert policy.lifetimes[2].ended == [(90, False)]
    assert policy.probes == 3 + 2  # every region at 0 (nothing runs yet), at 120 the two it does not run in


def test_skynomad_prefers_the_region_whose_spot_lasts() -> None:
    policy = SkyNomad(2, 0)
    policy.lifetimes[0] = Lifetimes([(3, True)] * 5)  # region 0's spot lasts three minutes
    outcome = simulate(_job(deadline=400), _regions("1", "1", steps=400), policy)
    assert outcome.regions == (1,) and outcome.met


def test_skynomad_falls_back_to_on_demand_at_the_last_safe_moment_in_the_checkpoint_region() -> None:
    job = _job()
    outcome = simulate(job, _regions("0", "0"), SkyNomad(2, 0))
    assert outcome.met and outcome.on_demand_steps == job.work
    assert outcome.switched_at == job.deadline - job.work - job.overhead and outcome.regions == (0,)


@pytest.mark.parametrize("seed", range(6))
def test_the_peers_run_on_random_traces_and_skynomad_meets_every_feasible_deadline(seed: int) -> None:
    rng = np.random.default_rng(seed)
    job = _job(work=int(rng.integers(60, 200)), copy=int(rng.integers(0, 4)), copy_cost=0.02)
    job = replace(job, deadline=int(job.work * rng.uniform(1.3, 2.5)))
    grid = np.stack([random_trace(rng, job.deadline, mean_up=rng.uniform(5, 80), mean_down=20) for _ in range(3)])
    for name in REGION_POLICIES:
        outcome = run_region_policy(
            name, job, available=grid, start=START, regions=("a-1", "b-1", "c-1"), checkpoint_gib=10
        )
        assert math.isfinite(outcome.cost), name
        if name == "skynomad":
            assert outcome.met
    again = [simulate(job, grid, SkyNomad(3, 10 * GIB)) for _ in range(2)]
    assert again[0] == again[1]
