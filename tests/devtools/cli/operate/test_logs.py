"""`spotline logs`: the CloudWatch logs of every training job of a run, as SageMaker writes them
(the local stack's stand-in serves them), and `--follow` until the run ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conftest import EXAMPLE_MANIFEST, NOW, example_spec, team_policy_for
from devtools.cli.operate.printed import printed_json, printed_lines
from spotline_dev.cli.entry import main
from spotline_dev.cli.operate import deployment
from spotline_dev.exit_codes import EXIT_OK
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import STACK, start_local_stack
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour

ON_STACK = ["--stack", STACK]
HOUR = 3600.0


@pytest.fixture
def interrupted(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalStack]:
    """Four hours of training, interrupted at one and two hours, as a deployed stack."""
    spec = example_spec()
    with start_local_stack(
        NOW,
        team_policy=team_policy_for(spec),
        weather=SpotWeather(interruptions=[1 * HOUR, 2 * HOUR]),
        behaviour=lambda _request: TrainingBehaviour(duration=4 * HOUR),
    ) as stack:
        prepare_account(stack.client, spec)
        monkeypatch.setattr(deployment.SURROUNDINGS, "now", stack.clock.now)
        monkeypatch.setattr(
            deployment.SURROUNDINGS, "pause", lambda _s: stack.deliver_events(sources=("aws.s3", "aws.states"))
        )
        yield stack


def _submit(capsys: pytest.CaptureFixture[str], *options: str) -> str:
    assert main(["submit", str(EXAMPLE_MANIFEST), *ON_STACK, "--output", "json", *options]) == EXIT_OK
    return str(printed_json(capsys.readouterr().out)["executionName"])  # type: ignore[index]


def test_logs_show_every_attempt_in_time_order(interrupted: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    name = _submit(capsys, "--wait")
    assert main(["logs", name, *ON_STACK]) == EXIT_OK
    lines = printed_lines(capsys.readouterr().out)
    messages = [line.split("  ", 2)[2] for line in lines]
    assert messages[0].startswith("Container started on spot instance ml.g5.2xlarge")
    assert sum("Spot interruption notice" in m for m in messages) == 2
    assert sum("Resuming from checkpoint step" in m for m in messages) == 2  # each restart resumes
    assert messages[-1].startswith("Training completed")
    stamps = [line.split("  ", 1)[0] for line in lines]
    assert stamps == sorted(stamps) and stamps[0].startswith("2026-11-29T08:")

    assert main(["logs", name, *ON_STACK, "--output", "json"]) == EXIT_OK
    events = printed_json(capsys.readouterr().out)
    assert [e["message"] for e in events] == messages  # type: ignore[union-attr, index]
    assert {e["stream"].split("/")[0] for e in events} == {e["trainingJob"] for e in events}  # type: ignore[union-attr, index]


def test_follow_prints_lines_as_they_come_until_the_run_ends(
    interrupted: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    name = _submit(capsys)
    assert main(["logs", name, *ON_STACK, "--follow"]) == EXIT_OK
    lines = printed_lines(capsys.readouterr().out)
    assert lines and lines[-1].split("  ", 2)[2].startswith("Training completed")
    assert len(lines) == len(set(lines))  # no line twice

    assert main(["logs", name, *ON_STACK]) == EXIT_OK
    assert printed_lines(capsys.readouterr().out) == lines  # the same lines, read at once
