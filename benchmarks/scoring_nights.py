"""Benchmark (not a test): the scoring scenarios of examples/scenarios replayed on the local stack,
one line each: the instances the plan sized (and the formula's count beside it: records /
(records per second x seconds left less start-up) x (1 + headroom), before maxInstances and the
input's objects bound it), the most the run
wanted at once, the throughput it measured, when it finished against its window, the on-call
notices, and what the night cost the state machine (state transitions, history events, largest
state document).

    .venv/bin/python benchmarks/scoring_nights.py [SCENARIO ...]   (default: every scoring scenario)
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from spotline_dev.harness.sandbox.replay import load_scenario, public_summary, run_scenario

ROOT = Path(__file__).resolve().parents[1]
SCORING_SCENARIOS = (
    "scores-a-night",
    "scoring-night-slows-by-half",
    "scores-one-giant-file",
    "scores-with-its-own-model",
    "scores-over-transform-quota",
)
COLUMNS = (
    f"{'scenario':<30}{'records':>12}{'sized':>6}{'formula':>8}{'want':>5}{'shards':>7}{'measured/s':>11}"
    f"  {'finished':<21}{'window end':<21}{'margin':>8}  {'notices':<14}{'trans.':>7}{'events':>7}{'KiB':>6}"
)


def line(name: str) -> str:
    summary = run_scenario(load_scenario(ROOT / "examples" / "scenarios" / f"{name}.yaml"))
    (run,) = public_summary(summary)["executions"]
    sizing = run["sizing"] or {}
    count = sizing["needed"]  # the formula's count, before maxInstances and the objects bound it
    finished, due = run["finishedAt"], run["windowEnd"]
    margin = (
        f"{(datetime.fromisoformat(due) - datetime.fromisoformat(finished)).total_seconds() / 60:+.0f}m"
        if finished
        else "-"
    )
    notices = ",".join(n["type"] for n in run["notifications"]) or "-"
    measured = f"{run['recordsPerSecond']:,.0f}" if run["recordsPerSecond"] else "-"
    return (
        f"{name:<30}{sizing['records']:>12,}{run['instances']:>6}{count:>8}{run['peakInstances']:>5}{run['shards']:>7}"
        f"{measured:>11}  {finished or '-':<21}{due:<21}{margin:>8}  {notices:<14}"
        f"{run['stateTransitions']:>7}{run['historyEvents']:>7}{run['maxStateBytes'] / 1024:>6.1f}"
    )


def main(names: list[str]) -> int:
    print("Scoring nights on the local stack (examples/scenarios): sized vs the formula, finish vs window")
    print(COLUMNS)
    for name in names or SCORING_SCENARIOS:
        print(line(name), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
