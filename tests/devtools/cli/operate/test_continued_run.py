"""A long run continues in fresh executions (`<first>-c<n>`): the commands show it as one run."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import EXAMPLE_MANIFEST
from devtools.cli.operate.printed import printed_json, printed_lines
from spotline.core.capacity import lifecycle
from spotline_dev.cli.entry import main
from spotline_dev.exit_codes import EXIT_OK
from spotline_dev.explain import fetch_run
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import STACK

ON_STACK = ["--stack", STACK]


@pytest.fixture(autouse=True)
def few_checks_per_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 8-hour job makes about 35 checks; four per execution make it hand over several times."""
    monkeypatch.setattr(lifecycle, "CHECKS_PER_EXECUTION", 4)


def _names(stack: LocalStack) -> list[str]:
    listed = stack.client("stepfunctions").list_executions(stateMachineArn=stack.state_machine_arn())["executions"]
    return [e["name"] for e in sorted(listed, key=lambda e: e["startDate"])]


def test_a_continued_run_is_one_row_its_first_name_leads_to_its_end_and_its_logs_and_picture_are_whole(
    deployed_long: LocalStack, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    stack = deployed_long
    assert main(["submit", str(EXAMPLE_MANIFEST), *ON_STACK, "--wait", "--output", "json"]) == EXIT_OK
    submitted = printed_json(capsys.readouterr().out)
    first = submitted["executionName"]  # type: ignore[index]
    names = _names(stack)
    assert names[0] == first and len(names) >= 3
    assert submitted["run"]["name"] == names[-1]  # type: ignore[index]  # --wait followed it to the end

    assert main(["runs", *ON_STACK, "--output", "json"]) == EXIT_OK
    (run,) = printed_json(capsys.readouterr().out)  # type: ignore[misc]
    assert (run["name"], run["status"], run["attempts"], run["startedAt"]) == (
        names[-1],
        "SUCCEEDED",
        1,
        "2026-11-29T08:00:00Z",
    )

    assert main(["status", first, *ON_STACK]) == EXIT_OK
    assert printed_lines(capsys.readouterr().out)[0] == (
        f"{names[-1]}  SUCCEEDED: succeeded (the run of {first} continues here)"
    )

    assert main(["logs", first, *ON_STACK]) == EXIT_OK
    lines = printed_lines(capsys.readouterr().out)
    assert lines[0].split("  ", 2)[2].startswith("Container started on spot")
    assert lines[-1].split("  ", 2)[2].startswith("Training completed")

    arn = stack.state_machine_arn().replace(":stateMachine:", ":execution:")
    whole = fetch_run(f"{arn}:{names[1]}")  # from the middle of the run: all of it
    assert len(whole) == sum(len(stack.history(f"{arn}:{name}")) for name in names)
    picture = tmp_path / "run.png"
    assert main(["explain", names[1], *ON_STACK, "--plot", str(picture)]) == EXIT_OK
    assert picture.stat().st_size > 10_000
