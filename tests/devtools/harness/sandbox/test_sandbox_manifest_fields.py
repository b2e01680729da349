"""The manifest fields that come from the SageMaker Python SDK (code from S3, channel
distribution, metric definitions, warm pools) reach SageMaker through the running system, and
a team may use them only within its allowance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spotline.core.manifest.manifest import validate_bytes
from spotline_dev.harness.sandbox.account import team_allowance
from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario
from spotline_dev.harness.standin.sagemaker import training_jobs

ROOT = Path(__file__).resolve().parents[4]
SCENARIO = ROOT / "examples" / "scenarios" / "framework-code-and-warm-pool.yaml"
MANIFEST = ROOT / "examples" / "scenarios" / "manifests" / "framework-code-warm-pool.yaml"


@pytest.fixture
def payloads(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every CreateTrainingJob request the stand-in's SageMaker accepted."""
    accepted: list[dict[str, Any]] = []
    original = training_jobs.SageMakerTrainingJobs.validated_payload

    def recording(self: training_jobs.SageMakerTrainingJobs, payload: str) -> dict[str, Any]:
        request = original(self, payload)
        accepted.append(request)
        return request

    monkeypatch.setattr(training_jobs.SageMakerTrainingJobs, "validated_payload", recording)
    return accepted


def test_code_distribution_metrics_and_warm_pool_reach_sagemaker(payloads: list[dict[str, Any]]) -> None:
    (run,) = run_scenario(load_scenario(SCENARIO))["executions"]
    assert run["status"] == "SUCCEEDED"
    (request,) = payloads
    assert request["HyperParameters"]["sagemaker_program"] == "train.py"
    assert (
        request["HyperParameters"]["sagemaker_submit_directory"] == "s3://search-ranking-code/ranker/sourcedir.tar.gz"
    )
    assert [c["DataSource"]["S3DataSource"]["S3DataDistributionType"] for c in request["InputDataConfig"]] == [
        "ShardedByS3Key",
        "FullyReplicated",
    ]
    assert [m["Name"] for m in request["AlgorithmSpecification"]["MetricDefinitions"]] == [
        "validation:ndcg",
        "train:loss",
    ]
    assert request["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 1800
    assert request["EnableManagedSpotTraining"] is False


def test_outside_the_teams_allowance_they_are_refused_before_anything_runs(
    tmp_path: Path, payloads: list[dict[str, Any]]
) -> None:
    spec = validate_bytes(MANIFEST.read_bytes(), now=load_scenario(SCENARIO).start).spec
    assert spec is not None
    allowance = team_allowance(spec)
    allowance.pop("maxKeepAlive")  # no warm pools for this team
    allowance["s3Prefixes"] = [p for p in allowance["s3Prefixes"] if "-code/" not in p]  # nor this code
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        f'name: outside-the-allowance\nstart: "2026-12-01T09:00:00Z"\nmanifests: [{MANIFEST}]\n'
        f"teamPolicy: {json.dumps({'teams': {spec.team: allowance}})}\n"
    )
    (run,) = run_scenario(load_scenario(scenario))["executions"]
    assert (run["status"], run["error"]) == ("FAILED", "ResourceValidationFailed")
    assert "spec.resources.keepAlive: team search-ranking may keep no warm pools" in run["cause"]
    assert "spec.code.s3Uri: s3://search-ranking-code/ranker/sourcedir.tar.gz is outside" in run["cause"]
    assert payloads == []


def test_a_missing_source_archive_is_named_before_anything_runs(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        f'name: no-archive\nstart: "2026-12-01T09:00:00Z"\nmanifests: [{MANIFEST}]\nmissing: [spec.code.s3Uri]\n'
    )
    (run,) = run_scenario(load_scenario(scenario))["executions"]
    assert (run["status"], run["error"]) == ("FAILED", "ResourceValidationFailed")
    assert "spec.code.s3Uri: no source archive at s3://search-ranking-code/ranker/sourcedir.tar.gz" in run["cause"]
