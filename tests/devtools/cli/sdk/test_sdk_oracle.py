"""The SageMaker Python SDK as the oracle: for trainers AWS wrote (the SDK's own tests and
guides, made concrete; each file says where it comes from), the manifest `from-trainer` makes is
valid, and the CreateTrainingJob request Spotline renders from it equals the one the SDK builds,
apart from the members `INTENDED_DIFFERENCES` lists, each with its reason."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from devtools.cli.sdk.sdk_child import TRAINERS, offline_environment, sdk_requests
from spotline.core.manifest.manifest import validate_bytes, validate_document
from spotline.core.training.training_request import Attempt, create_training_job_request
from spotline_dev.cli.entry import build_parser
from spotline_dev.cli.sdk.request_to_manifest import SpotlineFields, comparable, manifest_from_request

NOW = datetime(2026, 12, 1, tzinfo=UTC)
# docs/teams/manifests.md's example trainer
EXAMPLE_TRAINER = Path(__file__).resolve().parents[4] / "examples" / "trainers" / "ranker_v2.py"
EXECUTION = "arn:aws:states:us-west-2:123456789012:execution:spotline-TrainingLifecycle:vision-job-1a2b3c4d"
CONVERTIBLE = {
    "migration_simple_training.py": SpotlineFields(team="vision", name="simple-training"),
    "shallow_multi_instance.py": SpotlineFields(team="vision", name="multi-instance", priority=200),
    "shallow_fastfile_mode.py": SpotlineFields(team="vision", name="fastfile"),
    "shallow_fastfile_uri.py": SpotlineFields(team="vision", name="fastfile-uri"),
    "shallow_checkpoint.py": SpotlineFields(team="vision", name="checkpoint", checkpoint_interval_minutes=5),
    "shallow_managed_spot.py": SpotlineFields(
        team="vision", name="spot", expected_duration="5m", deadline="2026-12-01T06:00:00Z"
    ),
    "shallow_environment_hyperparameters.py": SpotlineFields(team="vision", name="contract", owner="ml@example.com"),
    "unit_metric_definitions.py": SpotlineFields(team="vision", name="metrics", labels={"cost-center": "4711"}),
    "warm_pool_on_demand.py": SpotlineFields(team="llm", name="deepseek-sft", depends_on=("sft-2026-12-01",)),
    EXAMPLE_TRAINER.name: SpotlineFields(
        team="search-ranking", name="ranker-v2", expected_duration="8h", checkpoint_interval_minutes=15
    ),
}
REFUSED = {
    "refused_local_code_and_networking.py": [
        "source_code.source_dir: '",
        "EnableInterContainerTrafficEncryption: set by the stack",
    ],
    "refused_torchrun.py": ["distributed: ModelTrainer runs distributed training through its own uploaded driver"],
    "refused_local_input.py": ["input train: /tmp/spotline-local-data is not in S3"],
    # What the SDK would fetch from AWS: refused naming the field, never a network error.
    "refused_migration_pytorch.py": ["role: is required", "output_data_config: is required"],
    "refused_role_name.py": ["role: 'SageMakerRole' is a role name"],
    "refused_default_checkpoint.py": [
        "checkpoint_config.s3_uri: is required",
        "tensorboard_output_config.s3_output_path: is required",
    ],
    "refused_execution_role.py": [
        f"{TRAINERS / 'refused_execution_role.py'}: the SDK called AWS (GetCallerIdentity) in "
        "sagemaker.core.helper.session_helper.get_execution_role"
    ],
    "refused_recipe.py": ["ModelTrainer.from_recipe: a recipe trainer runs the SDK's recipe launcher"],
}


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every trainer's request, built once by the SDK in a child process without network."""
    files = [TRAINERS / name for name in [*CONVERTIBLE, *REFUSED] if name != EXAMPLE_TRAINER.name]
    results = sdk_requests([str(file) for file in [*files, EXAMPLE_TRAINER]], tmp_path_factory.mktemp("home"))
    return {Path(reference).name: result for reference, result in results.items()}


