"""`spotline simulate` itself: the grid from the command line, the traces, the printed report
(or, with --json, one JSON document on stdout for scripts, the rest on stderr)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from spotline_dev.research.simulate.grid import GridSpec, default_workers
from spotline_dev.research.simulate.region_report import run_regions
from spotline_dev.research.simulate.regions import region_sets
from spotline_dev.research.simulate.report import run, slack_table, summary_json
from spotline_dev.research.trace_series import read_trace_folder
from spotline_dev.research.traces import DEFAULT_TRACES_DIR, REPO_ROOT

EXIT_OK, EXIT_USAGE = 0, 2
DEFAULT_OUT_DIR = REPO_ROOT / "out" / "simulate"


def grid_from_args(args: argparse.Namespace) -> GridSpec:
    return GridSpec(
        work_hours=tuple(float(w) for w in args.work_hours),
        slacks=tuple(float(s) / 100 for s in args.slack),
        start_every_hours=float(args.start_every_hours),
        overhead_seconds=float(args.overhead_minutes) * 60,
        checkpoint_seconds=float(args.checkpoint_minutes) * 60,
        step_seconds=int(args.step_seconds),
        spot_price_ratio=float(args.spot_price_ratio),
        overhead_billed=bool(args.bill_overhead),
        work_error=float(args.work_error) / 100,
        checkpoint_gib=float(getattr(args, "checkpoint_gib", 10.0)),
        seeds=int(getattr(args, "seeds", 8)),
    )


def missing_traces(folder: Path, *, given: bool) -> str:
    """Why there is nothing to replay: the folder looked for, and how to point at another one."""
    if given:
        return f"--traces {folder}: no such folder (looked for {folder.resolve()})"
    return (
        f"no spot traces at {folder} (the default: the shared data next to the repository); "
        "--traces DIR reads them from another folder (the 2020 *.log logs, or *.json traces in the paper's format)"
    )


def main(args: argparse.Namespace) -> int:
    """`spotline simulate` (arguments from spotline_dev.cli.entry)."""
    folder = Path(args.traces) if args.traces else DEFAULT_TRACES_DIR
    if not folder.is_dir():
        print(f"spotline simulate: usage error: {missing_traces(folder, given=bool(args.traces))}", file=sys.stderr)
        return EXIT_USAGE
    out_dir = Path(args.out) if args.out else DEFAULT_OUT_DIR
    as_json = getattr(args, "output", "table") == "json"
    info = sys.stderr if as_json else sys.stdout  # with --json stdout holds the document alone
    try:
        grid = grid_from_args(args)
        if min(grid.work_hours) <= 0 or min(grid.slacks) <= 0 or grid.start_every_hours <= 0 or grid.seeds <= 0:
            raise ValueError("work hours, slack, --start-every-hours and --seeds must be positive")
        found = read_trace_folder(folder)
    except (ValueError, OSError) as exc:
        print(f"spotline simulate: {exc}", file=sys.stderr)
        return EXIT_USAGE
    traces = found.traces
    print(f"spot traces in {folder} (read in place):", file=info)
    for line in found.summaries():
        print(f"  {line}", file=info)
    workers = max(1, int(args.jobs or default_workers()))
    if getattr(args, "regions", False):
        sets = region_sets(traces)
        if not sets:
            print(f"spotline simulate: --regions: no trace in {folder} names a zone (us-west-2b_...)", file=sys.stderr)
            return EXIT_USAGE
        return run_regions(sets, grid, out_dir, workers=workers, as_json=as_json, info=info)
    instances = sum(len(grid.starts(t, w)) for t in traces for w in grid.work_hours) * len(grid.slacks)
    print(f"grid: {grid.describe(len(traces))}: {instances} jobs x {len(grid.policies)} policies", file=info)
    if not instances:
        print("spotline simulate: no job fits in these traces; try shorter --work-hours", file=sys.stderr)
        return EXIT_USAGE
    report = run(traces, grid, out_dir, workers=workers, with_plot=not args.no_plot)
    written = [report.runs_csv, report.summary_csv, *([report.png] if report.png else [])]
    if as_json:
        print(json.dumps(summary_json(grid, len(traces), report.rows), indent=2, allow_nan=False))
        print(f"wrote {', '.join(str(p) for p in written)} in {report.seconds:.1f}s", file=sys.stderr)
        return EXIT_OK
    print()
    print(report.table)
    print()
    print("mean cost / optimum by deadline slack (feasible deadlines):")
    print(slack_table(report.rows, grid.policies))
    print()
    print("mean/OD, worst/OD: cost against on-demand from the start; mean/opt, worst/opt: against the offline")
    print("optimum, per job; bill/opt: all costs over all optimal costs. Costs over feasible deadlines; a missed")
    print("job counts what it paid until its deadline.")
    print(f"wrote {', '.join(str(p) for p in written)} in {report.seconds:.1f}s")
    return EXIT_OK
