"""The SubmitServiceJob request (pure builder): the stack's network and encryption settings in its
CreateTrainingJob payload, and the team's quota share."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from spotline.core.spec.catalog import family_of, training_instance_type_names
from spotline.core.spec.model import InputChannel, JobSpec, MetricDefinition
from spotline.core.training.training_request import (
    CHECKPOINT_INTERVAL_ENV,
    DEFAULT_SETTINGS,
    FIRST_CHECKPOINT_ENV,
    INSTANCE_STORAGE_FAMILIES,
    Attempt,
    TrainingSettings,
    TrainingSettingsInvalid,
    create_training_job_request,
    has_instance_storage,
    service_job_request,
)

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:spotline-training-lifecycle:vision-resnet-1a2b3c4d"
QUEUE = "arn:aws:batch:us-east-1:123456789012:job-queue/spotline-training"
SPEC = JobSpec(
    team="vision",
    name="resnet",
    image="123456789012.dkr.ecr.us-east-1.amazonaws.com/resnet:1.0",
    role_arn="arn:aws:iam::123456789012:role/spotline/vision-training",
    instance_type="ml.p3.2xlarge",  # EBS-backed: takes a VolumeKmsKeyId
    inputs=(InputChannel("train", "s3://vision-data/train/"),),
    output_s3_uri="s3://vision-models/resnet/",
    checkpoint_s3_uri="s3://vision-checkpoints/resnet/",
)
SPOT = Attempt(EXECUTION, 1, "spot")
KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def _request(settings: TrainingSettings, spec: JobSpec = SPEC) -> dict[str, Any]:
    return create_training_job_request(spec, SPOT, settings)


def test_default_settings_leave_the_request_as_it_was() -> None:
    assert _request(DEFAULT_SETTINGS) == create_training_job_request(SPEC, SPOT)
    request = _request(TrainingSettings())
    for absent in ("VpcConfig", "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption"):
        assert absent not in request
    assert "VolumeKmsKeyId" not in request["ResourceConfig"]
    assert request["OutputDataConfig"] == {"S3OutputPath": "s3://vision-models/resnet/"}


def test_vpc_config_names_subnets_and_security_groups() -> None:
    settings = TrainingSettings(subnet_ids=("subnet-0a", "subnet-0b"), security_group_ids=("sg-01",))
    assert _request(settings)["VpcConfig"] == {"Subnets": ["subnet-0a", "subnet-0b"], "SecurityGroupIds": ["sg-01"]}


@pytest.mark.parametrize(
    ("subnets", "groups"), [(("subnet-0a",), ()), ((), ("sg-01",))], ids=["subnets-only", "groups-only"]
)
def test_vpc_config_needs_both_subnets_and_security_groups(subnets: tuple[str, ...], groups: tuple[str, ...]) -> None:
    with pytest.raises(TrainingSettingsInvalid, match="both subnet ids and security group ids"):
        TrainingSettings(subnet_ids=subnets, security_group_ids=groups)


def test_network_isolation() -> None:
    assert _request(TrainingSettings(network_isolation=True))["EnableNetworkIsolation"] is True


def test_inter_container_traffic_encryption_for_multi_instance_jobs() -> None:
    spec = replace(SPEC, instance_count=4)
    request = _request(TrainingSettings(inter_container_traffic_encryption=True), spec)
    assert request["EnableInterContainerTrafficEncryption"] is True
    assert request["ResourceConfig"]["InstanceCount"] == 4


def test_volume_key_on_ebs_backed_instances() -> None:
    assert _request(TrainingSettings(volume_kms_key_id=KEY))["ResourceConfig"] == {
        "InstanceType": "ml.p3.2xlarge",
        "InstanceCount": 1,
        "VolumeSizeInGB": 50,
        "VolumeKmsKeyId": KEY,
    }


def test_volume_key_left_out_where_sagemaker_refuses_it_local_nvme_storage() -> None:
    spec = replace(SPEC, instance_type="ml.g5.2xlarge")
    assert "VolumeKmsKeyId" not in _request(TrainingSettings(volume_kms_key_id=KEY), spec)["ResourceConfig"]
    assert has_instance_storage("ml.p4d.24xlarge")
    assert has_instance_storage("ml.g4dn.xlarge")
    assert not has_instance_storage("ml.m5.xlarge")
    assert not has_instance_storage("ml.p3.16xlarge")


def test_every_accelerated_training_family_is_classified_on_purpose() -> None:
    """Each GPU or Trainium family botocore's model lists either has local NVMe storage (no volume
    key) or is listed here as EBS-only: a new family must be looked up, not defaulted."""
    ebs_only = {"p2", "p3", "g7"}  # p2, p3: "EBS Only"; g7: storage not in the table's hardware source
    families = {family_of(name) for name in training_instance_type_names()}
    accelerated = {f for f in families if f.startswith(("g", "p", "trn"))}
    assert accelerated - ebs_only - INSTANCE_STORAGE_FAMILIES == set()
    assert has_instance_storage("ml.p6-b200.48xlarge") and has_instance_storage("ml.g7e.2xlarge")


def test_output_key() -> None:
    assert _request(TrainingSettings(output_kms_key_id=KEY))["OutputDataConfig"] == {
        "S3OutputPath": "s3://vision-models/resnet/",
        "KmsKeyId": KEY,
    }


def test_settings_reach_the_service_job_payload() -> None:
    settings = TrainingSettings(network_isolation=True, output_kms_key_id=KEY)
    payload = json.loads(service_job_request(SPEC, SPOT, QUEUE, settings)["serviceRequestPayload"])
    assert payload == _request(settings)


def test_every_submission_names_the_teams_quota_share_and_no_fair_share() -> None:
    """The stack's queue uses quota management: Batch requires quotaShareName there and accepts
    shareIdentifier only on a fair-share queue."""
    for attempt in (SPOT, Attempt(EXECUTION, 2, "on-demand")):
        request = service_job_request(SPEC, attempt, QUEUE)
        assert request["quotaShareName"] == "vision"
        assert "shareIdentifier" not in request


def test_training_code_reaches_the_framework_container_as_its_two_hyperparameters() -> None:
    spec = replace(SPEC, code_s3_uri="s3://vision-code/resnet/sourcedir.tar.gz", code_entry_point="src/train.py")
    hyperparameters = create_training_job_request(spec, SPOT)["HyperParameters"]
    assert hyperparameters == {
        "sagemaker_program": "src/train.py",
        "sagemaker_submit_directory": "s3://vision-code/resnet/sourcedir.tar.gz",
    }
    assert "sagemaker_program" not in create_training_job_request(SPEC, SPOT)["HyperParameters"]


def test_metric_definitions_and_channel_distribution_are_rendered() -> None:
    spec = replace(
        SPEC,
        instance_count=4,
        inputs=(
            InputChannel("train", "s3://vision-data/train/", "FastFile", "ShardedByS3Key"),
            InputChannel("validation", "s3://vision-data/validation/"),
        ),
        metrics=(MetricDefinition("validation:loss", r"val_loss=([0-9.]+)"),),
    )
    request = create_training_job_request(spec, SPOT)
    assert request["AlgorithmSpecification"]["MetricDefinitions"] == [
        {"Name": "validation:loss", "Regex": r"val_loss=([0-9.]+)"}
    ]
    distributions = [c["DataSource"]["S3DataSource"]["S3DataDistributionType"] for c in request["InputDataConfig"]]
    assert distributions == ["ShardedByS3Key", "FullyReplicated"]
    assert "MetricDefinitions" not in create_training_job_request(SPEC, SPOT)["AlgorithmSpecification"]


def test_a_warm_pool_is_asked_for_on_demand_only() -> None:
    spec = replace(SPEC, strategy="on-demand", keep_alive_seconds=1800)
    on_demand = create_training_job_request(spec, Attempt(EXECUTION, 1, "on-demand"))
    assert on_demand["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 1800
    # validation refuses keepAlive with a spot strategy; the builder still never sends it on spot
    assert "KeepAlivePeriodInSeconds" not in create_training_job_request(spec, SPOT)["ResourceConfig"]
    assert "KeepAlivePeriodInSeconds" not in create_training_job_request(SPEC, SPOT)["ResourceConfig"]


def test_an_early_first_checkpoint_reaches_a_spot_attempt_s_environment_only() -> None:
    early = replace(SPOT, first_checkpoint_minutes=6)
    environment = create_training_job_request(SPEC, early)["Environment"]
    assert environment[CHECKPOINT_INTERVAL_ENV] == "15" and environment[FIRST_CHECKPOINT_ENV] == "6"
    assert FIRST_CHECKPOINT_ENV not in create_training_job_request(SPEC, SPOT)["Environment"]
    on_demand = replace(early, number=2, capacity="on-demand")
    assert FIRST_CHECKPOINT_ENV not in create_training_job_request(SPEC, on_demand)["Environment"]
    unsaved = replace(SPEC, checkpoint_s3_uri=None)  # no checkpoints: nothing to time
    assert FIRST_CHECKPOINT_ENV not in create_training_job_request(unsaved, early)["Environment"]
