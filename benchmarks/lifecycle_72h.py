"""Benchmark (not a test): one 72-hour spot training job through the real state machine.

Prints what Step Functions would count for it: history events (limit 25,000), state
transitions (billed), the largest state input or output (limit 256 KiB), Lambda invocations
and status polls, plus the wall time of the replay.
Run: .venv/bin/python benchmarks/lifecycle_72h.py
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spotline_dev.harness.local.template import powertools_environment

QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
os.environ.update({**powertools_environment(), **QUIET})
warnings.filterwarnings("ignore", message="No application metrics to publish")  # metrics are off

from spotline.core.manifest.manifest import validate_bytes  # noqa: E402
from spotline_dev.harness.local.stack import start_local_stack  # noqa: E402
from spotline_dev.harness.sandbox.account import prepare_account, team_allowance  # noqa: E402
from spotline_dev.harness.sandbox.runs import max_state_bytes  # noqa: E402
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
START = datetime(2026, 12, 1, tzinfo=UTC)
HOURS = 3600
PRICE_PER_1000_TRANSITIONS = 0.025


def manifest() -> bytes:
    text = (ROOT / "examples" / "manifests" / "ranker-v2.yaml").read_text()
    text = text.replace("maxRuntime: 30h", "maxRuntime: 80h").replace("maxWait: 36h", "maxWait: 96h")
    text = text.replace("expectedDuration: 8h", "expectedDuration: 72h").replace(
        '"2026-12-02T06:00:00Z"', '"2026-12-06T00:00:00Z"'
    )
    return text.encode()


def main() -> dict[str, Any]:
    body = manifest()
    spec = validate_bytes(body, now=START).spec
    assert spec, "benchmark manifest must be valid"
    weather = SpotWeather(interruptions=[20 * HOURS, 50 * HOURS])
    started = time.perf_counter()
    with start_local_stack(
        START,
        team_policy=json.dumps({"teams": {spec.team: team_allowance(spec)}}),
        environment=QUIET,
        weather=weather,
        behaviour=lambda _r: TrainingBehaviour(duration=72 * HOURS),
    ) as stack:
        prepare_account(stack.client, spec)
        stack.client("s3").put_object(Bucket=stack.bucket, Key="manifests/search-ranking/ranker-72h.yaml", Body=body)
        (run,) = stack.deliver_events()
        execution = stack.wait_for_execution(run["executionArn"], timeout=600)
        history = stack.history(run["executionArn"])
        invocations = Counter(i.function.rsplit("-", 1)[-1] for i in stack.invocations)
        virtual_hours = (stack.clock.now() - START).total_seconds() / HOURS
    transitions = sum(1 for e in history if e["type"].endswith("StateEntered"))
    return {
        "status": execution["status"],
        "virtualHours": round(virtual_hours, 1),
        "historyEvents": len(history),
        "stateTransitions": transitions,
        "transitionCostUsd": round(transitions * PRICE_PER_1000_TRANSITIONS / 1000, 4),
        "maxStateBytes": max_state_bytes(history),
        "lambdaInvocations": sum(invocations.values()) - invocations.get("IntakeFunction", 0),
        "statusPolls": invocations.get("CheckTrainingStatusFunction", 0),
        "wallSeconds": round(time.perf_counter() - started, 1),
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
