"""The simulated job and its replay: rounding against the job, billing, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from devtools.research.simulate.fixture_traces import HOUR, START, flags, job, random_trace
from spotline_dev.research.simulate import POLICIES, Job, run_policy, simulate

# --- the job ---------------------------------------------------------------------------------


def test_job_from_seconds_rounds_against_the_job() -> None:
    j = Job.from_seconds(work=4 * HOUR + 1, deadline=5 * HOUR - 1, overhead=1200, checkpoint=900)
    assert (j.work, j.deadline, j.overhead, j.checkpoint) == (241, 299, 20, 15)
    assert j.declared_work is None and j.declared == 241
    late = Job.from_seconds(work=4 * HOUR, deadline=5 * HOUR, work_error=0.05)
    assert (late.work, late.declared) == (252, 240)
    with pytest.raises(ValueError, match="checkpoint"):
        job(10, 20, checkpoint=0)


# --- invariants --------------------------------------------------------------------------------


@pytest.mark.parametrize("billed", [False, True])
@pytest.mark.parametrize(("work", "deadline"), [(40, 50), (40, 43), (40, 42), (7, 200)])
def test_on_demand_only_costs_the_work_and_the_billed_start_at_the_on_demand_price(
    work: int, deadline: int, billed: bool
) -> None:
    j = job(work, deadline, overhead=3, step_seconds=HOUR, on_demand_price=2.5, overhead_billed=billed)
    outcome = simulate(j, flags("0" * deadline), POLICIES["on-demand"](j, START))
    assert outcome.met == (deadline >= work + 3)
    if outcome.met:
        # One-hour steps: of the 3-hour start, its last hour (after instances are acquired) is billed.
        assert outcome.cost == pytest.approx(work * 2.5 + (3 * 2.5 if billed else 1 * 2.5))
        assert outcome.cost == pytest.approx(j.on_demand_cost)
        assert (outcome.spot_steps, outcome.on_demand_steps, outcome.finished_at) == (0, work, work + 3)
    else:
        assert outcome.finished_at is None and outcome.on_demand_steps == deadline - 3


@pytest.mark.parametrize("seed", range(12))
def test_spot_without_checkpoints_is_never_cheaper_than_with_them(seed: int) -> None:
    rng = np.random.default_rng(seed)
    trace = random_trace(rng, 400, mean_up=rng.uniform(5, 80), mean_down=rng.uniform(2, 30))
    j = job(work=int(rng.integers(20, 150)), deadline=400, overhead=int(rng.integers(0, 6)), checkpoint=8)
    with_ckpt = run_policy("spot-ckpt", j, trace, START)
    without = run_policy("spot-no-ckpt", j, trace, START)
    assert without.cost >= with_ckpt.cost - 1e-12
    assert without.lost_steps >= with_ckpt.lost_steps
    if without.met:
        assert with_ckpt.met
        assert with_ckpt.finished_at is not None and without.finished_at is not None
        assert with_ckpt.finished_at <= without.finished_at


# --- an early first checkpoint (issue 48) --------------------------------------------------------


def test_a_first_checkpoint_rounds_down_and_must_be_positive() -> None:
    j = Job.from_seconds(work=4 * HOUR, deadline=5 * HOUR, checkpoint=900, first_checkpoint=359)
    assert (j.checkpoint, j.first_checkpoint) == (15, 5)
    assert Job.from_seconds(work=4 * HOUR, deadline=5 * HOUR).first_checkpoint is None
    with pytest.raises(ValueError, match="first checkpoint"):
        job(10, 20, first_checkpoint=0)


@pytest.mark.parametrize("policy", ["spot-ckpt", "greedy"])
def test_the_first_checkpoint_after_every_start_is_a_property_of_the_job(policy: str) -> None:
    # Spot for 20 steps, none for 5, spot for 8, none for 5, then spot: each start takes 3 steps.
    trace = flags("1" * 20 + "0" * 5 + "1" * 8 + "0" * 5 + "1" * 200)
    plain = job(40, 230, checkpoint=10)
    early = job(40, 230, checkpoint=10, first_checkpoint=3)
    # Plain: saved at 10 trained, 7 lost at t=20; the restart trains 5, saves none, loses 5.
    assert run_policy(policy, plain, trace, START).lost_steps == 7 + 5
    # Early: saved at 3 and 13, 4 lost; the restart saves after 3 again, then loses 2.
    outcome = run_policy(policy, early, trace, START)
    assert (outcome.lost_steps, outcome.met) == (4 + 2, True)
