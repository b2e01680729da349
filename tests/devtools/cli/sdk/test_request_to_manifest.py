"""From a CreateTrainingJob request to a manifest, without the SDK: every member is carried or
refused naming it, and `comparable` removes only the documented differences."""

from __future__ import annotations

from typing import Any

import pytest

from spotline_dev.cli.sdk.request_to_manifest import (
    INTENDED_DIFFERENCES,
    SpotlineFields,
    TrainerNotConvertible,
    comparable,
    manifest_from_request,
)

FIELDS = SpotlineFields(team="vision", name="resnet")


def _request(**extra: Any) -> dict[str, Any]:
    return {
        "TrainingJobName": "resnet-2026-12-01-09-00-00-000",
        "AlgorithmSpecification": {
            "TrainingImage": "123456789012.dkr.ecr.us-east-1.amazonaws.com/resnet:1.0",
            "TrainingInputMode": "File",
        },
        "RoleArn": "arn:aws:iam::123456789012:role/spotline/vision-training",
        "InputDataConfig": [
            {"ChannelName": "train", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://d/t/"}}}
        ],
        "OutputDataConfig": {"S3OutputPath": "s3://vision-models/resnet/", "CompressionType": "GZIP"},
        "ResourceConfig": {"InstanceType": "ml.g5.2xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 5400},
        **extra,
    }


def test_a_plain_request_becomes_an_on_demand_manifest() -> None:
    manifest = manifest_from_request(_request(Tags=[{"Key": "project", "Value": "x"}]), FIELDS)
    assert manifest["metadata"] == {"team": "vision", "name": "resnet", "labels": {"project": "x"}}
    assert manifest["spec"]["capacity"] == {"strategy": "on-demand", "maxRuntime": "90m"}
    assert manifest["spec"]["inputs"] == [{"name": "train", "s3Uri": "s3://d/t/"}]
    assert manifest["spec"]["resources"] == {"instanceType": "ml.g5.2xlarge", "instanceCount": 1, "volumeSizeGB": 30}


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"VpcConfig": {"Subnets": ["subnet-1"], "SecurityGroupIds": ["sg-1"]}}, "VpcConfig: set by the stack"),
        ({"EnableNetworkIsolation": True}, "EnableNetworkIsolation: set by the stack"),
        ({"RetryStrategy": {"MaximumRetryAttempts": 2}}, "RetryStrategy: has no manifest field"),
        ({"TensorBoardOutputConfig": {"S3OutputPath": "s3://b/tb/"}}, "TensorBoardOutputConfig: has no manifest field"),
        ({"HyperParameters": {"sagemaker_region": "us-east-1"}}, "HyperParameters.sagemaker_region: sagemaker_*"),
        ({"HyperParameters": {"sagemaker_program": "train.py"}}, "HyperParameters: sagemaker_program and"),
        ({"CheckpointConfig": {"S3Uri": "s3://c/", "LocalPath": "/tmp/ckpt"}}, "CheckpointConfig.LocalPath: /tmp/ckpt"),
    ],
    ids=["vpc", "isolation", "retry", "tensorboard", "reserved-hyperparameter", "half-code", "checkpoint-path"],
)
def test_what_a_manifest_cannot_carry_is_refused_naming_it(extra: dict[str, Any], problem: str) -> None:
    with pytest.raises(TrainerNotConvertible) as refused:
        manifest_from_request(_request(**extra), FIELDS)
    assert any(p.startswith(problem) for p in refused.value.problems), refused.value.problems


def test_members_nested_anywhere_are_refused_not_dropped() -> None:
    request = _request()
    request["InputDataConfig"][0]["ContentType"] = "application/x-parquet"
    request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["AttributeNames"] = ["a"]
    request["ResourceConfig"]["InstanceGroups"] = [{"InstanceGroupName": "g"}]
    request["OutputDataConfig"]["CompressionType"] = "NONE"
    with pytest.raises(TrainerNotConvertible) as refused:
        manifest_from_request(request, FIELDS)
    assert sorted(p.split(":")[0] for p in refused.value.problems) == [
        "InputDataConfig[0].ContentType",
        "InputDataConfig[0].DataSource.S3DataSource.AttributeNames",
        "OutputDataConfig.CompressionType",
        "ResourceConfig.InstanceGroups",
    ]


def test_comparable_drops_exactly_the_listed_members() -> None:
    request = _request(Tags=[{"Key": "a", "Value": "b"}])
    kept = comparable(request)
    assert "TrainingJobName" not in kept and "Tags" not in kept and "CompressionType" not in kept["OutputDataConfig"]
    assert kept["ResourceConfig"] == request["ResourceConfig"]
    assert kept["EnableManagedSpotTraining"] is False  # what SageMaker assumes when it is left out
    assert all(reason for reason in INTENDED_DIFFERENCES.values())


def test_a_checkpoint_interval_without_a_checkpoint_is_refused_not_dropped() -> None:
    fields = SpotlineFields(team="vision", name="resnet", checkpoint_interval_minutes=15)
    with pytest.raises(TrainerNotConvertible, match=r"CheckpointConfig: --checkpoint-interval needs"):
        manifest_from_request(_request(), fields)


def test_comparable_compares_each_channels_effective_input_mode() -> None:
    request = _request(AlgorithmSpecification={"TrainingImage": "i", "TrainingInputMode": "FastFile"})
    assert comparable(request)["InputDataConfig"][0]["InputMode"] == "FastFile"
    request["InputDataConfig"][0]["InputMode"] = "File"
    assert comparable(request)["InputDataConfig"][0]["InputMode"] == "File"
