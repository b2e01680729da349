"""Instance types beyond the priced ones run end to end: a g6 and a c7i job with their costs, and
a valid type without a price (ml.m8i) with its cost shown as unknown, never as a figure."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from spotline.core.spec.catalog import instance_type
from spotline_dev.harness.sandbox.replay import load_scenario, render_text, run_scenario

ROOT = Path(__file__).resolve().parents[4]
SCENARIO = ROOT / "examples" / "scenarios" / "instance-types.yaml"


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return run_scenario(load_scenario(SCENARIO))


def _run(result: dict[str, Any], instance: str) -> dict[str, Any]:
    (run,) = [run for run in result["executions"] if run["instanceType"] == instance]
    return run


@pytest.mark.parametrize("instance", ["ml.g6.2xlarge", "ml.c7i.4xlarge"])
def test_a_priced_type_runs_with_its_cost(result: dict[str, Any], instance: str) -> None:
    run = _run(result, instance)
    known = instance_type(instance)
    assert run["status"] == "SUCCEEDED" and known is not None and known.usd_per_hour is not None
    assert run["costUsd"] == round(known.usd_per_hour * run["billableSeconds"] / 3600, 4)
    assert 0 < run["costUsd"] < run["onDemandCostUsd"]


def test_a_type_without_a_price_runs_and_its_cost_is_unknown(result: dict[str, Any]) -> None:
    run = _run(result, "ml.m8i.4xlarge")
    assert run["status"] == "SUCCEEDED" and run["billableSeconds"] > 0
    assert run["costUsd"] is None and run["onDemandCostUsd"] is None
    text = render_text(result, 0.0)
    assert "cost unknown (no price for ml.m8i.4xlarge in us-east-1: training job(s) AWSBatch" in text
    assert run["costByRegion"] == {"us-east-1": None} and "ml.m8i.4xlarge" in run["costUnknown"]
    for line in text.splitlines():  # the priced runs show dollars; the unpriced one none
        if "ml.m8i.4xlarge" in line:
            assert not re.search(r"\$\d", line), line
