"""`spotline simulate`: Spotline's deadline policy on real spot behaviour, against what users
would otherwise do and against the best any policy could possibly do.

- `model`: the job, its costs, what a policy sees and says, and `simulate`, the replay of one
  job on one trace;
- `policies`: the production policy adapter and the baselines (`POLICIES`);
- `optimum`: the offline optimum (`optimal_costs`);
- `safe_optimum`: the cheapest schedule that never risks the deadline (`safe_costs`);
- `grid`: the grid of jobs over the traces and its runs (`GridSpec`, `Row`, `run_grid`);
- `report`: the tables, the CSV files and the plot (`run`);
- `command`: `spotline simulate` itself (`main`).
"""

from __future__ import annotations

from spotline_dev.research.simulate.command import DEFAULT_OUT_DIR, EXIT_OK, EXIT_USAGE, grid_from_args, main
from spotline_dev.research.simulate.grid import GridSpec, Row, default_workers, run_cell, run_grid
from spotline_dev.research.simulate.model import (
    DEFAULT_CHECKPOINT_SECONDS,
    DEFAULT_OVERHEAD_SECONDS,
    DEFAULT_STEP_SECONDS,
    HOUR,
    NEVER,
    SPOT_PRICE_RATIO,
    Capacity,
    Command,
    Job,
    Outcome,
    Phase,
    Policy,
    View,
    simulate,
)
from spotline_dev.research.simulate.optimum import optimal_costs, optimal_costs_across_regions
from spotline_dev.research.simulate.policies import (
    FIRST_POLL_SECONDS,
    POLICIES,
    Greedy,
    OnDemandOnly,
    PolicyFactory,
    Scripted,
    SpotlinePolicy,
    SpotOnly,
    UniformProgress,
    run_policy,
)
from spotline_dev.research.simulate.report import (
    CSV_FIELDS,
    PLOT_STYLE,
    SUMMARY_FIELDS,
    Report,
    Summary,
    by_slack,
    format_table,
    optima_summaries,
    optimum_summary,
    plot,
    run,
    safe_optimum_summary,
    slack_table,
    summarize,
    write_csv,
)
from spotline_dev.research.simulate.safe_optimum import safe_costs, safe_costs_across_regions, safe_costs_by_deadline

__all__ = [
    "CSV_FIELDS",
    "DEFAULT_CHECKPOINT_SECONDS",
    "DEFAULT_OUT_DIR",
    "DEFAULT_OVERHEAD_SECONDS",
    "DEFAULT_STEP_SECONDS",
    "EXIT_OK",
    "EXIT_USAGE",
    "FIRST_POLL_SECONDS",
    "HOUR",
    "NEVER",
    "PLOT_STYLE",
    "POLICIES",
    "SPOT_PRICE_RATIO",
    "SUMMARY_FIELDS",
    "Capacity",
    "Command",
    "Greedy",
    "GridSpec",
    "Job",
    "OnDemandOnly",
    "Outcome",
    "Phase",
    "Policy",
    "PolicyFactory",
    "Report",
    "Row",
    "Scripted",
    "SpotOnly",
    "SpotlinePolicy",
    "Summary",
    "UniformProgress",
    "View",
    "by_slack",
    "default_workers",
    "format_table",
    "grid_from_args",
    "main",
    "optima_summaries",
    "optimal_costs",
    "optimal_costs_across_regions",
    "optimum_summary",
    "plot",
    "run",
    "run_cell",
    "run_grid",
    "run_policy",
    "safe_costs",
    "safe_costs_across_regions",
    "safe_costs_by_deadline",
    "safe_optimum_summary",
    "simulate",
    "slack_table",
    "summarize",
    "write_csv",
]
