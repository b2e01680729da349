"""The grid across regions: every job of the grid free to move between a set's regions (against
the multi-region optimum and safe optimum), and pinned to each region (against that region's)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from functools import partial

import numpy as np

from spotline.core.regions.regions import RECORD_WINDOW_SECONDS
from spotline_dev.research.simulate.grid import GridSpec, Row, row_of, safe_optima
from spotline_dev.research.simulate.model import HOUR
from spotline_dev.research.simulate.optimum import optimal_costs, optimal_costs_across_regions
from spotline_dev.research.simulate.policies import run_policy
from spotline_dev.research.simulate.regions import REGION_POLICIES, RegionSet, run_region_policy

ACROSS_REGIONS = "across-regions"
"""`Row.source` of a job free to run in every region; a pinned job's source is its region."""


def run_region_cell(regions: RegionSet, grid: GridSpec, work_hours: float) -> list[Row]:
    """Every start, slack and policy for one region set and one job length: the across-regions
    policies against the multi-region optimum, then every single-region policy pinned to each
    region against that region's optimum."""
    span = regions.duration_seconds / HOUR - work_hours * (1 + max(grid.slacks))
    if span < 0:
        return []
    starts = [k * grid.start_every_hours for k in range(int(span // grid.start_every_hours) + 1)]
    loosest = grid.job(work_hours, max(grid.slacks))
    windows = np.stack(
        [regions.availability(grid.step_seconds, s * HOUR, loosest.deadline) for s in starts]
    )  # (starts, regions, steps)
    everywhere = optimal_costs_across_regions(loosest, windows, horizon=loosest.deadline)
    pinned = [optimal_costs(loosest, windows[:, r], horizon=loosest.deadline) for r in range(len(regions.regions))]
    safe_everywhere = safe_optima(grid, work_hours, windows)
    safe_pinned = [safe_optima(grid, work_hours, windows[:, r]) for r in range(len(regions.regions))]
    first = regions.zones[0][0]
    rows: list[Row] = []
    day = RECORD_WINDOW_SECONDS / HOUR
    for i, start_hours in enumerate(starts):
        start = first.start + timedelta(hours=start_hours)
        before = min(day, start_hours)  # the fleet's record of the day before the job
        history = regions.availability(
            grid.step_seconds, (start_hours - before) * HOUR, round(before * HOUR / grid.step_seconds)
        )
        for slack in grid.slacks:
            job = grid.job(work_hours, slack)
            window = windows[i, :, : job.deadline]
            row = partial(
                row_of, trace=regions.name, start_hours=start_hours, work_hours=work_hours, slack=slack, job=job
            )
            for name in REGION_POLICIES:
                outcome = run_region_policy(
                    name,
                    job,
                    available=window,
                    start=start,
                    regions=regions.regions,
                    checkpoint_gib=grid.checkpoint_gib,
                    history=history,
                )
                optimum = float(everywhere[i, job.deadline])
                safe = float(safe_everywhere[slack][i])
                rows.append(row(source=ACROSS_REGIONS, outcome=outcome, optimum=optimum, safe_optimum=safe))
            for r, region in enumerate(regions.regions):
                for name, seed in ((n, s) for n in grid.policies for s in grid.seeds_of(n)):
                    outcome = run_policy(name, job, window[r], start, seed)
                    optimum = float(pinned[r][i, job.deadline])
                    safe = float(safe_pinned[r][slack][i])
                    rows.append(row(source=region, outcome=outcome, optimum=optimum, safe_optimum=safe))
    return rows


def _run_region_cell(args: tuple[RegionSet, GridSpec, float]) -> list[Row]:
    return run_region_cell(*args)


def run_region_grid(sets: Sequence[RegionSet], grid: GridSpec, workers: int = 1) -> list[Row]:
    """Rows in a fixed order (set, work, start, slack, policy), whatever the number of workers."""
    cells = [(regions, grid, work) for regions in sets for work in grid.work_hours]
    if workers <= 1 or len(cells) <= 1:
        return [row for cell in cells for row in run_region_cell(*cell)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return [row for rows in pool.map(_run_region_cell, cells) for row in rows]