def _rendered(manifest: dict[str, Any]) -> dict[str, Any]:
    result = validate_document(manifest, now=NOW)
    assert result.errors == [], result.errors
    assert result.spec is not None
    capacity = "on-demand" if result.spec.strategy == "on-demand" else "spot"
    return create_training_job_request(result.spec, Attempt(EXECUTION, 1, capacity))


@pytest.mark.parametrize("file", CONVERTIBLE)
def test_spotlines_request_is_the_sdks_apart_from_the_intended_differences(
    sdk: dict[str, dict[str, Any]], file: str
) -> None:
    request = sdk[file]["request"]
    assert sdk[file].get("problems", []) == []
    manifest = manifest_from_request(request, CONVERTIBLE[file])
    rendered = _rendered(manifest)
    assert comparable(rendered) == comparable(request)
    tags = {(tag["Key"], tag["Value"]) for tag in rendered["Tags"]}
    assert {(tag["Key"], tag["Value"]) for tag in request.get("Tags", [])} <= tags  # the trainer's, and Spotline's


def test_the_corpus_covers_what_the_issue_names(sdk: dict[str, dict[str, Any]]) -> None:
    """Image-only, several channels, multi-instance, FastFile, checkpoints, spot and on-demand,
    environment and hyperparameters, metrics, code from S3 and a warm pool."""
    requests = [sdk[file]["request"] for file in CONVERTIBLE]
    channels = [c for r in requests for c in r.get("InputDataConfig", [])]
    assert any("sagemaker_program" not in r.get("HyperParameters", {}) for r in requests)
    assert any("sagemaker_program" in r.get("HyperParameters", {}) for r in requests)
    assert any(len(r["InputDataConfig"]) > 1 for r in requests)
    assert any(r["ResourceConfig"]["InstanceCount"] > 1 for r in requests)
    assert any(
        r["AlgorithmSpecification"]["TrainingInputMode"] == "FastFile"
        and any("InputMode" not in c for c in r["InputDataConfig"])
        for r in requests
    )
    assert any("CheckpointConfig" in r for r in requests)
    assert {bool(r.get("EnableManagedSpotTraining")) for r in requests} == {True, False}
    assert any(r.get("Environment") for r in requests) and any(r.get("HyperParameters") for r in requests)
    assert any("MetricDefinitions" in r["AlgorithmSpecification"] for r in requests)
    assert any("KeepAlivePeriodInSeconds" in r["ResourceConfig"] for r in requests)
    assert any(r.get("Tags") for r in requests)
    assert channels


def test_a_trainer_reading_fastfile_by_the_jobs_mode_becomes_a_fastfile_channel(sdk: dict[str, dict[str, Any]]) -> None:
    manifest = manifest_from_request(
        sdk["shallow_fastfile_mode.py"]["request"], CONVERTIBLE["shallow_fastfile_mode.py"]
    )
    assert manifest["spec"]["inputs"] == [
        {"name": "train", "s3Uri": "s3://vision-data/shallow-integ-test/train/", "mode": "FastFile"}
    ]
    # A channel the SDK built from a URI says File, which overrides the job's FastFile.
    uri = manifest_from_request(sdk["shallow_fastfile_uri.py"]["request"], CONVERTIBLE["shallow_fastfile_uri.py"])
    assert "mode" not in uri["spec"]["inputs"][0]


def test_code_from_s3_becomes_spec_code(sdk: dict[str, dict[str, Any]]) -> None:
    manifest = manifest_from_request(
        sdk["shallow_multi_instance.py"]["request"], CONVERTIBLE["shallow_multi_instance.py"]
    )
    assert manifest["spec"]["code"] == {
        "s3Uri": "s3://vision-code/params_script/sourcedir.tar.gz",
        "entryPoint": "train.py",
    }
    assert not any(name.startswith("sagemaker_") for name in manifest["spec"].get("hyperparameters", {}))


