"""Every figure the sandbox reports of a run is the stand-in's ledger, for random scenarios:
interruptions, capacity gaps, status-check faults, stops by on-call, failures, fallbacks to
on-demand under deadline pressure. test_example_scenarios.py checks every example scenario the
same way (and per instance type and region), test_billing_ledger_generated.py 40 generated scenarios
of alternatives, plans, regions and preemptions; the fleet test of test_sandbox_fleet.py checks preemptions."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from ledger_checks import assert_reconciled, assert_reconciled_by_type_and_region

from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario
from spotline_dev.harness.sandbox.scenario import DEFAULT_SCENARIO, SAMPLE_MANIFESTS, FaultSpec, Scenario

HOUR = 3600.0


def random_scenario(seed: int) -> Scenario:
    """A short run of one sample manifest in weather drawn from `seed`."""
    draw = random.Random(seed)
    duration = draw.choice([1.0, 1.5, 2.0, 3.0]) * HOUR
    horizon = duration * 2
    interruptions = sorted(round(draw.uniform(0.1, 0.9) * duration) for _ in range(draw.randint(0, 3)))
    gaps = []
    if draw.random() < 0.5:
        begins = draw.uniform(0.05, 0.8) * horizon
        gaps.append((round(begins), round(begins + draw.uniform(0.2, 1.5) * duration)))
    scenario = Scenario(
        name=f"random-{seed}",
        start=load_scenario(DEFAULT_SCENARIO).start,
        manifests=[SAMPLE_MANIFESTS / draw.choice(["ranker-v2.yaml", "urgent-retrain.yaml"])],
        spot_start_delay=draw.choice([180.0, 300.0, 600.0]),
        interruptions=[float(t) for t in interruptions],
        capacity_gaps=[(float(a), float(b)) for a, b in gaps],
        on_demand_start_delay=draw.choice([180.0, 480.0]),
        duration=duration,
    )
    if draw.random() < 0.25:  # deadline pressure: the hotfix's 8 hours meet a long gap, on-demand takes over
        begins = draw.uniform(1, 4) * HOUR
        return replace(
            scenario,
            manifests=[SAMPLE_MANIFESTS / "urgent-retrain.yaml"],
            duration=8 * HOUR,
            capacity_gaps=[(round(begins), round(begins + 8 * HOUR))],
        )
    roll = draw.random()
    if roll < 0.15:
        scenario = replace(scenario, fail_after=round(draw.uniform(0.2, 0.8) * duration))
    elif roll < 0.3:
        scenario = replace(scenario, stop_execution_at=round(draw.uniform(0.2, 0.9) * duration))
    elif roll < 0.45:
        start = round(draw.uniform(0.1, 0.6) * duration)
        scenario = replace(scenario, faults=[FaultSpec("CheckTrainingStatusFunction", start, draw.choice([2, 10]))])
    return scenario


@pytest.mark.parametrize("seed", range(20))
def test_random_scenarios_report_what_the_stand_in_billed(seed: int) -> None:
    summary = run_scenario(random_scenario(seed))

    (run,) = summary["executions"]
    assert_reconciled(run)
    assert_reconciled_by_type_and_region(run)
