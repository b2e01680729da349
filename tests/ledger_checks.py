"""Reconciling what Spotline reports of a sandbox run with the stand-in's own ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from spotline_dev.harness.local.handles import REGION
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.standin.sagemaker.ledger import ManifestTypes


def assert_reconciled(run: dict[str, Any]) -> None:
    """The run's reported cost, billed and training time, lost work and on-demand baseline are the
    ledger's, to the cent and the second (lost work and the baseline within one second: the
    checkpoint helper records its work to a tenth of a second)."""
    ledger = run["ledger"]
    name = run["name"]
    if run.get("kind") == "ScoringJob":  # a scoring run reports no cost or billed time: none to misstate
        assert (run["costUsd"], run["billableSeconds"], ledger) == (None, 0, None), name
        return
    if ledger is None:  # nothing was ever submitted
        assert (run["billableSeconds"], run["costUsd"]) == (0, 0.0), name
        return
    assert run["billingSettled"] is True, name
    assert run["billableSeconds"] == ledger.billed_seconds, name
    assert run["trainingSeconds"] == ledger.training_seconds, name
    assert run["trainingPlanSeconds"] == ledger.training_plan_seconds, name
    expected_cost = ledger.cost_usd(REGION)
    assert (run["costUsd"] is None) == (expected_cost is None), name
    if expected_cost is not None:
        assert round(run["costUsd"], 2) == round(expected_cost, 2), (name, run["costUsd"], expected_cost)
    assert abs(run["lostWorkSeconds"] - ledger.lost_work_seconds) <= 1, (name, run["lostWorkSeconds"], ledger)
    primary = manifest_types(run)
    baseline = ledger.on_demand_seconds(primary.speeds)
    if baseline is None:
        assert run["onDemandSeconds"] is None and run["savingsPercent"] is None, name
    else:
        assert abs(run["onDemandSeconds"] - baseline) <= 1, (name, run["onDemandSeconds"], baseline)
        expected = ledger.on_demand_cost_usd(REGION, primary)
        if expected is not None:
            assert abs(run["onDemandCostUsd"] - expected) <= 0.01, (name, run["onDemandCostUsd"], expected)


def manifest_types(run: dict[str, Any]) -> ManifestTypes:
    """The run's manifest's primary type and count and each type's declared speed, read from the
    manifest file itself: the baseline is the job on its primary, its work there as declared."""
    path = Path(run["manifest"])
    resources = yaml.safe_load((path if path.is_absolute() else PROJECT_ROOT / path).read_text())["spec"]["resources"]
    count = int(resources.get("instanceCount", 1))
    speeds = {str(resources["instanceType"]): 1.0}
    speeds |= {str(a["instanceType"]): float(a.get("speed", 1.0)) for a in resources.get("alternatives") or ()}
    return ManifestTypes(str(resources["instanceType"]), count, speeds)


def assert_reconciled_by_type_and_region(run: dict[str, Any]) -> None:
    """The run's bills as Spotline read them (its outcome report's `bills`), added up per instance
    type and region, are the ledger's parts: the same types in the same regions, at the same
    instance counts, for the same billed, training and plan seconds. A run without an outcome
    report (stopped, or rejected) has no bills to compare: its totals are checked by
    assert_reconciled."""
    ledger, bills = run["ledger"], run.get("bills")
    if ledger is None or bills is None:
        return
    reported: dict[tuple[str, str], dict[str, Any]] = {}
    for bill in bills:
        part = reported.setdefault(
            (bill["instance_type"], bill["region"] or REGION),
            {"instance_counts": set(), "billed_seconds": 0, "training_seconds": 0, "training_plan_seconds": 0},
        )
        part["instance_counts"].add(bill["instance_count"])
        part["billed_seconds"] += bill["billable_seconds"]
        part["training_seconds"] += bill["training_seconds"]
        part["training_plan_seconds"] += bill["billable_seconds"] if bill["training_plan"] else 0
    expected = {
        where: {
            "instance_counts": set(part.instance_counts),
            "billed_seconds": part.billed_seconds,
            "training_seconds": part.training_seconds,
            "training_plan_seconds": part.training_plan_seconds,
        }
        for where, part in ledger.parts(REGION).items()
    }
    assert reported == expected, (run["name"], reported, expected)
