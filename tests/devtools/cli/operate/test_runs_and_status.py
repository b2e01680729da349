"""`spotline runs` and `spotline status` against the local stack as a deployed one."""

from __future__ import annotations

from datetime import timedelta

import pytest

from conftest import EXAMPLE_MANIFEST
from devtools.cli.operate.printed import printed_json, printed_lines
from spotline_dev.cli.entry import main
from spotline_dev.cli.operate import deployment
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_OK
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import STACK

ON_STACK = ["--stack", STACK]


def _run_example(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["submit", str(EXAMPLE_MANIFEST), *ON_STACK, "--wait", "--output", "json"]) == EXIT_OK
    return str(printed_json(capsys.readouterr().out)["executionName"])  # type: ignore[index]


def test_runs_lists_name_team_job_state_attempts_capacity_deadline_elapsed_and_cost(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    name = _run_example(capsys)
    assert main(["runs", *ON_STACK]) == EXIT_OK
    header, row = printed_lines(capsys.readouterr().out)
    assert header.split() == ["NAME", "TEAM", "JOB", "STATE", "ATTEMPTS", "CAPACITY", "DEADLINE", "ELAPSED", "COST"]
    assert row.split() == [
        name,
        "search-ranking",
        "ranker-v2",
        "succeeded",
        "1",
        "spot",
        "2026-12-02T06:00:00Z",
        "2h6m30s",
        "$0.92",
    ]

    assert main(["runs", *ON_STACK, "--output", "json"]) == EXIT_OK
    (run,) = printed_json(capsys.readouterr().out)  # type: ignore[misc]
    assert (run["name"], run["status"], run["elapsedSeconds"], run["costUsd"]) == (name, "SUCCEEDED", 7590, 0.9241)
    assert run["startedAt"] == "2026-11-29T08:00:00Z" and run["endedAt"] == "2026-11-29T10:06:30Z"


def test_runs_filters_by_team_state_and_since(deployed: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    name = _run_example(capsys)

    def names(*options: str) -> list[str]:
        assert main(["runs", *ON_STACK, "--output", "json", *options]) == EXIT_OK
        return [run["name"] for run in printed_json(capsys.readouterr().out)]  # type: ignore[union-attr, index]

    assert names("--team", "search-ranking") == [name]
    assert names("--team", "another-team") == []
    assert names("--state", "succeeded") == [name]
    assert names("--state", "RUNNING") == []
    assert names("--since", "1h") == []  # started 2h6m ago on the virtual clock
    assert names("--since", "3h") == [name]
    assert names("--since", "2026-11-29T07:00:00Z") == [name]
    assert main(["runs", *ON_STACK, "--since", "yesterday"]) == 2
    assert "neither a duration" in capsys.readouterr().err


def test_status_tells_where_a_run_stands_with_links(deployed: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    name = _run_example(capsys)
    deployment.SURROUNDINGS.now = lambda: deployed.clock.now() + timedelta(hours=1)  # read an hour later
    assert main(["status", name, *ON_STACK]) == EXIT_OK
    lines = printed_lines(capsys.readouterr().out)
    assert lines[0] == f"{name}  SUCCEEDED: succeeded"
    assert lines[1] == "  Job        search-ranking/ranker-v2, attempt 1 on spot"
    # The slack of the last check: the work is measured by then, so its margin is the 2-minute floor.
    assert lines[2] == "  Deadline   2026-12-02T06:00:00Z (ended 67h53m30s before it), slack 67h31m30s"
    assert lines[3].startswith("  Progress   100% checkpointed; elapsed 2h6m30s, cost $0.92 so far, 0 spot")
    assert lines[4] == "  Why        training completed before the deadline"
    assert [line.split()[0] for line in lines[5:9]] == ["Execution", "SageMaker", "Logs", "Batch"]
    assert lines[-1] == f"The whole story: spotline explain {name} --stack {STACK}"

    assert main(["status", name, *ON_STACK, "--output", "json"]) == EXIT_OK
    run = printed_json(capsys.readouterr().out)
    assert run["trainingJob"].startswith("AWSBatchranker-v2-a1-spot") and run["progress"] == 1.0  # type: ignore[index]


def test_an_unknown_run_or_stack_is_named_and_exits_1(deployed: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "no-such-run", *ON_STACK]) == EXIT_INVALID
    assert f"no execution no-such-run in stack {STACK} (us-east-1)" in capsys.readouterr().err
    assert main(["runs", "--stack", "not-a-stack"]) == EXIT_INVALID
    assert "there is no stack not-a-stack in us-east-1" in capsys.readouterr().err
