"""File-system input channels (FSx for Lustre, EFS): the manifest names exactly one of s3Uri and
fileSystem, a mounted channel is File mode only, the team's entry lists the file systems it may
mount, the request SageMaker gets passes botocore's validation, and a job that mounts a file
system stays in its region."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from builders import example_with, spec_of
from spotline.aws.training.request_check import submit_service_job_request
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.regions.replicas import place, spec_in
from spotline.core.spec.model import JobSpec
from spotline.core.teams.team_policy import TeamPolicy
from spotline.core.training.training_request import Attempt, TrainingSettings
from spotline_dev.harness.sandbox.account import team_allowance

ROOT = Path(__file__).resolve().parents[4]
NOW = datetime(2026, 11, 29, 8, tzinfo=UTC)
FSX, EFS = "fs-0123456789abcdef0", "fs-89abcdef"
TRAIN_S3 = '- {name: train, s3Uri: "s3://search-ranking-data/clicks/2026-11-28/train/", mode: FastFile}'
EXECUTION = (
    "arn:aws:states:us-east-1:123456789012:execution:spotline-training-lifecycle:search-ranking-ranker-v2-1a2b3c4d"
)


def _manifest(train: str) -> bytes:
    return example_with(TRAIN_S3, train)


def _spec(train: str) -> JobSpec:
    return spec_of(_manifest(train), NOW)


FSX_TRAIN = f"- {{name: train, fileSystem: {{type: fsx-lustre, id: {FSX}, path: /abcdwbmv/clicks/train}}}}"
EFS_TRAIN = f"- {{name: train, fileSystem: {{type: efs, id: {EFS}, path: /clicks/train, access: rw}}}}"


def test_a_channel_names_exactly_one_source_and_a_mounted_one_is_read_in_file_mode() -> None:
    cases = {
        "- {name: train}": "spec.inputs[0]: needs exactly one of s3Uri (an S3 prefix) and fileSystem",
        f"- {{name: train, fileSystem: {{type: efs, id: {EFS}, path: /x}}, mode: FastFile}}": (
            "spec.inputs[0].mode: must be File for a fileSystem channel"
        ),
        f"- {{name: train, fileSystem: {{type: efs, id: {EFS}, path: /x}}, distribution: ShardedByS3Key}}": (
            "spec.inputs[0].distribution: must be FullyReplicated for a fileSystem channel"
        ),
        "- {name: train, fileSystem: {type: efs, id: fs-12, path: /x}}": "spec.inputs[0].fileSystem.id: must be",
        f"- {{name: train, fileSystem: {{type: efs, id: {EFS}, path: data/x}}}}": (
            "spec.inputs[0].fileSystem.path: must be an absolute directory path"
        ),
        f"- {{name: train, fileSystem: {{type: nfs, id: {EFS}, path: /x}}}}": "spec.inputs[0].fileSystem.type",
    }
    for train, expected in cases.items():
        errors = [f"{e.path}: {e.message}" for e in validate_bytes(_manifest(train), now=NOW).errors]
        assert any(error.startswith(expected) for error in errors), (train, errors)


def test_a_mounted_channel_is_rendered_as_a_file_system_data_source_sagemaker_accepts() -> None:
    for train, kind, access in ((FSX_TRAIN, "FSxLustre", "ro"), (EFS_TRAIN, "EFS", "rw")):
        spec = _spec(train)
        assert JobSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec  # stored and read back whole
        settings = TrainingSettings(subnet_ids=("subnet-0a1b2c3d",), security_group_ids=("sg-0a1b2c3d",))
        request = submit_service_job_request(spec, Attempt(EXECUTION, 1, "spot"), "queue", settings)
        payload = json.loads(request["serviceRequestPayload"])
        train_channel, validation = payload["InputDataConfig"]
        assert train_channel == {
            "ChannelName": "train",
            "DataSource": {
                "FileSystemDataSource": {
                    "FileSystemId": spec.inputs[0].file_system_id,
                    "FileSystemType": kind,
                    "DirectoryPath": spec.inputs[0].file_system_path,
                    "FileSystemAccessMode": access,
                }
            },
            "InputMode": "File",
        }
        assert "S3DataSource" in validation["DataSource"]  # the other channel stays on S3
        assert payload["VpcConfig"] == {"Subnets": ["subnet-0a1b2c3d"], "SecurityGroupIds": ["sg-0a1b2c3d"]}


def test_a_team_mounts_only_the_file_systems_its_entry_lists() -> None:
    spec = _spec(FSX_TRAIN)
    allowance = team_allowance(spec)
    assert allowance["fileSystems"] == [FSX]  # what the sandbox grants: exactly what the manifest mounts
    closed = TeamPolicy.from_document(
        {"teams": {spec.team: {k: v for k, v in allowance.items() if k != "fileSystems"}}}
    )
    (error,) = closed.check(spec)
    assert (error.path, error.message) == (
        "spec.inputs[0].fileSystem.id",
        f"{FSX} is not a file system team search-ranking may mount (its team policy lists none)",
    )
    other = TeamPolicy.from_document({"teams": {spec.team: {**allowance, "fileSystems": ["fs-00000000"]}}})
    assert "(allowed: fs-00000000)" in other.check(spec)[0].message
    opened = TeamPolicy.from_document({"teams": {spec.team: {**allowance, "fileSystems": [FSX]}}})
    assert opened.check(spec) == []


def test_a_job_that_mounts_a_file_system_moves_only_where_the_team_names_a_replica_of_it() -> None:
    spec = _spec(EFS_TRAIN)
    replicas = {
        "s3://search-ranking-data/": {"us-west-2": "s3://search-ranking-data-usw2/"},
        "s3://search-ranking-models/": {"us-west-2": "s3://search-ranking-models-usw2/"},
        "s3://search-ranking-checkpoints/": {"us-west-2": "s3://search-ranking-checkpoints-usw2/"},
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/": {"us-west-2": "123456789012.dkr.ecr.us-west-2.amazonaws.com/"},
    }
    placed, problems = place(spec, "us-west-2", "us-east-1", replicas)
    assert placed is None
    assert [(p.path, p.message) for p in problems] == [
        (
            "spec.inputs[0].fileSystem",
            f"file system {EFS} is in us-east-1: a job that mounts it runs in us-west-2 only where the team's "
            f"replicas name a file system there holding efs://{EFS}/clicks/train/",
        )
    ]
    wrong_type = replicas | {f"efs://{EFS}/": {"us-west-2": "fsx://fs-0fedcba9876543210/wxyzmnt/"}}
    _, (problem,) = place(spec, "us-west-2", "us-east-1", wrong_type)
    assert problem.message == (
        "its replica in us-west-2, fsx://fs-0fedcba9876543210/wxyzmnt/clicks/train/, is not a file system of its type"
    )
    copied = replicas | {f"efs://{EFS}/": {"us-west-2": "efs://fs-76543210/"}}
    placed, problems = place(spec, "us-west-2", "us-east-1", copied)
    assert placed is not None and problems == []
    (channel,) = [c for c in spec_in(spec, placed).inputs if c.on_file_system]
    assert (channel.file_system_id, channel.file_system_path) == ("fs-76543210", "/clicks/train")
    home, none = place(spec, "us-east-1", "us-east-1", replicas)
    assert home is not None and none == []
