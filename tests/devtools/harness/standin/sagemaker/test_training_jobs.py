"""SageMaker training jobs: CreateTrainingJob's checks on the payload, StopTrainingJob."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devtools.harness.standin.fixture_rig import RigFactory, batch_named, training_payload


def test_stop_training_job_directly_fails_the_batch_job(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload())
    rig.clock.at(1000)
    rig.sagemaker.stop_training_job(TrainingJobName=rig.training_name())
    assert rig.status_at(1030, job_id) == ("FAILED", "Stopped")
    assert rig.batch_job(job_id)["statusReason"] == "Received status from SageMaker: Stopped: Training job stopped"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda p: p.pop("RoleArn"), 'Missing required parameter in input: "RoleArn"'),
        (lambda p: p["ResourceConfig"].update(InstanceCount="1"), "Invalid type for parameter"),
        (lambda p: p.update(TrainingJobName="ranker_v2"), "failed to satisfy constraint"),
        (lambda p: p["StoppingCondition"].update(MaxWaitTimeInSeconds=60), "greater than or equal"),
        (lambda p: p.update(EnableManagedSpotTraining=False), "only supported when EnableManagedSpotTraining"),
        (lambda p: p["StoppingCondition"].pop("MaxWaitTimeInSeconds"), "MaxWaitTimeInSeconds is required when"),
        (lambda p: p["StoppingCondition"].update(MaxRuntimeInSeconds=28 * 86_400 + 1), "at most 2419200 (28 days)"),
        (lambda p: p["AlgorithmSpecification"].update(TrainingInputMode="Streaming"), "is not one of Pipe, File"),
        (lambda p: p["AlgorithmSpecification"].pop("TrainingImage"), "TrainingImage or AlgorithmName is required"),
        (lambda p: p.pop("ResourceConfig"), "ResourceConfig is required"),
        (lambda p: p["ResourceConfig"].update(SelectedInstanceType="ml.g5.2xlarge"), "are read-only"),
        (
            lambda p: p["ResourceConfig"].update(InstancePreferences=[{"InstanceType": "ml.g5.2xlarge"}]),
            "InstancePreferences is mutually exclusive with InstanceType, EnableManagedSpotTraining",
        ),
        (lambda p: p["ResourceConfig"].update(KeepAlivePeriodInSeconds=600), "cannot be used with spot instances"),
    ],
)
def test_invalid_payload_fails_when_sagemaker_sees_it(
    make_rig: RigFactory, change: Callable[[dict[str, Any]], Any], expected: str
) -> None:
    rig = make_rig()
    payload = training_payload()
    change(payload)
    job_id = rig.submit(payload)  # Batch accepts it: it does not look inside the payload

    assert rig.status_at(29, job_id) == ("RUNNABLE", None)
    job = rig.batch_job(job_id)
    rig.clock.at(30)
    job = rig.batch_job(job_id)
    assert job["status"] == "FAILED"
    assert job["statusReason"].startswith("Received status from SageMaker: ValidationException: ")
    assert expected in job["statusReason"]
    assert job["attempts"] == []


def test_batch_names_each_attempt_so_one_payload_name_serves_many_jobs(make_rig: RigFactory) -> None:
    """Batch creates the training job as AWSBatch<payload name><attempt id> (the Batch user guide's
    examples), so two service jobs with one payload name train side by side."""
    rig = make_rig()
    first = rig.submit(training_payload())
    second = rig.submit(training_payload(), name="ranker-v2-a1-spot-again")
    rig.clock.at(600)
    assert [rig.batch_job(job)["status"] for job in (first, second)] == ["RUNNING", "RUNNING"]
    assert batch_named([rig.training_name(1, first), rig.training_name(1, second)])


def test_a_payload_name_that_batch_makes_too_long_fails_the_job(make_rig: RigFactory) -> None:
    """Whether Batch truncates AWSBatch<name><id> beyond SageMaker's 63 characters is not documented;
    the stand-in does not, so CreateTrainingJob refuses it (Spotline's names are at most 23)."""
    rig = make_rig()
    job_id = rig.submit(training_payload("x" * 24))
    rig.clock.at(30)
    described = rig.batch_job(job_id)
    assert described["status"] == "FAILED"
    assert "Member must have length less than or equal to 63" in described["statusReason"]
    assert described["attempts"] == []
    fits = rig.submit(training_payload("y" * 23))
    rig.clock.at(600)
    assert rig.batch_job(fits)["status"] == "RUNNING"
    assert len(rig.training_name(1, fits)) == 63


@pytest.mark.parametrize(("keep_alive", "refused"), [(3600, False), (3601, True)])
def test_an_on_demand_warm_pool_is_kept_up_to_an_hour(make_rig: RigFactory, keep_alive: int, refused: bool) -> None:
    """The warm pools guide limits KeepAlivePeriodInSeconds to 3600 seconds, on on-demand jobs only."""
    rig = make_rig()
    payload = training_payload(spot=False)
    payload["ResourceConfig"]["KeepAlivePeriodInSeconds"] = keep_alive
    job_id = rig.submit(payload, name="ranker-v2-a1-od")
    rig.clock.at(30)
    job = rig.batch_job(job_id)
    assert (job["status"] == "FAILED") is refused
    if refused:
        assert "KeepAlivePeriodInSeconds must be at most 3600" in job["statusReason"]
