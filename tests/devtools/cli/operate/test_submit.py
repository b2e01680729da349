"""`spotline submit` against the local stack as a deployed one: validate with the stack's team
policy, upload to manifests/<team>/, name the execution the upload starts, follow it with --wait."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from conftest import EXAMPLE_MANIFEST
from devtools.cli.operate.printed import printed_json, printed_lines
from spotline_dev.cli.entry import main
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_NOT_SUCCEEDED, EXIT_OK, EXIT_USAGE
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import STACK

ON_STACK = ["--stack", STACK]


def test_submit_uploads_to_the_team_folder_and_names_the_execution_intake_starts(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["submit", str(EXAMPLE_MANIFEST), *ON_STACK, "--output", "json"]) == EXIT_OK
    submitted = printed_json(capsys.readouterr().out)
    assert submitted["key"] == "manifests/search-ranking/ranker-v2.yaml"
    assert submitted["teamPolicyChecked"] is True
    stored = deployed.client("s3").get_object(Bucket=deployed.bucket, Key=submitted["key"])
    assert stored["VersionId"] == submitted["versionId"]
    assert stored["Body"].read() == EXAMPLE_MANIFEST.read_bytes()  # uploaded as is

    (started,) = deployed.deliver_events()  # EventBridge brings the upload to Intake
    assert (started["name"], started["executionArn"]) == (submitted["executionName"], submitted["executionArn"])
    assert submitted["console"].endswith(submitted["executionArn"])


def test_submit_prints_the_execution_and_its_console_link(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["submit", str(EXAMPLE_MANIFEST), *ON_STACK]) == EXIT_OK
    out = printed_lines(capsys.readouterr().out)
    assert out[0].startswith("Valid; uploaded s3://spotline-local-ingestbucket/manifests/search-ranking/ranker-v2.yaml")
    assert out[1].startswith("Execution  search-ranking-ranker-v2-")
    assert out[2].startswith("Console    https://us-east-1.console.aws.amazon.com/states/home")


def test_wait_follows_the_run_to_its_end(deployed: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", str(EXAMPLE_MANIFEST), *ON_STACK, "--wait", "--output", "json"]) == EXIT_OK
    result = printed_json(capsys.readouterr().out)
    run = result["run"]
    assert (run["name"], run["status"], run["state"]) == (result["executionName"], "SUCCEEDED", "succeeded")
    assert (run["attempts"], run["capacity"], run["progress"]) == (1, "spot", 1.0)
    assert run["costUsd"] > 0


def test_wait_exits_3_when_the_run_does_not_succeed(deployed: LocalStack, capsys: pytest.CaptureFixture[str]) -> None:
    deployed.standin.fail_next_attempt("AlgorithmError: ExecuteUserScriptError: ExitCode 1")
    assert main(["submit", str(EXAMPLE_MANIFEST), *ON_STACK, "--wait"]) == EXIT_NOT_SUCCEEDED
    last = printed_lines(capsys.readouterr().out)[-1]
    assert " FAILED: " in last


def test_an_invalid_manifest_is_refused_field_by_field_and_nothing_is_uploaded(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    body = EXAMPLE_MANIFEST.read_text().replace("instanceType: ml.g5.2xlarge", "instanceType: ml.p5.48xlarge")
    assert body != EXAMPLE_MANIFEST.read_text()
    path = tmp_path / "ranker-v2.yaml"
    path.write_text(body)
    assert main(["submit", str(path), *ON_STACK]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "spec.resources.instanceType: family p5 is not allowed for team search-ranking" in err  # its TeamPolicy
    assert "nothing uploaded" in err
    listed = deployed.client("s3").list_objects_v2(Bucket=deployed.bucket, Prefix="manifests/")
    assert listed.get("KeyCount", 0) == 0


def test_standard_input_is_uploaded_under_the_manifest_name(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(EXAMPLE_MANIFEST.read_bytes())))
    assert main(["submit", "-", *ON_STACK, "--output", "json"]) == EXIT_OK
    assert printed_json(capsys.readouterr().out)["key"] == "manifests/search-ranking/ranker-v2.yaml"


def test_a_file_that_is_not_a_manifest_name_is_a_usage_error(
    deployed: LocalStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "ranker.txt"
    path.write_bytes(EXAMPLE_MANIFEST.read_bytes())
    assert main(["submit", str(path), *ON_STACK]) == EXIT_USAGE
    assert "ends in .yaml, .yml, .json" in capsys.readouterr().err
