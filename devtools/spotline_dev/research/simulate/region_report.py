"""`spotline simulate --regions`: the grid across regions, its tables, its files and `--json`
(the single-region document's shape, the optimum the multi-region one, plus `singleRegion`)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from spotline_dev.research.simulate.grid import GridSpec, Row
from spotline_dev.research.simulate.region_grid import ACROSS_REGIONS, run_region_grid
from spotline_dev.research.simulate.regions import REGION_POLICIES, RegionSet
from spotline_dev.research.simulate.report import (
    CSV_FIELDS,
    SUMMARY_FIELDS,
    format_table,
    optima_summaries,
    policies_json,
    safe_optimum_json,
    slack_table,
    summarize,
    summary_json,
    write_csv,
)


def spot_can_start(row: Row, grid: GridSpec) -> bool:
    """Whether a policy that may not miss can start the job on spot at all: its slack covers a
    start-up and a checkpoint interval before the last moment an on-demand restart from nothing
    still finishes. Below it every such policy pays on-demand from the start, whatever the
    capacity, while the offline optimum, which knows spot will hold, pays spot."""
    slack_seconds = (row.deadline_hours - row.work_hours) * 3600
    return slack_seconds >= 2 * grid.overhead_seconds + grid.checkpoint_seconds


def regions_json(grid: GridSpec, sets: Sequence[RegionSet], rows: Sequence[Row]) -> dict[str, object]:
    across = [r for r in rows if r.source == ACROSS_REGIONS]
    document = summary_json(grid, sum(len(z) for s in sets for z in s.zones), across, tuple(REGION_POLICIES))
    regions = sorted({region for s in sets for region in s.regions})
    document["grid"]["regions"] = regions  # type: ignore[index]
    document["grid"]["checkpointGib"] = grid.checkpoint_gib  # type: ignore[index]
    can_start = [r for r in across if spot_can_start(r, grid)]
    document["whereSpotCanStart"] = {
        "rule": "deadline - work >= 2 x restart + checkpoint interval",
        "jobs": len({(r.trace, r.start_hours, r.work_hours, r.slack) for r in can_start}),
        "policies": policies_json(can_start, tuple(REGION_POLICIES)),
    }
    pinned = {region: [r for r in rows if r.source == region] for region in regions}
    document["singleRegion"] = {
        region: {"policies": policies_json(own, grid.policies), "safeOptimum": safe_optimum_json(own)}
        for region, own in pinned.items()
    }
    return document


def run_regions(
    sets: Sequence[RegionSet], grid: GridSpec, out_dir: Path, *, workers: int, as_json: bool, info: TextIO
) -> int:
    began = time.perf_counter()
    print(f"regions: {', '.join(f'{s.name} ({", ".join(s.regions)})' for s in sets)}", file=info)
    rows = run_region_grid(sets, grid, workers=workers)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs_csv, summary_csv = out_dir / "runs.csv", out_dir / "summary.csv"
    write_csv(rows, CSV_FIELDS, runs_csv)
    across = [r for r in rows if r.source == ACROSS_REGIONS]
    write_csv([*summarize(across, tuple(REGION_POLICIES)), *optima_summaries(across)], SUMMARY_FIELDS, summary_csv)
    seconds = time.perf_counter() - began
    if as_json:
        print(json.dumps(regions_json(grid, sets, rows), indent=2, allow_nan=False))
        print(f"wrote {runs_csv}, {summary_csv} in {seconds:.1f}s", file=sys.stderr)
        return 0
    print("\nacross regions (against the multi-region optimum):")
    print(format_table([*summarize(across, tuple(REGION_POLICIES)), *optima_summaries(across)]))
    print("\nmean cost / optimum by deadline slack, across regions:")
    print(slack_table(across, tuple(REGION_POLICIES)))
    for region in sorted({r.source for r in rows} - {ACROSS_REGIONS}):
        pinned = [r for r in rows if r.source == region]
        print(f"\npinned to {region} (against that region's optimum):")
        print(format_table([*summarize(pinned, grid.policies), *optima_summaries(pinned)]))
    print(f"\nwrote {runs_csv}, {summary_csv} in {seconds:.1f}s")
    return 0
