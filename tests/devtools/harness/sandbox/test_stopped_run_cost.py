"""What a stopped run cost (issue 45): a run that never reached RecordOutcome reports its cost from
its training jobs' bills, known once every job has ended, else unknown with the reason, never $0.00
for a job that trained."""

from __future__ import annotations

from pathlib import Path

from ledger_checks import assert_reconciled

from conftest import EXAMPLE_MANIFEST, ROOT
from spotline_dev.harness.sandbox.replay import load_scenario, render_text, run_scenario

STOPPED = ROOT / "examples" / "scenarios" / "stopped-by-on-call.yaml"


def _stopped_and_left_training(tmp_path: Path) -> Path:
    """On-call stops the execution three hours into an eight-hour training, and the clean-up at the
    execution's end (StopExecutionJobs) fails every time: the job trains on, unbilled so far."""
    scenario = tmp_path / "stopped-left-training.yaml"
    scenario.write_text(
        "name: stopped-left-training\n"
        'start: "2026-12-01T00:00:00Z"\n'
        f"manifests: [{EXAMPLE_MANIFEST}]\n"
        "spot: {startDelay: 5m}\n"
        "training: {duration: 8h}\n"
        "stopExecutionAt: 3h\n"
        "faults:\n"
        "  - {function: StopExecutionJobs, count: 10}\n"
    )
    return scenario


def test_a_stopped_run_whose_job_still_trains_reports_its_cost_unknown_not_zero(tmp_path: Path) -> None:
    summary = run_scenario(load_scenario(_stopped_and_left_training(tmp_path)))
    (run,) = summary["executions"]
    (left,) = summary["leftRunning"]

    assert run["status"] == "ABORTED"
    assert (left["execution"], left["trainingStatus"]) == (run["name"], "InProgress")
    assert run["trainingSeconds"] > 2 * 3600  # it trained: SageMaker will bill it
    assert run["billingSettled"] is False
    assert run["costUsd"] is None, run["costUsd"]
    assert left["trainingJobName"] in run["costUnknown"]
    assert "had not ended yet" in run["costUnknown"]
    assert "$0.00" not in render_text(summary, 0.0)


def test_a_stopped_run_whose_job_was_stopped_reports_the_ledgers_cost() -> None:
    summary = run_scenario(load_scenario(STOPPED))
    (run,) = summary["executions"]

    assert run["status"] == "ABORTED" and summary["leftRunning"] == []
    assert run["costUsd"] is not None and run["costUsd"] > 0
    assert run["costUnknown"] is None
    assert_reconciled(run)  # to the cent: what the stand-in billed for the stopped job
