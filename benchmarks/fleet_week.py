"""A fleet scenario (default: the week, benchmarks/fleet-week.yaml; `make bench` also runs the
month, benchmarks/fleet-month.yaml) run as Spotline runs it and as teams would run it on plain
Batch (same queue, same quota shares, spot jobs submitted straight to the queue: no deadline
policy, no resubmission, no priority raise, no on-demand fallback), side by side.

    .venv/bin/python benchmarks/fleet_week.py [SCENARIO]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from spotline.core.common.durations import format_duration
from spotline_dev.harness.sandbox.fleet_baseline import run_plain_batch
from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario
from spotline_dev.harness.sandbox.scenario import PROJECT_ROOT

DEFAULT = PROJECT_ROOT / "benchmarks" / "fleet-week.yaml"


def _wait(seconds: float) -> str:
    return format_duration(seconds) if seconds else "0s"


def _usd(amount: float | None) -> str:
    """`$1,573.07`; unknown when a run's instance type has no price."""
    return f"${amount:,.2f}" if amount is not None else "unknown"


def rows(fleet: dict[str, Any]) -> list[tuple[str, str]]:
    with_deadline = fleet["deadlinesMet"] + fleet["deadlinesMissed"]
    waits = fleet["queueWaitSeconds"]
    out = [
        ("jobs (succeeded / failed)", f"{fleet['jobs']} ({fleet['succeeded']} / {fleet['failed']})"),
        ("deadlines met", f"{fleet['deadlinesMet']} of {with_deadline}"),
        ("cost", f"{_usd(fleet['costUsd'])} (all on-demand {_usd(fleet['onDemandCostUsd'])})"),
        (
            "capacity used",
            f"{(fleet['capacityUtilization'] or 0) * 100:.0f}% of {fleet['capacityInstances']} instances",
        ),
        ("queue wait p50 / p95 / max", " / ".join(_wait(waits[k]) for k in ("p50", "p95", "max"))),
        ("preemptions", str(fleet["preemptions"])),
    ]
    for team, figures in fleet["teams"].items():
        out.append(
            (
                f"  {team}",
                f"{figures['jobs']} jobs, {figures['instanceSeconds'] / 3600:.0f} held / "
                f"{figures['runningInstanceSeconds'] / 3600:.0f} running instance-h, "
                f"queue wait p95 {_wait(figures['queueWaitP95Seconds'])}, missed {figures['deadlinesMissed']}, "
                f"starved {_wait(figures.get('starvedSeconds', 0))}",
            )
        )
    return out


def main(path: Path) -> None:
    scenario = load_scenario(path)
    started = time.perf_counter()
    spotline = run_scenario(scenario)
    spotline_wall = time.perf_counter() - started
    started = time.perf_counter()
    plain = run_plain_batch(scenario)
    plain_wall = time.perf_counter() - started
    left = (len(spotline["leftRunning"]), len(plain["leftRunning"]))
    shown = path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path
    print(f"Fleet benchmark: {scenario.name} ({shown})")
    print(f"{'':<30} {'Spotline':<92} plain Batch")
    for (label, ours), (_, theirs) in zip(rows(spotline["fleet"]), rows(plain["fleet"]), strict=True):
        print(f"{label:<30} {ours:<92} {theirs}")
    print(f"{'left running':<30} {left[0]:<92} {left[1]}")
    print(f"{'replayed in (wallSeconds)':<30} {spotline_wall:<92.1f} {plain_wall:.1f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else DEFAULT)
