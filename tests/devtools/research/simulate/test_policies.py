"""The baselines and Spotline's production deadline policy, on arrays and on fixture logs."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

import spotline.core.capacity.assess
import spotline_dev.research.simulate.policies
from devtools.research.simulate.fixture_traces import HOUR, START, fixture_logs, flags, job, random_trace
from spotline_dev.research.simulate import (
    POLICIES,
    Command,
    Greedy,
    GridSpec,
    Job,
    Policy,
    SpotlinePolicy,
    UniformProgress,
    View,
    run_grid,
    simulate,
    summarize,
)
from spotline_dev.research.traces import all_traces, read_logs

# --- the baselines ------------------------------------------------------------------------------


class EveryStep:
    """Asks the wrapped policy at every step, as the paper's simulator does."""

    wakes_on_events = True

    def __init__(self, inner: Policy) -> None:
        self.inner, self.name = inner, inner.name

    def decide(self, view: View) -> Command:
        return Command(self.inner.decide(view).capacity, view.t + 1)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("factory", [Greedy, UniformProgress])
def test_event_driven_baselines_decide_as_if_asked_at_every_step(seed: int, factory: type[Policy]) -> None:
    rng = np.random.default_rng(seed)
    work = int(rng.integers(40, 160))
    j = Job(
        work=work,
        deadline=int(work * rng.uniform(1.1, 2.0)),
        overhead=int(rng.integers(0, 8)),
        checkpoint=int(rng.integers(3, 15)),
        declared_work=None if seed % 3 else int(work / 1.05),
    )
    trace = random_trace(rng, j.deadline, mean_up=rng.uniform(5, 60), mean_down=rng.uniform(2, 30))
    fast = simulate(j, trace, factory())
    slow = simulate(j, trace, EveryStep(factory()))
    assert replace(fast, decisions=0) == replace(slow, decisions=0)


def test_greedy_switches_exactly_at_the_last_safe_moment() -> None:
    j = job(20, 40, overhead=3, checkpoint=5)
    outcome = simulate(j, flags("1" * 8 + "0" * 32), Greedy())
    # Start-up 0..3, 5 steps trained and checkpointed at 8, then no capacity: 15 left + 3 restart.
    assert outcome.switched_at == 40 - 15 - 3
    assert outcome.met and outcome.finished_at == 40


def test_uniform_progress_catches_up_on_demand_and_goes_back_to_spot() -> None:
    j = job(40, 80, overhead=2, checkpoint=2)
    avail = flags("1" * 12 + "0" * 20 + "1" * 48)
    outcome = simulate(j, avail, UniformProgress())
    assert outcome.met
    assert outcome.switched_at is not None and 12 <= outcome.switched_at < 32
    assert outcome.spot_steps > 10 + 10  # spot before the gap and again after it
    assert outcome.on_demand_steps > 0


# --- Spotline's production policy --------------------------------------------------------------


def test_spotline_asks_the_production_policy_as_the_lambda_does() -> None:
    assert (
        spotline_dev.research.simulate.policies.assess is spotline.core.capacity.assess.assess
    )  # what CheckTrainingStatus calls
    j = Job.from_seconds(work=4 * HOUR, deadline=8 * HOUR)
    policy = SpotlinePolicy(j, START)
    outcome = simulate(j, flags("1" * j.deadline), policy)
    # 4 h on spot and the start's billed 10 minutes (after instances are acquired).
    assert outcome.met and outcome.switched_at is None and outcome.cost == pytest.approx((4 + 1 / 6) * 0.3)
    first, *rest = policy.clocks
    assert first.now == START + timedelta(seconds=60)  # SubmitTrainingJob's first poll
    assert (first.started_at, first.deadline) == (START, START + timedelta(hours=8))
    assert (first.total_work_seconds, first.progress, first.capacity) == (4 * HOUR, 0.0, "spot")
    assert first.restart_overhead_seconds == 1200  # nothing measured yet
    assert not first.spot_missing
    later = [c for c in rest if c.now >= START + timedelta(minutes=20)]
    assert later and all(c.restart_overhead_seconds == 1200 for c in later)  # 10m to start + 10m after
    assert all(c.progress * 4 * 60 % 15 == 0 for c in policy.clocks)  # checkpointed progress only
    gaps = [(b.now - a.now).total_seconds() for a, b in itertools.pairwise(policy.clocks)]
    assert min(gaps) >= 60 and max(gaps) <= 3600
    assert len(policy.clocks) < 40  # polls, not steps


