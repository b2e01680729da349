"""Each execution ends within a minute (virtual) of its training job in seeded random scenarios
nobody tuned for (interruptions, capacity gaps, failures, stops); test_example_scenarios.py makes
the same check of every example scenario."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from timeliness_checks import assert_timely

from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.replay import Scenario, load_scenario, run_scenario

MANIFESTS = PROJECT_ROOT / "examples" / "manifests"
HOUR = 3600.0


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