def test_the_oracle_sees_a_difference_outside_the_list(sdk: dict[str, dict[str, Any]]) -> None:
    request = sdk["shallow_multi_instance.py"]["request"]
    rendered = _rendered(manifest_from_request(request, CONVERTIBLE["shallow_multi_instance.py"]))
    rendered["ResourceConfig"]["InstanceCount"] = 3
    assert comparable(rendered) != comparable(request)
    rendered = _rendered(manifest_from_request(request, CONVERTIBLE["shallow_multi_instance.py"]))
    rendered["InputDataConfig"][1]["DataSource"]["S3DataSource"]["S3DataDistributionType"] = "ShardedByS3Key"
    assert comparable(rendered) != comparable(request)
    file = "shallow_fastfile_mode.py"  # the job's FastFile, which the channel inherits
    rendered = _rendered(manifest_from_request(sdk[file]["request"], CONVERTIBLE[file]))
    rendered["InputDataConfig"][0]["InputMode"] = "File"
    assert comparable(rendered) != comparable(sdk[file]["request"])


@pytest.mark.parametrize("file", REFUSED)
def test_what_a_manifest_cannot_carry_is_refused_naming_it(sdk: dict[str, dict[str, Any]], file: str) -> None:
    problems = list(sdk[file].get("problems", []))
    if "request" in sdk[file]:
        try:
            manifest_from_request(sdk[file]["request"], SpotlineFields(team="vision", name="refused"))
        except ValueError as exc:
            problems += exc.problems  # type: ignore[attr-defined]
    for expected in REFUSED[file]:
        assert any(problem.startswith(expected) for problem in problems), (expected, problems)


def test_the_command_writes_a_valid_manifest_and_refuses_naming_what_it_cannot_carry(tmp_path: Path) -> None:
    """`spotline from-trainer` as a user runs it: in a process of its own, without network."""
    output = tmp_path / "spot.yaml"
    trainer = TRAINERS / "shallow_managed_spot.py"
    args = ["--team", "vision", "--name", "spot", "--expected-duration", "5m", "--now", "2026-12-01T00:00:00Z"]
    environment = offline_environment(tmp_path)
    spotline = [sys.executable, "-m", "spotline_dev.cli.entry", "from-trainer"]
    done = subprocess.run(
        [*spotline, str(trainer), *args, "--output-file", str(output)],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = validate_bytes(output.read_bytes(), now=NOW)
    assert result.errors == [] and result.spec is not None
    assert (result.spec.strategy, result.spec.instance_type) == ("spot-first", "ml.m5.large")
    refused = TRAINERS / "refused_torchrun.py"
    done = subprocess.run(
        [*spotline, str(refused), *args], capture_output=True, text=True, env=environment, check=False
    )
    assert done.returncode == 1
    assert "has what a manifest cannot carry" in done.stderr and "distributed:" in done.stderr
    no_output = TRAINERS / "refused_migration_pytorch.py"  # the SDK would look for its default bucket
    done = subprocess.run(
        [*spotline, str(no_output), *args], capture_output=True, text=True, env=environment, check=False
    )
    assert done.returncode == 1
    assert "output_data_config: is required" in done.stderr and "role: is required" in done.stderr
    assert "Error" not in done.stderr and "proxy" not in done.stderr, done.stderr  # no network error, no traceback


def test_every_example_of_the_help_runs(tmp_path: Path) -> None:
    """`spotline from-trainer --help`'s examples, as a user copies them (from the repository's
    root, here a folder that has its examples/), judged as of NOW."""
    (tmp_path / "examples").symlink_to(EXAMPLE_TRAINER.parents[1])
    epilog = str(_from_trainer_parser().epilog)
    lines = [line.strip() for line in epilog.splitlines()[1:]]
    assert lines
    for line in lines:
        argv = shlex.split(line, comments=True)
        assert argv[:2] == ["spotline", "from-trainer"], line
        done = subprocess.run(
            [sys.executable, "-m", "spotline_dev.cli.entry", *argv[1:], "--now", NOW.isoformat()],
            capture_output=True,
            text=True,
            env=offline_environment(tmp_path),
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 0, (line, done.stderr)


def _from_trainer_parser() -> argparse.ArgumentParser:
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return commands.choices["from-trainer"]