def test_spotline_waits_out_a_gap_and_moves_at_the_last_safe_moment() -> None:
    j = Job.from_seconds(work=4 * HOUR, deadline=8 * HOUR)
    avail = flags("1" * 80 + "0" * (j.deadline - 80))  # capacity for 80 minutes, then none
    policy = SpotlinePolicy(j, START)
    outcome = simulate(j, avail, policy)
    assert outcome.met and outcome.preemptions == 1
    # 60 of 240 minutes trained and saved, so the work is measured; on-demand needs 3h + 20m
    # restart + a 2m margin (1 % of the work left for a pace measured over 1 h, at least 2 minutes) = 202m.
    assert outcome.switched_at is not None and 480 - 202 - 2 <= outcome.switched_at <= 480 - 202
    assert policy.reason.startswith("deadline at risk: ") and "+ 2m margin: 1.0 % of the work left" in policy.reason
    assert outcome.cost == pytest.approx((1 + 1 / 6) * 0.3 + (3 + 1 / 6) * 1.0)  # each start bills 10m


def test_spotline_waits_for_spot_capacity_instead_of_moving_early() -> None:
    # No capacity for the first 30 minutes, then two hours of capacity and 20 minutes without, over
    # and over: an 8h job due in 12h. Moving to on-demand for good at the first gap would cost 8h
    # of on-demand; waiting it out costs mostly spot.
    j = Job.from_seconds(work=8 * HOUR, deadline=12 * HOUR)
    avail = np.array([False] * 30 + ([True] * 120 + [False] * 20) * 6, dtype=np.bool_)[: j.deadline]
    policy = SpotlinePolicy(j, START)
    outcome = simulate(j, avail, policy)
    assert outcome.met
    assert outcome.switched_at is None or outcome.switched_at > 6 * 60
    assert outcome.cost < 0.7 * j.on_demand_cost
    assert not policy.reason or policy.reason.startswith("deadline at risk: ")


def test_spotline_plans_with_the_declared_work_until_a_checkpoint_measures_the_real_one() -> None:
    j = Job.from_seconds(work=4 * HOUR, deadline=8 * HOUR, work_error=0.25)  # really 5 h
    policy = SpotlinePolicy(j, START)
    outcome = simulate(j, flags("1" * j.deadline), policy)
    assert outcome.met
    unmeasured = [c for c in policy.clocks if c.progress == 0]
    measured = [c for c in policy.clocks if c.progress > 0]
    assert unmeasured and measured
    assert {c.total_work_seconds for c in unmeasured} == {4 * HOUR}
    assert {round(c.total_work_seconds) for c in measured} == {5 * HOUR}


def test_the_declared_baseline_plans_with_the_declared_work_throughout() -> None:
    j = Job.from_seconds(work=4 * HOUR, deadline=8 * HOUR, work_error=0.25)  # really 5 h
    policy = POLICIES["declared"](j, START)
    assert isinstance(policy, SpotlinePolicy) and policy.name == "declared"
    outcome = simulate(j, flags("1" * j.deadline), policy)
    assert outcome.met
    assert {c.total_work_seconds for c in policy.clocks} == {4 * HOUR}
    assert not any(c.work_measured for c in policy.clocks)


def test_spotline_returns_to_spot_once_a_measured_pace_frees_the_slack() -> None:
    # 8 h declared, 6 h really, due in 9 h, no spot for the first 40 minutes: the declared work
    # leaves 16 minutes of slack, so the job moves to on-demand; its first checkpoint there measures
    # 6 h, the slack grows back to about 2 h, and the fleet sees spot again: back to spot.
    j = Job.from_seconds(work=8 * HOUR, deadline=9 * HOUR, work_error=-0.25)
    avail = flags("0" * 40 + "1" * (j.deadline - 40))
    policy = SpotlinePolicy(j, START)
    outcome = simulate(j, avail, policy)
    actions = [a.step.action for a in policy.assessments]
    assert actions.count("switch-to-on-demand") == 1 and actions.count("return-to-spot") == 1
    assert actions.index("switch-to-on-demand") < actions.index("return-to-spot")
    back = next(a for a in policy.assessments if a.step.action == "return-to-spot")
    assert back.clock.capacity == "on-demand" and back.clock.spot_seen and back.clock.work_measured
    assert back.step.explanation.startswith("spot capacity is back (the fleet just saw it)")
    assert outcome.met and outcome.spot_steps > 5 * 60 and outcome.on_demand_steps < HOUR // 60
    one_way = simulate(j, avail, POLICIES["greedy"](j, START))  # on-demand for good after the gap
    assert outcome.cost < 0.5 * one_way.cost


