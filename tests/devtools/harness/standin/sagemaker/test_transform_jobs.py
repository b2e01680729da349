"""SageMaker Batch Transform jobs on the stand-in (spotline_dev.harness.standin.sagemaker.transform_jobs): they
read a manifest file's objects from S3, take the time their records need at the scenario's
throughput on the instances they have, write one .out object per input object when they complete,
and refuse what CreateTransformJob refuses. Every answer passes botocore's output-shape check."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from devtools.harness.standin.fixture_rig import REGION, T0, Rig, RigFactory
from spotline_dev.harness.standin.sagemaker.transform_jobs import TRANSFORM_DETAIL_TYPE, TransformWeather

BUCKET, OUT = "media-recs-data", "media-recs-scores"
MODEL = "media-recs-ranker"


def _prepared(make_rig: RigFactory, objects: int = 4, lines: int = 3000, **weather: Any) -> Rig:
    rig = make_rig()
    rig.standin.transforms.weather = TransformWeather(**({"records_per_second": 10.0, "start_delay": 300.0} | weather))
    s3 = boto3.client("s3", region_name=REGION)
    for bucket in (BUCKET, OUT):
        s3.create_bucket(Bucket=bucket)
    for index in range(objects):
        s3.put_object(Bucket=BUCKET, Key=f"pairs/part-{index}.csv", Body=b"1,2\n" * lines)
    manifest = [{"prefix": f"s3://{BUCKET}/pairs/"}, *[f"part-{i}.csv" for i in range(objects)]]
    s3.put_object(Bucket=BUCKET, Key="manifests/shard-0.json", Body=json.dumps(manifest).encode())
    if MODEL not in {m["ModelName"] for m in rig.sagemaker.list_models()["Models"]}:  # rigs share moto's account
        rig.sagemaker.create_model(
            ModelName=MODEL,
            ExecutionRoleArn="arn:aws:iam::123456789012:role/spotline/scoring",
            PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:1"},
        )
    return rig


def _create(rig: Rig, name: str = "nightly-s0", instances: int = 1, **extra: Any) -> str:
    request = {
        "TransformJobName": name,
        "ModelName": MODEL,
        "TransformInput": {
            "DataSource": {
                "S3DataSource": {"S3DataType": "ManifestFile", "S3Uri": f"s3://{BUCKET}/manifests/shard-0.json"}
            },
            "ContentType": "text/csv",
            "SplitType": "Line",
        },
        "TransformOutput": {"S3OutputPath": f"s3://{OUT}/2026-12-05/s0/", "AssembleWith": "Line"},
        "TransformResources": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": instances},
        "BatchStrategy": "MultiRecord",
        **extra,
    }
    return str(rig.sagemaker.create_transform_job(**request)["TransformJobArn"])


def _status(rig: Rig, name: str = "nightly-s0") -> dict[str, Any]:
    return rig.sagemaker.describe_transform_job(TransformJobName=name)  # type: ignore[no-any-return]


def test_a_job_scores_its_records_at_the_weathers_pace_then_writes_one_out_object_per_input(
    make_rig: RigFactory,
) -> None:
    rig = _prepared(make_rig)  # 4 objects x 3000 lines at 10 records/s on one instance: 1200 s
    arn = _create(rig)
    assert arn == "arn:aws:sagemaker:us-east-1:123456789012:transform-job/nightly-s0"
    assert _status(rig)["TransformJobStatus"] == "InProgress" and "TransformStartTime" not in _status(rig)
    rig.clock.at(300 + 1199)
    assert _status(rig)["TransformStartTime"] == T0 + timedelta(seconds=300)
    assert _status(rig)["TransformJobStatus"] == "InProgress"
    rig.clock.at(300 + 1200)
    described = _status(rig)
    assert (described["TransformJobStatus"], described["TransformEndTime"]) == (
        "Completed",
        T0 + timedelta(seconds=1500),
    )
    events = rig.standin.state_change_events()
    assert [(e["DetailType"], json.loads(e["Detail"])["TransformJobStatus"]) for e in events] == [
        (TRANSFORM_DETAIL_TYPE, "Completed")
    ]
    listed = boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=OUT)["Contents"]
    assert sorted(o["Key"] for o in listed) == [f"2026-12-05/s0/part-{i}.csv.out" for i in range(4)]


def test_instances_split_the_objects_by_key_and_a_slow_night_takes_longer(make_rig: RigFactory) -> None:
    rig = _prepared(make_rig)
    _create(rig, instances=2)  # two objects each: 600 s
    assert rig.standin.transforms.jobs["nightly-s0"].end == pytest.approx(T0.timestamp() + 300 + 600)
    slow = _prepared(make_rig, changes=[(T0.timestamp() + 600, 0.5)])
    _create(slow, instances=2)  # 300 s at 10/s (3000 records), then 3000 at 5/s: 600 s more
    assert slow.standin.transforms.jobs["nightly-s0"].end == pytest.approx(T0.timestamp() + 300 + 300 + 600)
    assert rig.standin.next_change_after(T0) == T0 + timedelta(seconds=300)


def test_a_stopped_job_stores_no_output(make_rig: RigFactory) -> None:
    rig = _prepared(make_rig)
    _create(rig)
    rig.clock.at(400)
    rig.sagemaker.stop_transform_job(TransformJobName="nightly-s0")
    assert _status(rig)["TransformJobStatus"] == "Stopping"
    rig.clock.at(500)
    assert _status(rig)["TransformJobStatus"] == "Stopped"
    assert "Contents" not in boto3.client("s3", region_name=REGION).list_objects_v2(Bucket=OUT)
    statuses = [json.loads(e["Detail"])["TransformJobStatus"] for e in rig.standin.state_change_events()]
    assert statuses == ["Stopped"]
    summaries = rig.sagemaker.list_transform_jobs()["TransformJobSummaries"]
    assert [(s["TransformJobName"], s["TransformJobStatus"]) for s in summaries] == [("nightly-s0", "Stopped")]


@pytest.mark.parametrize(
    ("change", "code", "message"),
    [
        ({"ModelName": "no-such-model"}, "ValidationException", "Could not find model"),
        ({"MaxPayloadInMB": 30, "MaxConcurrentTransforms": 4}, "ValidationException", "MaxPayloadInMB"),
        ({"TransformResources": {"InstanceType": "ml.c5.2xlarge", "InstanceCount": 101}}, "ValidationException", "100"),
    ],
)
def test_what_create_transform_job_refuses(
    make_rig: RigFactory, change: dict[str, Any], code: str, message: str
) -> None:
    rig = _prepared(make_rig)
    with pytest.raises(ClientError) as refused:
        _create(rig, **change)
    assert refused.value.response["Error"]["Code"] == code and message in refused.value.response["Error"]["Message"]


def test_a_name_is_unique_and_batch_strategy_needs_a_split_type(make_rig: RigFactory) -> None:
    rig = _prepared(make_rig)
    _create(rig)
    with pytest.raises(ClientError, match="already exists"):
        _create(rig)
    unsplit = {
        "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{BUCKET}/pairs/"}},
        "ContentType": "text/csv",
    }
    with pytest.raises(ClientError, match="SplitType"):
        _create(rig, name="other", TransformInput=unsplit)


def test_a_missing_manifest_file_fails_the_job_with_its_reason(make_rig: RigFactory) -> None:
    rig = _prepared(make_rig)
    missing = {
        "DataSource": {"S3DataSource": {"S3DataType": "ManifestFile", "S3Uri": f"s3://{BUCKET}/manifests/none.json"}},
        "ContentType": "text/csv",
        "SplitType": "Line",
    }
    _create(rig, TransformInput=missing)
    rig.clock.at(300)
    described = _status(rig)
    assert described["TransformJobStatus"] == "Failed"
    assert (
        described["FailureReason"]
        == f"ClientError: the manifest file s3://{BUCKET}/manifests/none.json could not be read"
    )


def test_create_model_refuses_a_name_taken_and_an_artifact_that_is_not_there(make_rig: RigFactory) -> None:
    rig = _prepared(make_rig)
    role, image = "arn:aws:iam::123456789012:role/spotline/scoring", "123456789012.dkr.ecr.us-east-1.amazonaws.com/r:1"
    with pytest.raises(ClientError) as taken:  # moto alone would replace the model
        rig.sagemaker.create_model(ModelName=MODEL, ExecutionRoleArn=role, PrimaryContainer={"Image": image})
    assert taken.value.response["Error"]["Code"] == "ValidationException"
    assert "Cannot create already existing model" in str(taken.value)
    artifact = f"s3://{OUT}/models/ranker/model.tar.gz"
    with pytest.raises(ClientError) as missing:
        rig.sagemaker.create_model(
            ModelName="ranker-2", ExecutionRoleArn=role, PrimaryContainer={"Image": image, "ModelDataUrl": artifact}
        )
    assert f"Could not find model data at {artifact}" in str(missing.value)
    boto3.client("s3", region_name=REGION).put_object(Bucket=OUT, Key="models/ranker/model.tar.gz", Body=b"tar")
    created = rig.sagemaker.create_model(
        ModelName="ranker-2", ExecutionRoleArn=role, PrimaryContainer={"Image": image, "ModelDataUrl": artifact}
    )
    assert created["ModelArn"].endswith(":model/ranker-2")  # moto creates what the stand-in lets through


@pytest.mark.parametrize(
    ("request_change", "field"),
    [
        ({"ModelName": "r" * 64}, "ModelName"),  # ModelName "max": 63
        ({"PrimaryContainer": {"Image": "i", "Environment": {f"V{i}": "x" for i in range(101)}}}, "Environment"),
    ],
)
def test_create_model_refuses_what_its_api_model_refuses(
    make_rig: RigFactory, request_change: dict[str, Any], field: str
) -> None:
    # botocore's sagemaker model: ModelName at most 63 characters; ContainerDefinition.Environment is an EnvironmentMap,
    # "max": 100. moto alone creates both.
    rig = _prepared(make_rig)
    request = {
        "ModelName": "ranker-v3",
        "ExecutionRoleArn": "arn:aws:iam::123456789012:role/spotline/scoring",
        "PrimaryContainer": {"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/r:1"},
    } | request_change
    with pytest.raises(ClientError) as refused:
        rig.sagemaker.create_model(**request)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert field in refused.value.response["Error"]["Message"]
    assert "ranker-v3" not in {m["ModelName"] for m in rig.sagemaker.list_models()["Models"]}


def test_create_transform_job_holds_its_environment_to_16_entries(make_rig: RigFactory) -> None:
    # botocore's sagemaker model: CreateTransformJobRequest.Environment is a TransformEnvironmentMap, "max": 16.
    rig = _prepared(make_rig)
    with pytest.raises(ClientError) as refused:
        _create(rig, Environment={f"V{i}": "x" for i in range(17)})
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "Environment: at most 16 entries, got 17" in refused.value.response["Error"]["Message"]
    _create(rig, Environment={f"V{i}": "x" for i in range(16)})


def test_the_accounts_transform_quota_refuses_instances_beyond_it_until_jobs_end(make_rig: RigFactory) -> None:
    rig = _prepared(make_rig)  # 4 objects x 3000 lines at 10 records/s: 2 instances take 300 s + 600 s
    rig.standin.transforms.instance_quota["ml.c5.2xlarge"] = 3
    _create(rig, "s0", instances=2)
    with pytest.raises(ClientError) as refused:
        _create(rig, "s1", instances=2)
    assert refused.value.response["Error"] == {
        "Code": "ResourceLimitExceeded",
        "Message": "The account-level service limit 'ml.c5.2xlarge for transform job usage' is 3 Instances, "
        "with current utilization of 2 Instances and a request delta of 2 Instances. "
        "Please contact AWS support to request an increase for this limit.",
    }
    assert "s1" not in rig.standin.transforms.jobs
    _create(rig, "s1", instances=1)  # 3 of 3
    _create(rig, "other-type", TransformResources={"InstanceType": "ml.m5.xlarge", "InstanceCount": 2})
    rig.clock.at(300 + 600)  # s0 completes: its instances are free again
    assert _status(rig, "s0")["TransformJobStatus"] == "Completed"
    _create(rig, "s2", instances=2)
