"""`spotline simulate`: the simulator, the baselines, the offline optimum (checked against brute
force on tiny grids) and the production deadline policy on fixture traces.

Fixture traces are built here (arrays, or logs written to tmp_path in the real logs' line forms);
the real logs stay in ../shared and are never read by these tests.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import spotline.core.policy
from spotline_dev import simulate as sim
from spotline_dev.cli import main as cli_main
from spotline_dev.simulate import (
    CSV_FIELDS,
    POLICIES,
    Capacity,
    Command,
    Greedy,
    GridSpec,
    Job,
    Policy,
    Scripted,
    SpotlinePolicy,
    UniformProgress,
    View,
    optimal_costs,
    optimum_summary,
    run_grid,
    run_policy,
    simulate,
    summarize,
)
from spotline_dev.traces import Config, Trace, all_traces, read_logs

START = datetime(2020, 3, 15, 10, 0, tzinfo=UTC)
HOUR = 3600
Flags = npt.NDArray[np.bool_]


def flags(pattern: str) -> Flags:
    """'1' = spot capacity in that step, '0' = none."""
    return np.array([c == "1" for c in pattern], dtype=np.bool_)


def random_trace(rng: np.random.Generator, steps: int, mean_up: float, mean_down: float) -> Flags:
    """Alternating runs of capacity and gaps with geometric lengths."""
    out: list[bool] = []
    up = bool(rng.random() < 0.7)
    while len(out) < steps:
        length = int(rng.geometric(1 / (mean_up if up else mean_down)))
        out.extend([up] * length)
        up = not up
    return np.array(out[:steps], dtype=np.bool_)


def job(work: int, deadline: int, overhead: int = 3, checkpoint: int | None = 4, **kw: Any) -> Job:
    return Job(work=work, deadline=deadline, overhead=overhead, checkpoint=checkpoint, **kw)


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
def test_on_demand_only_costs_the_work_at_the_on_demand_price(work: int, deadline: int, billed: bool) -> None:
    j = job(work, deadline, overhead=3, step_seconds=HOUR, on_demand_price=2.5, overhead_billed=billed)
    outcome = simulate(j, flags("0" * deadline), POLICIES["on-demand"](j, START))
    assert outcome.met == (deadline >= work + 3)
    if outcome.met:
        assert outcome.cost == pytest.approx(work * 2.5 + (3 * 2.5 if billed else 0.0))
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
    assert len(rows) == 2 * len(POLICIES)
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
    missed = next(r for r in rows if r.policy == "spot-ckpt" and r.slack == 1.0)
    assert not missed.met and missed.finished_hours is None
    assert missed.cost == pytest.approx((60 - 20) / 60 * 0.3)  # spot paid until the capacity went


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
            left -= 1
            cost += price * j.step_hours if j.overhead_billed else 0.0
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
    assert optimal_costs(j, flags("1" * 14))[14] == pytest.approx(10 * 0.3)
    assert optimal_costs(j, flags("1" * 5 + "0" * 9))[14] == pytest.approx(10.0)  # too short to help
    assert optimal_costs(j, flags("1" * 14))[12] == math.inf


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
    assert sim.decide is spotline.core.policy.decide
    j = Job.from_seconds(work=4 * HOUR, deadline=8 * HOUR)
    policy = SpotlinePolicy(j, START)
    outcome = simulate(j, flags("1" * j.deadline), policy)
    assert outcome.met and outcome.switched_at is None and outcome.cost == pytest.approx(4 * 0.3)
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
    # 60 of 240 minutes trained and saved; on-demand needs 3h + 20m restart + 12m margin = 212m.
    assert outcome.switched_at is not None and 480 - 212 - 2 <= outcome.switched_at <= 480 - 212
    assert policy.reason.startswith("deadline at risk: ")
    assert outcome.cost == pytest.approx(1 * 0.3 + 3 * 1.0)


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


# --- the production policy on fixture logs (regression) ------------------------------------------


def write_log(path: Path, configs: dict[tuple[str, str, int], str], provider: str) -> None:
    """A log in the real line forms: every 10 minutes each configuration is checked; `pattern`
    has a character per check: '1' capacity, '0' none."""
    lines: list[tuple[datetime, str]] = []
    for index, ((zone, gpu, count), pattern) in enumerate(configs.items()):
        name = f"instance{index}"
        serial = 0
        running = False
        for k, c in enumerate(pattern):
            moment = START + timedelta(minutes=10 * k, seconds=index)

            def add(text: str, moment: datetime = moment) -> None:
                lines.append((moment, text))

            ident = name
            if provider == "aws":
                ident = f"i-{index:04x}{serial:012x}"
            if running and c == "1":
                add(f"Instance {ident} running in zone {zone}")
                continue
            if running:
                add(f"Instance {ident} not running in zone {zone}")
                add(f"Successfully deleted instance {ident}")
                running = False
                serial += 1
                ident = name if provider == "gcp" else f"i-{index:04x}{serial:012x}"
            if c == "1":
                add(f"Created instance {ident} with {count} GPU(s) of type {gpu} in zone {zone}")
                running = True
            elif provider == "gcp":
                add(f"Instance {ident} creation failed")
                add(f"Instance {ident} not running in zone {zone}")
            else:
                add(f"Instance with {count} GPU(s) of type {gpu} creation failed")
    lines.sort(key=lambda item: item[0])
    path.write_text("".join(f"[{m.strftime('%Y-%m-%dT%H:%M:%S.000Z')}] {text}\n" for m, text in lines))


def fixture_logs(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2020)
    checks = 6 * 40  # 40 hours
    flaky = "".join("1" if rng.random() < 0.55 else "0" for _ in range(checks))
    runs = "".join(c * int(rng.integers(1, 30)) for c in "10" * 40)[:checks]
    write_log(
        folder / "aws-fixture.log",
        {("us-east-1b", "v100", 1): "1" * checks, ("us-east-1c", "k80", 8): "0" * 30 + "1" * 60 + "0" * 150},
        "aws",
    )
    gappy = ("000" + ("1" * 12 + "00") * 20)[:checks]  # a late start, then short gaps every two hours
    write_log(
        folder / "gcp-fixture.log",
        {
            ("us-west1-b", "nvidia-tesla-v100", 1): flaky,
            ("us-central1-c", "nvidia-tesla-k80", 1): runs,
            ("us-east1-c", "nvidia-tesla-p100", 1): gappy,
        },
        "gcp",
    )
    return folder


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


# --- the command ----------------------------------------------------------------------------------


def test_spotline_simulate_prints_the_table_and_writes_csv_and_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["simulate", "--traces", str(fixture_logs(tmp_path / "logs")), "--out", str(out)]
    args += ["--work-hours", "4", "--slack", "25", "100", "--start-every-hours", "12", "--jobs", "1"]
    assert cli_main(args) == 0
    printed = capsys.readouterr().out
    assert "aws-fixture.log (aws): 2 traces" in printed
    header = next(line for line in printed.splitlines() if line.startswith("policy"))
    assert header.split()[:5] == ["policy", "runs", "mean/OD", "worst/OD", "mean/opt"]
    for name in [*POLICIES, "optimum"]:
        assert any(line.startswith(f"{name} ") for line in printed.splitlines()), name
    with (out / "runs.csv").open() as f:
        records = list(csv.DictReader(f))
    assert list(records[0]) == list(CSV_FIELDS)
    assert len(records) == 5 * 3 * 2 * len(POLICIES)  # traces x starts x slacks x policies
    assert (out / "summary.csv").read_text().startswith("policy,runs,feasible,")
    assert (out / "cost_vs_slack.png").read_bytes()[:4] == b"\x89PNG"


def test_spotline_simulate_reports_a_folder_without_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["simulate", "--traces", str(tmp_path), "--no-plot"]) == 2
    assert "no *.log spot-availability logs" in capsys.readouterr().err