def test_a_return_to_spot_spends_the_slack_so_spot_that_keeps_going_brings_no_second_one() -> None:
    # Spot seen for 10 minutes out of every 40, never long enough for a start-up: the return waits
    # for spot until the last safe moment, and then on-demand has no slack left for another return
    # (`lifecycle.MAX_RETURNS_TO_SPOT` bounds what a pace freeing slack again could add).
    j = Job.from_seconds(work=8 * HOUR, deadline=12 * HOUR, work_error=-0.25)
    avail = flags(("0" * 30 + "1" * 10) * (j.deadline // 40 + 1))[: j.deadline]
    policy = SpotlinePolicy(j, START)
    outcome = simulate(j, avail, policy)
    actions = [a.step.action for a in policy.assessments]
    assert outcome.met
    assert actions.count("return-to-spot") == 1 and actions.count("switch-to-on-demand") == 2
    assert [c.capacity for c in policy.previous] == ["spot", "on-demand", "spot"]
    last = policy.assessments[-1]
    assert last.clock.capacity == "on-demand" and last.decision.reason == (
        "on on-demand capacity; too little slack or work left for a return to spot"
    )


# --- the production policy on fixture logs (regression) ------------------------------------------


def test_production_policy_on_fixture_traces_meets_every_feasible_deadline_near_the_optimum(tmp_path: Path) -> None:
    traces = all_traces(read_logs(fixture_logs(tmp_path)))
    assert sorted(t.label for t in traces) == [
        "aws/us-east-1b/1xv100",
        "aws/us-east-1c/8xk80",
        "gcp/us-central1-c/1xk80",
        "gcp/us-east1-c/1xp100",
        "gcp/us-west1-b/1xv100",
    ]
    grid = GridSpec(work_hours=(4.0, 8.0), slacks=(0.2, 0.5, 1.0), start_every_hours=8.0)
    rows = run_grid(traces, grid)
    summaries = {s.policy: s for s in summarize(rows, grid.policies)}
    spotline_ = summaries["spotline"]
    assert spotline_.feasible == spotline_.runs > 100
    assert spotline_.missed == 0
    # Generous bounds (1.31 and 3.33 today; the former early-switch rule made it 1.49).
    assert spotline_.mean_vs_optimum <= 1.4
    assert spotline_.worst_vs_optimum <= 3.4  # a 20% slack that only clairvoyance can use on spot
    assert spotline_.mean_vs_optimum <= summaries["uniform"].mean_vs_optimum + 0.02
    assert spotline_.mean_vs_on_demand < 0.75
    for row in rows:
        if row.met:
            assert row.cost >= row.optimum - 1e-9
    assert all(r.met for r in rows if r.policy in ("on-demand", "greedy", "uniform"))
    assert summaries["spot-no-ckpt"].missed > 0  # the failure the product exists to prevent


def test_the_grid_sizes_the_first_checkpoint_with_the_production_rule_and_spotline_stays_on_spot() -> None:
    grid = GridSpec()
    assert grid.job(16.0, 0.1).first_checkpoint == 6  # 96m slack - 20m - 48m margin - 20m start-up - 2m
    assert grid.job(8.0, 0.2).first_checkpoint is None  # the 15-minute interval comes in time
    j = grid.job(16.0, 0.1)
    spot = flags("1" * j.deadline)
    stays = simulate(j, spot, SpotlinePolicy(j, START))
    assert stays.met and stays.switched_at is None  # measured after 6 minutes, then 2 % margin
    late = replace(j, first_checkpoint=None)
    switched = simulate(late, spot, SpotlinePolicy(late, START))
    assert switched.switched_at is not None and switched.switched_at < 60  # before its first checkpoint
