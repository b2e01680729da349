"""Each execution ends within a minute (virtual) of its training job: in every example scenario,
and in seeded random ones nobody tuned for (interruptions, capacity gaps, failures, stops)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from spotline_dev.local.template import PROJECT_ROOT
from spotline_dev.sandbox.replay import Scenario, load_scenario, run_scenario

EXAMPLES = sorted(p for p in (PROJECT_ROOT / "examples" / "scenarios").glob("*.yaml") if p.stem != "default")
"""The default scenario's own test (test_sandbox.py) checks the same of it."""
MANIFESTS = PROJECT_ROOT / "examples" / "manifests"
GAP_SECONDS = 60
HOUR = 3600.0


def gaps(summary: dict[str, Any]) -> list[float]:
    """Seconds from each execution's last training end to the execution's end (negative: the
    execution was stopped or failed first, and the training job stopped after it)."""
    return [
        (
            datetime.fromisoformat(run["executionEndedAt"]) - datetime.fromisoformat(run["trainingEndedAt"])
        ).total_seconds()
        for run in summary["executions"]
        if run["trainingEndedAt"] and run["executionEndedAt"]
    ]


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def assert_timely(summary: dict[str, Any]) -> None:
    for run in summary["executions"]:
        assert run["trainingStatus"] is None or run["trainingEndedAt"], f"{run['name']}: its training never ended"
    assert all(abs(gap) <= GAP_SECONDS for gap in gaps(summary)), gaps(summary)
    assert summary["leftRunning"] == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_scenario_ends_each_execution_with_its_training(path: Path) -> None:
    assert_timely(run_scenario(load_scenario(path)))


def _random_scenario(seed: int) -> Scenario:
    rng = random.Random(seed)
    base = load_scenario(None)
    start_gap = rng.uniform(0.5, 10) * HOUR
    return replace(
        base,
        name=f"random-{seed}",
        manifests=[MANIFESTS / rng.choice(["ranker-v2.yaml", "urgent-retrain.yaml"])],
        spot_start_delay=rng.uniform(60, 900),
        interruptions=sorted(rng.uniform(0.2, 7) * HOUR for _ in range(rng.randint(0, 6))),
        capacity_gaps=[(start_gap, start_gap + rng.uniform(0.2, 8) * HOUR)] if rng.random() < 0.7 else [],
        on_demand_start_delay=rng.uniform(60, 900),
        duration=rng.uniform(0.5, 8) * HOUR,
        fail_after=rng.uniform(0.3, 4) * HOUR if rng.random() < 0.2 else None,
        stop_execution_at=rng.uniform(0.5, 6) * HOUR if rng.random() < 0.15 else None,
    )


@pytest.mark.parametrize("seed", range(6))
def test_scenarios_nobody_tuned_for_end_each_execution_with_its_training(seed: int) -> None:
    assert_timely(run_scenario(_random_scenario(seed)))
