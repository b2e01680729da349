"""`spotline explain` and `spotline sandbox --explain` from the command line: an execution by
ARN, by name with its state machine or stack, and the stories of the sandbox's executions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from conftest import EXAMPLE_MANIFEST, run_upload
from spotline_dev.cli.entry import main as cli_main
from spotline_dev.explain import history
from spotline_dev.harness.local.handles import LocalStack

START = datetime(2026, 12, 1, tzinfo=UTC)


def test_cli_takes_an_arn_or_a_name_with_its_state_machine_or_stack(
    stack: LocalStack,
    example_manifest: bytes,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    execution, _ = run_upload(stack, example_manifest)
    arn, name, machine = execution["executionArn"], execution["name"], execution["stateMachineArn"]
    capsys.readouterr()

    assert cli_main(["explain", arn]) == 0
    by_arn = capsys.readouterr().out
    assert by_arn.startswith(f"== {name}: SUCCEEDED: training completed before the deadline")
    assert cli_main(["explain", name, "--state-machine", machine]) == 0
    assert capsys.readouterr().out == by_arn

    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    stubber = Stubber(cloudformation)
    stubber.add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": "spotline",
                    "CreationTime": START,
                    "StackStatus": "CREATE_COMPLETE",
                    "Outputs": [{"OutputKey": "TrainingLifecycleArn", "OutputValue": machine}],
                }
            ]
        },
        {"StackName": "spotline"},
    )
    real_client = history._client
    monkeypatch.setattr(history, "_client", lambda s, r: cloudformation if s == "cloudformation" else real_client(s, r))
    with stubber:
        assert cli_main(["explain", name, "--stack", "spotline", "--region", "us-east-1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["executionArn"], data["status"], data["failure"]) == (arn, "SUCCEEDED", None)
    assert {"timeline", "attempts", "spotInterruptions", "onDemandFallback", "deadlineMet", "links"} <= set(data)

    assert cli_main(["explain", name]) == 2  # a name alone cannot be found
    assert "--state-machine" in capsys.readouterr().err
    assert cli_main(["explain", arn, "--state-machine", machine]) == 2
    assert cli_main(["explain", name, "--state-machine", machine, "--stack", "spotline"]) == 2
    assert cli_main(["explain", name, "--state-machine", "not-an-arn"]) == 2
    capsys.readouterr()
    assert cli_main(["explain", arn.replace(name, "no-such-execution")]) == 1
    assert "ExecutionDoesNotExist" in capsys.readouterr().err


def test_sandbox_explain_shows_the_failing_state_error_and_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Acceptance: `spotline explain` on a failed sandbox execution shows the failing state, its error and cause."""
    scenario = tmp_path / "failing.yaml"
    scenario.write_text(
        f'name: failing\nstart: "2026-12-01T00:00:00Z"\nmanifests: ["{EXAMPLE_MANIFEST}"]\n'
        "training: {duration: 2h, failAfter: 1h}\n"
    )
    assert cli_main(["sandbox", "--explain", "--scenario", str(scenario)]) == 3  # did not succeed
    out = capsys.readouterr().out
    normal, _, stories = out.partition("\nExplain (as `spotline explain` tells it")
    assert "result: FAILED (TrainingFailed)" in normal
    assert ": FAILED in TrainingFailed" in stories
    assert "  State      TrainingFailed" in stories
    assert "  Error      TrainingFailed" in stories
    assert "  Cause      AWSBatchranker-v2-a1-spot" in stories and "failed (algorithm): AlgorithmError" in stories
    assert "Next step\n  Open the training logs" in stories


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_explain_plot_draws_the_run(
    stack: LocalStack, example_manifest: bytes, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    execution, _ = run_upload(stack, example_manifest)
    picture = tmp_path / "run.png"
    assert cli_main(["explain", execution["executionArn"], "--plot", str(picture)]) == 0
    assert picture.read_bytes().startswith(PNG_SIGNATURE)
    assert f"Plot: {picture}" in capsys.readouterr().err


def test_sandbox_plot_draws_each_execution_and_exits_3_when_one_did_not_succeed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = Path(__file__).resolve().parents[3] / "examples" / "scenarios" / "missing-image.yaml"
    assert cli_main(["sandbox", "--scenario", str(scenario), "--plot", str(tmp_path / "plots")]) == 3
    (picture,) = (tmp_path / "plots").iterdir()
    assert picture.suffix == ".png" and picture.read_bytes().startswith(PNG_SIGNATURE)
    assert "result: FAILED (ResourceValidationFailed)" in capsys.readouterr().out
