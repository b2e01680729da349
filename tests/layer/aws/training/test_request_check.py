"""The SubmitServiceJob request built from a spec, validated against botocore's models."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from builders import example_spec
from spotline.aws.training import training_settings
from spotline.aws.training.request_check import TrainingRequestInvalid, submit_service_job_request, validate
from spotline.core.spec.model import JobSpec, MetricDefinition
from spotline.core.training.training_request import (
    DEFAULT_SETTINGS,
    TRAINING_JOB_NAME,
    Attempt,
    TrainingSettings,
    TrainingSettingsInvalid,
    client_token,
)

EXECUTION = (
    "arn:aws:states:us-east-1:123456789012:execution:spotline-TrainingLifecycle:search-ranking-ranker-v2-4ddd7609"
)
QUEUE = "arn:aws:batch:us-east-1:123456789012:job-queue/spotline-training"


@pytest.fixture
def spec() -> JobSpec:
    return example_spec(datetime(2026, 11, 29, tzinfo=UTC))


def _payload(request: dict[str, object]) -> dict[str, object]:
    return json.loads(str(request["serviceRequestPayload"]))  # type: ignore[no-any-return]


def test_spot_request_uses_managed_spot_checkpoints_and_the_teams_quota_share(spec: JobSpec) -> None:
    request = submit_service_job_request(spec, Attempt(EXECUTION, 1, "spot"), QUEUE)
    assert request["serviceJobType"] == "SAGEMAKER_TRAINING"
    assert request["jobQueue"] == QUEUE
    assert request["quotaShareName"] == "search-ranking"  # the queue uses quota management, not fair share
    assert "shareIdentifier" not in request
    assert request["schedulingPriority"] == 100
    assert request["retryStrategy"]["evaluateOnExit"][0] == {  # type: ignore[index]
        "action": "RETRY",
        "onStatusReason": "Received status from SageMaker: InternalServerError*",
    }
    payload = _payload(request)
    assert payload["EnableManagedSpotTraining"] is True
    assert payload["StoppingCondition"] == {"MaxRuntimeInSeconds": 30 * 3600, "MaxWaitTimeInSeconds": 36 * 3600}
    assert payload["CheckpointConfig"] == {
        "S3Uri": "s3://search-ranking-checkpoints/ranker-v2/",
        "LocalPath": "/opt/ml/checkpoints",
    }
    assert payload["HyperParameters"] == {"epochs": "12", "lr": "0.0003", "mixed_precision": "true"}
    assert payload["Environment"]["SPOTLINE_CHECKPOINT_INTERVAL_MINUTES"] == "15"  # type: ignore[index]
    tags = {t["Key"]: t["Value"] for t in payload["Tags"]}  # type: ignore[attr-defined]
    assert tags["spotline:team"] == "search-ranking"
    assert tags["spotline:execution"] == "search-ranking-ranker-v2-4ddd7609"
    assert tags["cost-center"] == "4711"


def test_on_demand_request_has_no_spot_settings(spec: JobSpec) -> None:
    payload = _payload(submit_service_job_request(spec, Attempt(EXECUTION, 4, "on-demand"), QUEUE))
    assert payload["EnableManagedSpotTraining"] is False
    assert "MaxWaitTimeInSeconds" not in payload["StoppingCondition"]  # type: ignore[operator]
    assert str(payload["TrainingJobName"]).endswith("-a4-od")


def test_client_token_is_stable_per_execution_attempt_and_capacity() -> None:
    first = client_token(Attempt(EXECUTION, 1, "spot"))
    assert first == client_token(Attempt(EXECUTION, 1, "spot"))
    assert len(first) <= 64
    assert first != client_token(Attempt(EXECUTION, 2, "spot"))
    assert first != client_token(Attempt(EXECUTION, 1, "on-demand"))
    assert first != client_token(Attempt(EXECUTION.replace("4ddd7609", "00000000"), 1, "spot"))


def test_names_fit_sagemaker_and_batch_rules_even_for_long_names(spec: JobSpec) -> None:
    long_spec = replace(spec, name="a" * 40)
    request = submit_service_job_request(long_spec, Attempt(EXECUTION, 10, "on-demand"), QUEUE)
    assert TRAINING_JOB_NAME.match(str(_payload(request)["TrainingJobName"]))
    assert len(str(request["jobName"])) <= 128


def test_botocore_model_rejects_what_sagemaker_would(spec: JobSpec) -> None:
    bad = replace(spec, role_arn="arn:aws:iam::1:role")
    with pytest.raises(TrainingRequestInvalid, match="RoleArn"):
        submit_service_job_request(bad, Attempt(EXECUTION, 1, "spot"), QUEUE)
    with pytest.raises(TrainingRequestInvalid, match="naming rule"):
        validate(
            "sagemaker",
            "CreateTrainingJob",
            {
                **_payload(submit_service_job_request(spec, Attempt(EXECUTION, 1, "spot"), QUEUE)),
                "TrainingJobName": "-bad-",
            },
        )


KEY = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
EVERY_OPTION = TrainingSettings(
    subnet_ids=("subnet-0123456789abcdef0", "subnet-0fedcba9876543210"),
    security_group_ids=("sg-0123456789abcdef0",),
    network_isolation=True,
    inter_container_traffic_encryption=True,
    volume_kms_key_id=KEY,
    output_kms_key_id=KEY,
)


def test_every_network_and_encryption_option_passes_botocores_model(spec: JobSpec) -> None:
    """botocore's model knows every member the settings add (a misspelt one would be rejected)."""
    ebs_backed = replace(spec, instance_type="ml.p3.8xlarge", instance_count=2)
    payload = _payload(submit_service_job_request(ebs_backed, Attempt(EXECUTION, 1, "spot"), QUEUE, EVERY_OPTION))
    assert payload["VpcConfig"] == {
        "SecurityGroupIds": ["sg-0123456789abcdef0"],
        "Subnets": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
    }
    assert payload["EnableNetworkIsolation"] is True
    assert payload["EnableInterContainerTrafficEncryption"] is True
    assert payload["ResourceConfig"]["VolumeKmsKeyId"] == KEY  # type: ignore[index]
    assert payload["OutputDataConfig"]["KmsKeyId"] == KEY  # type: ignore[index]


