"""`spotline status` and `spotline runs` for a run stopped mid-training (issue 45): no outcome
report, so its cost comes from its training jobs' bills, unknown (with the reason) while a job has
not ended, the stand-in's ledger once it has; never $0.00 for a job that trained."""

from __future__ import annotations

import pytest

from conftest import EXAMPLE_KEY, EXAMPLE_MANIFEST, upload
from devtools.cli.operate.printed import printed_json, printed_lines
from spotline_dev.cli.entry import main
from spotline_dev.exit_codes import EXIT_OK
from spotline_dev.harness.local.handles import REGION, LocalStack
from spotline_dev.harness.local.peers import every_ledger
from spotline_dev.harness.local.stack import STACK

ON_STACK = ["--stack", STACK]
HOUR = 3600.0


def _status(name: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["status", name, *ON_STACK, "--output", "json"]) == EXIT_OK
    return printed_json(capsys.readouterr().out)  # type: ignore[return-value]


def test_a_stopped_run_costs_unknown_while_its_job_trains_then_what_it_was_billed(
    deployed_long: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = deployed_long
    stack.stop_executions_after(3 * HOUR)  # on-call stops it in the console, three hours in
    upload(stack, EXAMPLE_KEY, EXAMPLE_MANIFEST.read_bytes())
    (started,) = stack.deliver_events(sources=("aws.s3",))
    assert stack.wait_for_execution(started["executionArn"])["status"] == "ABORTED"
    name = str(started["executionArn"]).rpartition(":")[2]
    (job,) = stack.standin.jobs
    assert job.training_status == "InProgress"  # the clean-up at the execution's end has not run yet

    run = _status(name, capsys)
    assert run["costUsd"] is None, run["costUsd"]  # three hours of training are not $0.00
    assert "had not ended yet" in str(run["costUnknown"])
    assert main(["status", name, *ON_STACK]) == EXIT_OK
    text = capsys.readouterr().out
    assert "$0.00" not in text
    assert "cost unknown so far" in text
    assert f"  Cost       unknown: training job(s) {job.training_job_name} had not ended yet" in text
    assert main(["runs", *ON_STACK]) == EXIT_OK
    _header, row = printed_lines(capsys.readouterr().out)
    assert row.split()[-1] == "unknown"

    (end,) = stack.deliver_events(sources=("aws.states",))  # StopExecutionJobs stops the job
    assert [j["jobId"] for j in end["stopped"]] == [job.job_id]
    stack.clock.advance(120)  # SageMaker stops it and bills it
    (stopped,) = stack.standin.jobs
    assert stopped.training_status == "Stopped"

    run = _status(name, capsys)
    (ledger,) = every_ledger(stack).values()
    expected = ledger.cost_usd(REGION)
    assert expected is not None and expected > 0
    assert run["costUnknown"] is None
    assert round(float(run["costUsd"]), 2) == round(expected, 2)  # type: ignore[arg-type]
