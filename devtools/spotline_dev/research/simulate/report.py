"""What the grid's rows come to: the summary table, cost by slack, `runs.csv`, `summary.csv`
and `cost_vs_slack.png`."""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spotline_dev.research.simulate.grid import GridSpec, Row, run_grid
from spotline_dev.research.traces import Trace


@dataclass(frozen=True, slots=True)
class Summary:
    """One policy over the grid: costs over the feasible instances, misses over all of them."""

    policy: str
    runs: int
    feasible: int
    mean_vs_on_demand: float
    worst_vs_on_demand: float
    mean_vs_optimum: float
    """Mean of the per-instance ratios cost / optimum."""
    mean_vs_safe_optimum: float
    """Mean of the per-instance ratios cost / safe optimum, over the same instances."""
    worst_vs_optimum: float
    bill_vs_optimum: float
    """Sum of costs over the sum of optimal costs: the whole grid's bill against the best one."""
    missed: int
    missed_feasible: int

    @property
    def miss_rate(self) -> float:
        return self.missed / self.runs if self.runs else math.nan


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if values else math.nan


def summarize(rows: Iterable[Row], policies: Sequence[str] | None = None) -> list[Summary]:
    by_policy: dict[str, list[Row]] = {}
    for row in rows:
        by_policy.setdefault(row.policy, []).append(row)
    out: list[Summary] = []
    for name in list(policies) if policies is not None else list(by_policy):
        group = by_policy.get(name, [])
        feasible = [r for r in group if r.feasible]
        best = sum(r.optimum for r in feasible)
        out.append(
            Summary(
                policy=name,
                runs=len(group),
                feasible=len(feasible),
                mean_vs_on_demand=_mean([r.vs_on_demand for r in feasible]),
                worst_vs_on_demand=max((r.vs_on_demand for r in feasible), default=math.nan),
                mean_vs_optimum=_mean([r.vs_optimum for r in feasible]),
                mean_vs_safe_optimum=_mean([r.vs_safe_optimum for r in feasible]),
                worst_vs_optimum=max((r.vs_optimum for r in feasible), default=math.nan),
                bill_vs_optimum=sum(r.cost for r in feasible) / best if best > 0 else math.nan,
                missed=sum(1 for r in group if not r.met),
                missed_feasible=sum(1 for r in feasible if not r.met),
            )
        )
    return out


def _instances(rows: Iterable[Row]) -> list[Row]:
    """One row per job (trace, start, work, slack): what every policy's row says of its optima."""
    instances: dict[tuple[str, float, float, float], Row] = {}
    for row in rows:
        instances.setdefault((row.trace, row.start_hours, row.work_hours, row.slack), row)
    return list(instances.values())


def optimum_summary(rows: Iterable[Row]) -> Summary:
    """The offline optimum as a line of the table (it misses exactly the infeasible deadlines)."""
    instances = _instances(rows)
    feasible = [r for r in instances if r.feasible]
    ratios = [r.optimum / r.on_demand_cost for r in feasible]
    return Summary(
        policy="optimum",
        runs=len(instances),
        feasible=len(feasible),
        mean_vs_on_demand=_mean(ratios),
        worst_vs_on_demand=max(ratios, default=math.nan),
        mean_vs_optimum=1.0,
        mean_vs_safe_optimum=_mean([r.optimum / r.safe_optimum for r in feasible]),
        worst_vs_optimum=1.0,
        bill_vs_optimum=1.0,
        missed=len(instances) - len(feasible),
        missed_feasible=0,
    )


def safe_optimum_summary(rows: Iterable[Row]) -> Summary:
    """The safe optimum as a line of the table: what never risking a deadline costs at the least,
    over the hindsight optimum (feasible on the same jobs)."""
    instances = _instances(rows)
    feasible = [r for r in instances if r.feasible]
    over_od = [r.safe_optimum / r.on_demand_cost for r in feasible]
    over_optimum = [r.safe_optimum / r.optimum for r in feasible if r.optimum > 0]
    best = sum(r.optimum for r in feasible)
    return Summary(
        policy="safe optimum",
        runs=len(instances),
        feasible=len(feasible),
        mean_vs_on_demand=_mean(over_od),
        worst_vs_on_demand=max(over_od, default=math.nan),
        mean_vs_optimum=_mean(over_optimum),
        mean_vs_safe_optimum=1.0,
        worst_vs_optimum=max(over_optimum, default=math.nan),
        bill_vs_optimum=sum(r.safe_optimum for r in feasible) / best if best > 0 else math.nan,
        missed=len(instances) - len(feasible),
        missed_feasible=0,
    )


def optima_summaries(rows: Sequence[Row]) -> list[Summary]:
    """The two lines that close a table: the offline optimum and the safe optimum."""
    return [optimum_summary(rows), safe_optimum_summary(rows)]


def _json_number(value: float) -> float | None:
    """4 decimals; NaN (no feasible run) and infinities become null, which JSON can carry."""
    return round(value, 4) if math.isfinite(value) else None


