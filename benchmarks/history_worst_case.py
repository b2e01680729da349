"""Benchmark (not a test): the longest executions Spotline can have, through the real state
machine, and how close each comes to Step Functions' history limit.

Step Functions keeps at most 25,000 events per execution; Spotline's design bound is 10,000 for
any execution up to SageMaker's 28-day maximum runtime, whatever its deadline and interruptions.
Each case replays one job on the virtual clock and prints its history events, state transitions,
status checks and what woke them. The last line is the worst case.
Run: .venv/bin/python benchmarks/history_worst_case.py [CASE-NAME-PART ...]
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from spotline_dev.harness.local.template import powertools_environment

QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
os.environ.update({**powertools_environment(), **QUIET})
warnings.filterwarnings("ignore", message="No application metrics to publish")  # metrics are off

from spotline.core.manifest.manifest import validate_bytes  # noqa: E402
from spotline_dev.harness.local.stack import start_local_stack  # noqa: E402
from spotline_dev.harness.sandbox.account import prepare_account, team_allowance  # noqa: E402
from spotline_dev.harness.sandbox.runs import follow_run  # noqa: E402
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
START = datetime(2026, 12, 1, tzinfo=UTC)
HOURS = 3600
DAYS = 24 * HOURS
DESIGN_BOUND = 10_000


@dataclass(frozen=True)
class Case:
    name: str
    work_hours: float
    deadline_hours: float | None  # from the start; None: no deadline
    interrupt_every_hours: float | None = None  # of training
    gaps: list[tuple[float, float]] = field(default_factory=list)  # spot capacity gaps, hours from the start


CASES = [
    Case("72h job, two interruptions", 72, 96, gaps=[]),
    Case("72h job, interrupted every 2h, tight deadline", 72, 80, 2),
    Case("27-day job, no deadline, interrupted every 6h", 27 * 24, None, 6),
    Case("27-day job, no deadline, interrupted every hour", 27 * 24, None, 1),
    Case("27-day job, tight deadline, no interruptions", 27 * 24, 27 * 24 * 1.05 + 2),
    Case("27-day job, tight deadline, interrupted every 12h", 27 * 24, 27 * 24 * 1.05 + 2, 12),
    Case(
        "27-day job, tight deadline, interrupted every 4h, 3h gaps daily",
        27 * 24,
        27 * 24 * 1.05 + 6,
        4,
        [(d * 24 + 10, d * 24 + 13) for d in range(28)],
    ),
]


def manifest(case: Case) -> bytes:
    text = (ROOT / "examples" / "manifests" / "ranker-v2.yaml").read_text()
    runtime = min(28 * 24, int(case.work_hours * 1.1) + 1)
    text = text.replace("maxRuntime: 30h", f"maxRuntime: {runtime}h").replace("maxWait: 36h", "maxWait: 672h")
    text = text.replace("expectedDuration: 8h", f"expectedDuration: {int(case.work_hours)}h")
    text = text.replace("retry: {maxAttempts: 3, backoff: 2m}", "retry: {maxAttempts: 10, backoff: 2m}")
    deadline = ""
    if case.deadline_hours is not None:
        deadline = f'    deadline: "{(START + timedelta(hours=case.deadline_hours)).strftime("%Y-%m-%dT%H:%M:%SZ")}"\n'
    text = re.sub(r'  +deadline: "[^"]+"\n', deadline, text)
    return text.encode()


def run(case: Case) -> dict[str, Any]:
    body = manifest(case)
    checked = validate_bytes(body, now=START)
    assert checked.spec, f"{case.name}: {[str(e) for e in checked.errors]}"
    spec = checked.spec
    every = case.interrupt_every_hours
    marks = [k * every * HOURS for k in range(1, int(case.work_hours / every) + 1)] if every else []
    if case.name.startswith("72h job, two"):
        marks = [20 * HOURS, 50 * HOURS]
    weather = SpotWeather(
        interruptions=marks,
        capacity_gaps=[(START + timedelta(hours=a), START + timedelta(hours=b)) for a, b in case.gaps],
    )
    started = time.perf_counter()
    with start_local_stack(
        START,
        team_policy=json.dumps({"teams": {spec.team: team_allowance(spec)}}),
        environment=QUIET,
        weather=weather,
        behaviour=lambda _r: TrainingBehaviour(duration=case.work_hours * HOURS),
    ) as stack:
        prepare_account(stack.client, spec)
        stack.client("s3").put_object(Bucket=stack.bucket, Key="manifests/search-ranking/long.yaml", Body=body)
        (started_run,) = stack.deliver_events()
        execution, history = follow_run(stack, started_run["executionArn"], [], timeout=3600)
        per_execution = _split(history)
        woken = Counter(_woken(e) for e in history if e["type"] in ("TaskSucceeded", "TaskTimedOut"))
        entered = Counter((e.get("stateEnteredEventDetails") or {}).get("name") for e in history)
        virtual_days = (stack.clock.now() - START).total_seconds() / DAYS
    return {
        "case": case.name,
        "status": execution["status"] + (f" ({execution.get('error')})" if execution.get("error") else ""),
        "virtualDays": round(virtual_days, 1),
        "executions": len(per_execution),
        "historyEvents": max(len(events) for events in per_execution),
        "historyEventsInAll": len(history),
        "stateTransitions": sum(1 for e in history if e["type"].endswith("StateEntered")),
        "statusChecks": entered["CheckTrainingStatus"],
        "submissions": entered["SubmitTrainingJob"],
        "wokenByEvents": woken["event"],
        "timedChecks": woken["timed check"],
        "wallSeconds": round(time.perf_counter() - started, 1),
    }


def _split(history: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The run's history, one list per execution (each begins with ExecutionStarted)."""
    executions: list[list[dict[str, Any]]] = []
    for event in history:
        if event["type"] == "ExecutionStarted" or not executions:
            executions.append([])
        executions[-1].append(event)
    return executions


def _woken(event: dict[str, Any]) -> str:
    if event["type"] == "TaskTimedOut":
        return "timed check"
    output = (event.get("taskSucceededEventDetails") or {}).get("output") or ""
    return "event" if '"wokenBy"' in output else "other task"


def main(selected: list[str]) -> int:
    """`selected`: run only the cases whose name contains one of these (all by default)."""
    rows = []
    for case in CASES:
        if selected and not any(part in case.name for part in selected):
            continue
        rows.append(run(case))
        print(json.dumps(rows[-1]), flush=True)
    worst = max(rows, key=lambda r: r["historyEvents"])
    print(
        f"worst case: {worst['historyEvents']} history events in one execution ({worst['case']}); "
        f"design bound {DESIGN_BOUND}, Step Functions' limit 25000"
    )
    return 0 if worst["historyEvents"] < DESIGN_BOUND else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