def test_the_code_metric_distribution_and_warm_pool_fields_pass_botocores_model(spec: JobSpec) -> None:
    """Each field the manifest's code, metrics, distribution and keepAlive add is a member of
    CreateTrainingJob in botocore's model (a misspelt one would be rejected)."""
    full = replace(
        spec,
        strategy="on-demand",
        instance_count=2,
        keep_alive_seconds=900,
        code_s3_uri="s3://search-ranking-data/code/sourcedir.tar.gz",
        code_entry_point="train.py",
        inputs=tuple(replace(channel, distribution="ShardedByS3Key") for channel in spec.inputs),
        metrics=(MetricDefinition("train:loss", r"loss=([0-9.]+)"),),
    )
    payload = _payload(submit_service_job_request(full, Attempt(EXECUTION, 1, "on-demand"), QUEUE))
    assert payload["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 900  # type: ignore[index]
    assert payload["AlgorithmSpecification"]["MetricDefinitions"][0]["Name"] == "train:loss"  # type: ignore[index]


def test_settings_from_the_environment() -> None:
    settings = training_settings.from_environment(
        {
            "TRAINING_SUBNET_IDS": "subnet-0a, subnet-0b",
            "TRAINING_SECURITY_GROUP_IDS": "sg-01",
            "TRAINING_NETWORK_ISOLATION": "true",
            "TRAINING_INTER_CONTAINER_ENCRYPTION": "True",
            "TRAINING_VOLUME_KMS_KEY_ID": KEY,
            "TRAINING_OUTPUT_KMS_KEY_ID": "",
        }
    )
    assert settings == TrainingSettings(
        subnet_ids=("subnet-0a", "subnet-0b"),
        security_group_ids=("sg-01",),
        network_isolation=True,
        inter_container_traffic_encryption=True,
        volume_kms_key_id=KEY,
        output_kms_key_id=None,
    )
    assert training_settings.from_environment({}) == DEFAULT_SETTINGS


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"TRAINING_NETWORK_ISOLATION": "yes"}, "TRAINING_NETWORK_ISOLATION is 'yes'"),
        ({"TRAINING_SUBNET_IDS": "subnet-0a"}, "both subnet ids and security group ids"),
    ],
)
def test_unusable_settings_are_named(variables: dict[str, str], message: str) -> None:
    with pytest.raises(TrainingSettingsInvalid, match=message):
        training_settings.from_environment(variables)


def test_a_request_over_batchs_payload_quota_is_refused_before_it_is_sent(spec: JobSpec) -> None:
    """Validation allowed for a stack with EC2-style ids and key ARNs (SETTINGS_ALLOWANCE); a stack
    set with KMS aliases near SageMaker's 2,048 characters can still push a large spec over the
    10 KiB quota, and the exact request is measured at submission."""
    hyperparameters = {f"h{i}": "x" * 2500 for i in range(3)}
    large = replace(spec, hyperparameters=hyperparameters)
    alias = "alias/" + "k" * 2000
    settings = TrainingSettings(volume_kms_key_id=alias, output_kms_key_id=alias)
    fits = submit_service_job_request(large, Attempt(EXECUTION, 1, "spot"), QUEUE)
    assert 7_500 < len(str(fits["serviceRequestPayload"]).encode()) <= 10 * 1024

    with pytest.raises(TrainingRequestInvalid, match=r"serviceRequestPayload is 1[0-9],\d{3} bytes; AWS Batch takes"):
        submit_service_job_request(large, Attempt(EXECUTION, 1, "spot"), QUEUE, settings)