def policies_json(rows: Iterable[Row], policies: Sequence[str]) -> dict[str, dict[str, object]]:
    """Each policy's figures as `--json` gives them."""
    return {
        s.policy: {
            "runs": s.runs,
            "meanOverOptimum": _json_number(s.mean_vs_optimum),
            "meanOverSafeOptimum": _json_number(s.mean_vs_safe_optimum),
            "worstOverOptimum": _json_number(s.worst_vs_optimum),
            "meanOverOnDemand": _json_number(s.mean_vs_on_demand),
            "missed": s.missed,
            "missedFeasible": s.missed_feasible,
        }
        for s in summarize(rows, policies)
    }


def safe_optimum_json(rows: Iterable[Row]) -> dict[str, object]:
    """The safe optimum's own figures for `--json`: over the hindsight optimum and on-demand."""
    s = safe_optimum_summary(rows)
    return {
        "feasible": s.feasible,
        "meanOverOptimum": _json_number(s.mean_vs_optimum),
        "worstOverOptimum": _json_number(s.worst_vs_optimum),
        "meanOverOnDemand": _json_number(s.mean_vs_on_demand),
    }


def summary_json(
    grid: GridSpec, traces: int, rows: Iterable[Row], policies: Sequence[str] | None = None
) -> dict[str, object]:
    """`spotline simulate --json`: the grid's parameters and each policy's numbers, so scripts and
    CI can compare runs without parsing the table."""
    rows = list(rows)
    jobs = {(r.trace, r.start_hours, r.work_hours, r.slack) for r in rows}
    return {
        "grid": {
            "workHours": [_json_number(w) for w in grid.work_hours],
            "slacks": [_json_number(100 * s) for s in grid.slacks],
            "startEveryHours": _json_number(grid.start_every_hours),
            "overheadMinutes": _json_number(grid.overhead_seconds / 60),
            "checkpointMinutes": _json_number(grid.checkpoint_seconds / 60),
            "stepSeconds": grid.step_seconds,
            "spotPriceRatio": _json_number(grid.spot_price_ratio),
            "overheadBilled": grid.overhead_billed,
            "workErrorPercent": _json_number(100 * grid.work_error),
            "traces": traces,
            "jobs": len(jobs),
        },
        "policies": policies_json(rows, grid.policies if policies is None else policies),
        "safeOptimum": safe_optimum_json(rows),
    }


def format_table(summaries: Sequence[Summary]) -> str:
    name = max([13, *(len(s.policy) for s in summaries)])
    head = (
        f"{'policy':<{name}} {'runs':>5} {'mean/OD':>8} {'worst/OD':>8} {'mean/opt':>8} {'mean/safe':>9} "
        f"{'worst/opt':>9} {'bill/opt':>8} {'missed':>7} {'miss rate':>9} {'missed feasible':>15}"
    )
    lines = [head, "-" * len(head)]
    for s in summaries:
        lines.append(
            f"{s.policy:<{name}} {s.runs:>5} {s.mean_vs_on_demand:>8.3f} {s.worst_vs_on_demand:>8.3f} "
            f"{s.mean_vs_optimum:>8.3f} {s.mean_vs_safe_optimum:>9.3f} {s.worst_vs_optimum:>9.3f} "
            f"{s.bill_vs_optimum:>8.3f} {s.missed:>7} {100 * s.miss_rate:>8.1f}% {s.missed_feasible:>15}"
        )
    return "\n".join(lines)


def by_slack(rows: Iterable[Row]) -> dict[str, dict[float, tuple[float, float]]]:
    """policy -> slack -> (mean cost / optimum, miss rate), over the feasible instances."""
    groups: dict[str, dict[float, list[Row]]] = {}
    for row in rows:
        if row.feasible:
            groups.setdefault(row.policy, {}).setdefault(row.slack, []).append(row)
    return {
        policy: {
            slack: (_mean([r.vs_optimum for r in group]), sum(not r.met for r in group) / len(group))
            for slack, group in sorted(per_slack.items())
        }
        for policy, per_slack in groups.items()
    }


def slack_table(rows: Sequence[Row], policies: Sequence[str]) -> str:
    """Mean cost / optimum by slack, a column per policy: the plot's left panel as text."""
    curves = by_slack(rows)
    widths = [max(12, len(p)) for p in policies]
    lines = [f"{'slack':>6} " + " ".join(f"{p:>{w}}" for p, w in zip(policies, widths, strict=True))]
    for slack in sorted({s for per in curves.values() for s in per}):
        cells = [curves.get(p, {}).get(slack) for p in policies]
        lines.append(
            f"{100 * slack:>5g}% "
            + " ".join(f"{c[0]:>{w}.3f}" if c else f"{'':>{w}}" for c, w in zip(cells, widths, strict=True))
        )
    return "\n".join(lines)


