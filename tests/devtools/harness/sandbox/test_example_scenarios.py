"""Every example scenario (examples/scenarios), replayed once and checked: every figure the
sandbox reports of each run is the stand-in's ledger (ledger_checks), in total and per instance type
and region; each execution ends within a minute (virtual) of its training job, leaving nothing
running (timeliness_checks); and in a fleet example (a shared queue) no team is starved of its
quota share (`starvedSeconds` 0). The random scenarios of the same checks are in
test_billing_ledger.py (and test_billing_ledger_generated.py) and test_sandbox_timeliness.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from ledger_checks import assert_reconciled, assert_reconciled_by_type_and_region
from timeliness_checks import assert_timely

from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario
from spotline_dev.harness.sandbox.scenario import DEFAULT_SCENARIO

EXAMPLES = sorted(DEFAULT_SCENARIO.parent.glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_scenario_reports_what_the_stand_in_billed_and_ends_with_its_training(path: Path) -> None:
    summary = run_scenario(load_scenario(path))

    assert summary["executions"]
    for run in summary["executions"]:
        assert_reconciled(run)
        assert_reconciled_by_type_and_region(run)
    assert_timely(summary)
    # Issue 46: in a shared queue no team waits while its quota share has room of the job's type.
    teams = (summary.get("fleet") or {}).get("teams", {})
    assert {team: f["starvedSeconds"] for team, f in teams.items() if f.get("starvedSeconds")} == {}
