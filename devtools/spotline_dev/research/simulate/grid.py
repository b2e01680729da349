"""The grid of simulated jobs (traces x job lengths x start offsets x deadline slacks) and its
runs: a `Row` per policy and job, against the offline optimum and the safe optimum of the same
job."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import numpy.typing as npt

from spotline.core.capacity.policy import first_checkpoint_for
from spotline.core.regions.regions import GIB, copy_estimate
from spotline_dev.research.simulate.model import (
    DEFAULT_CHECKPOINT_SECONDS,
    DEFAULT_OVERHEAD_SECONDS,
    DEFAULT_STEP_SECONDS,
    HOUR,
    SPOT_PRICE_RATIO,
    Job,
    Outcome,
)
from spotline_dev.research.simulate.optimum import optimal_costs
from spotline_dev.research.simulate.policies import POLICIES, RANDOMIZED, run_policy
from spotline_dev.research.simulate.safe_optimum import safe_costs_by_deadline
from spotline_dev.research.traces import Trace

ML_P3_2XLARGE_USD_PER_HOUR = 3.825
"""SageMaker training on-demand price of ml.p3.2xlarge (the traces' p3.2xlarge) in us-east-1,
us-east-2 and us-west-2: what the checkpoint copy's transfer price is measured against."""


@dataclass(frozen=True, slots=True)
class GridSpec:
    work_hours: tuple[float, ...] = (4.0, 8.0, 16.0)
    slacks: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    """Deadline = work x (1 + slack) after the submission."""
    start_every_hours: float = 6.0
    """Jobs start 0h, 6h, 12h, ... into each trace, as long as the loosest deadline still fits."""
    overhead_seconds: float = DEFAULT_OVERHEAD_SECONDS
    checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS
    step_seconds: int = DEFAULT_STEP_SECONDS
    spot_price_ratio: float = SPOT_PRICE_RATIO
    overhead_billed: bool = False
    work_error: float = 0.0
    """Jobs really need work x (1 + work_error); every policy is told the work (expectedDuration)."""
    policies: tuple[str, ...] = tuple(POLICIES)
    checkpoint_gib: float = 10.0
    """The checkpoint a move between regions copies (`--regions`)."""
    on_demand_usd_per_hour: float = ML_P3_2XLARGE_USD_PER_HOUR
    """Prices the copy in on-demand hours (`--regions`)."""
    seeds: int = 8
    """Runs (seeds 0, 1, ...) of a randomized policy per job, a row each: its mean is an expectation."""

    def seeds_of(self, policy: str) -> range:
        return range(self.seeds if policy in RANDOMIZED else 1)

    def job(self, work_hours: float, slack: float) -> Job:
        copy_seconds, copy_usd = copy_estimate(round(self.checkpoint_gib * GIB), "here", "there")
        return Job.from_seconds(
            work=work_hours * HOUR,
            deadline=work_hours * (1 + slack) * HOUR,
            overhead=self.overhead_seconds,
            checkpoint=self.checkpoint_seconds,
            step_seconds=self.step_seconds,
            spot_price_ratio=self.spot_price_ratio,
            overhead_billed=self.overhead_billed,
            work_error=self.work_error,
            copy=copy_seconds,
            copy_cost=copy_usd / self.on_demand_usd_per_hour,
            first_checkpoint=first_checkpoint_for(
                work_seconds=work_hours * HOUR,
                deadline_seconds=work_hours * (1 + slack) * HOUR,
                restart_seconds=self.overhead_seconds,
                interval_seconds=self.checkpoint_seconds,
            ),
        )

    def starts(self, trace: Trace, work_hours: float) -> list[float]:
        """Start offsets (hours into the trace) at which the loosest deadline still fits."""
        span = trace.duration_seconds / HOUR - work_hours * (1 + max(self.slacks))
        if span < 0:
            return []
        return [k * self.start_every_hours for k in range(int(span // self.start_every_hours) + 1)]

    def describe(self, traces: int) -> str:
        works = ", ".join(f"{w:g}h" for w in self.work_hours)
        slacks = f"{100 * min(self.slacks):g}-{100 * max(self.slacks):g}%"
        text = (
            f"{traces} traces x work {works} x slack {slacks} x a start every {self.start_every_hours:g}h; "
            f"restart {self.overhead_seconds / 60:g}m, checkpoint every {self.checkpoint_seconds / 60:g}m, "
            f"spot at {self.spot_price_ratio:g} x on-demand"
        )
        if self.work_error:
            text += f", jobs {100 * self.work_error:+g}% longer than declared"
        return text


@dataclass(frozen=True, slots=True)
class Row:
    """One policy on one instance (trace, start, work, slack)."""

    trace: str
    source: str
    start_hours: float
    work_hours: float
    slack: float
    deadline_hours: float
    policy: str
    cost: float
    """In on-demand hours (on-demand price = 1)."""
    on_demand_cost: float
    optimum: float
    """`inf` when no policy can meet the deadline."""
    met: bool
    finished_hours: float | None
    spot_hours: float
    on_demand_hours: float
    preemptions: int
    lost_hours: float
    switched_at_hours: float | None
    reason: str
    moves: int = 0
    """Attempts started in another region than the one before (`--regions`)."""
    safe_optimum: float = math.inf
    """The cheapest schedule that never risks the deadline (`safe_costs`); `inf` when infeasible."""

    @property
    def feasible(self) -> bool:
        return math.isfinite(self.optimum)

    @property
    def vs_on_demand(self) -> float:
        return self.cost / self.on_demand_cost

    @property
    def vs_optimum(self) -> float:
        return self.cost / self.optimum if self.feasible and self.optimum > 0 else math.nan

    @property
    def vs_safe_optimum(self) -> float:
        """Below 1 only for a policy that risked the deadline on this job: lucky, or missing it."""
        finite = self.feasible and math.isfinite(self.safe_optimum) and self.safe_optimum > 0
        return self.cost / self.safe_optimum if finite else math.nan


def row_of(
    *,
    trace: str,
    source: str,
    start_hours: float,
    work_hours: float,
    slack: float,
    job: Job,
    outcome: Outcome,
    optimum: float,
    safe_optimum: float = math.inf,
) -> Row:
    hours = job.step_hours
    return Row(
        trace=trace,
        source=source,
        start_hours=start_hours,
        work_hours=work_hours,
        slack=slack,
        deadline_hours=job.deadline * hours,
        policy=outcome.policy,
        cost=outcome.cost,
        on_demand_cost=job.on_demand_cost,
        optimum=optimum,
        met=outcome.met,
        finished_hours=None if outcome.finished_at is None else outcome.finished_at * hours,
        spot_hours=outcome.spot_steps * hours,
        on_demand_hours=outcome.on_demand_steps * hours,
        preemptions=outcome.preemptions,
        lost_hours=outcome.lost_steps * hours,
        switched_at_hours=None if outcome.switched_at is None else outcome.switched_at * hours,
        reason=outcome.reason,
        moves=outcome.moves,
        safe_optimum=safe_optimum,
    )


def run_cell(trace: Trace, grid: GridSpec, work_hours: float) -> list[Row]:
    """Every start, slack and policy for one trace and one job length (one optimum computation)."""
    starts = grid.starts(trace, work_hours)
    if not starts:
        return []
    loosest = grid.job(work_hours, max(grid.slacks))
    windows = np.stack([trace.availability(grid.step_seconds, s * HOUR, loosest.deadline) for s in starts])
    best = optimal_costs(loosest, windows, horizon=loosest.deadline)
    safe = safe_optima(grid, work_hours, windows)
    rows: list[Row] = []
    for i, start_hours in enumerate(starts):
        start = trace.start + timedelta(hours=start_hours)
        for slack in grid.slacks:
            job = grid.job(work_hours, slack)
            window = windows[i, : job.deadline]
            for name, seed in ((n, s) for n in grid.policies for s in grid.seeds_of(n)):
                outcome = run_policy(name, job, window, start, seed)
                rows.append(
                    row_of(
                        trace=trace.label,
                        source=trace.source,
                        start_hours=start_hours,
                        work_hours=work_hours,
                        slack=slack,
                        job=job,
                        outcome=outcome,
                        optimum=float(best[i, job.deadline]),
                        safe_optimum=float(safe[slack][i]),
                    )
                )
    return rows


def safe_optima(
    grid: GridSpec, work_hours: float, windows: npt.NDArray[np.bool_]
) -> dict[float, npt.NDArray[np.float64]]:
    """Slack -> the safe optimum of the job in each window (B, T) or (B, R, T): one run for every
    slack whose job saves first at the same time (`Job.first_checkpoint`, sized to the slack: the
    yardstick gets the checkpoints every policy gets)."""
    places = windows[:, None, :] if windows.ndim == 2 else windows
    jobs = {slack: grid.job(work_hours, slack) for slack in grid.slacks}
    result: dict[float, npt.NDArray[np.float64]] = {}
    for first in dict.fromkeys(job.first_checkpoint for job in jobs.values()):
        slacks = [slack for slack, job in jobs.items() if job.first_checkpoint == first]
        deadlines = [jobs[slack].deadline for slack in slacks]
        costs = safe_costs_by_deadline(jobs[max(slacks)], places, deadlines, first_interval=first)
        result.update(zip(slacks, costs.T, strict=True))
    return result


def _run_cell(args: tuple[Trace, GridSpec, float]) -> list[Row]:
    return run_cell(*args)


def run_grid(traces: Sequence[Trace], grid: GridSpec, workers: int = 1) -> list[Row]:
    """Rows in a fixed order (trace, work, start, slack, policy), whatever the number of workers."""
    cells = [(trace, grid, work) for trace in traces for work in grid.work_hours]
    if workers <= 1 or len(cells) <= 1:
        return [row for cell in cells for row in run_cell(*cell)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return [row for rows in pool.map(_run_cell, cells) for row in rows]


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))