CSV_FIELDS = (
    "trace",
    "source",
    "start_hours",
    "work_hours",
    "slack",
    "deadline_hours",
    "policy",
    "cost",
    "on_demand_cost",
    "optimum",
    "safe_optimum",
    "vs_on_demand",
    "vs_optimum",
    "vs_safe_optimum",
    "feasible",
    "met",
    "finished_hours",
    "spot_hours",
    "on_demand_hours",
    "preemptions",
    "lost_hours",
    "switched_at_hours",
    "reason",
    "moves",
)
SUMMARY_FIELDS = (
    "policy",
    "runs",
    "feasible",
    "mean_vs_on_demand",
    "worst_vs_on_demand",
    "mean_vs_optimum",
    "mean_vs_safe_optimum",
    "worst_vs_optimum",
    "bill_vs_optimum",
    "missed",
    "miss_rate",
    "missed_feasible",
)


def _csv_value(value: object) -> object:
    if isinstance(value, float):
        return "" if math.isnan(value) else ("inf" if math.isinf(value) else f"{value:.6g}")
    return "" if value is None else value


def write_csv(records: Iterable[object], fields: Sequence[str], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(fields)
        for record in records:
            writer.writerow([_csv_value(getattr(record, name)) for name in fields])


PLOT_STYLE: dict[str, tuple[str, str]] = {
    "on-demand": ("#7f7f7f", "-"),
    "spot-no-ckpt": ("#d62728", ":"),
    "spot-ckpt": ("#ff7f0e", ":"),
    "greedy": ("#2ca02c", "--"),
    "uniform": ("#9467bd", "--"),
    "declared": ("#17becf", "-."),
    "spotline": ("#1f77b4", "-"),
}


def plot(rows: Sequence[Row], path: Path, title: str) -> None:
    """Mean cost / optimum against slack, a line per policy, and the deadline-miss rate beside it."""
    import matplotlib  # noqa: PLC0415 (only when plotting)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    curves = by_slack(rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.4), gridspec_kw={"width_ratios": [3, 2]})
    never_missed = []
    for policy, per_slack in curves.items():
        color, style = PLOT_STYLE.get(policy, ("black", "-"))
        xs = [100 * s for s in per_slack]
        width = 2.8 if policy == "spotline" else 1.6
        costs = [v[0] for v in per_slack.values()]
        misses = [100 * v[1] for v in per_slack.values()]
        left.plot(xs, costs, style, color=color, lw=width, marker="o", ms=3.5, label=policy)
        right.plot(xs, misses, style, color=color, lw=width, marker="o", ms=3.5, label=policy)
        if not any(misses):
            never_missed.append(policy)
    left.axhline(1.0, color="black", lw=0.8)
    left.annotate("offline optimum", (0.01, 1.0), xycoords=("axes fraction", "data"), va="bottom", fontsize=8)
    left.set_yscale("log")
    ticks = [0.6, 0.8, 1, 1.15, 1.5, 2, 3]
    left.set_yticks(ticks, [f"{v:g}x" for v in ticks])
    left.minorticks_off()
    left.set_xlabel("deadline slack (% of the work)")
    left.set_ylabel("mean cost / offline optimum (log scale)")
    left.set_title(
        "Cost against the best possible (feasible deadlines;\na missed job counts what it paid until its deadline)"
    )
    left.grid(True, alpha=0.3)
    right.set_xlabel("deadline slack (% of the work)")
    right.set_ylabel("deadlines missed (%)")
    right.set_title("Deadlines missed")
    right.set_ylim(-3, 103)
    right.grid(True, alpha=0.3)
    right.legend(loc="upper right", frameon=False)
    if never_missed:
        right.annotate(f"none missed: {', '.join(never_missed)}", (0.02, 0.06), xycoords="axes fraction", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


@dataclass(frozen=True, slots=True)
class Report:
    rows: list[Row]
    summaries: list[Summary]
    runs_csv: Path
    summary_csv: Path
    png: Path | None
    seconds: float

    @property
    def table(self) -> str:
        return format_table(self.summaries)


def run(traces: Sequence[Trace], grid: GridSpec, out_dir: Path, *, workers: int = 1, with_plot: bool = True) -> Report:
    """The grid, its table, `runs.csv`, `summary.csv` and `cost_vs_slack.png` in `out_dir`."""
    began = time.perf_counter()
    rows = run_grid(traces, grid, workers=workers)
    summaries = [*summarize(rows, grid.policies), *optima_summaries(rows)]
    out_dir.mkdir(parents=True, exist_ok=True)
    runs_csv, summary_csv = out_dir / "runs.csv", out_dir / "summary.csv"
    write_csv(rows, CSV_FIELDS, runs_csv)
    write_csv(summaries, SUMMARY_FIELDS, summary_csv)
    png = None
    if with_plot and rows:
        png = out_dir / "cost_vs_slack.png"
        plot(rows, png, grid.describe(len(traces)))
    return Report(rows, summaries, runs_csv, summary_csv, png, time.perf_counter() - began)
