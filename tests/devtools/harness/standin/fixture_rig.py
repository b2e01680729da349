"""The rig the stand-in's tests drive it through: real boto3 clients on a manual clock.

Every expected time in these tests follows from the default weather: the Batch job is SUBMITTED
for 15 s and RUNNABLE for 15 s, so the SageMaker job is created at +30 s; it then needs 300 s
(spot) or 480 s (on-demand) to reach Training, the last 60 s of which are Downloading.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import botocore.session

from spotline_dev.harness.standin import BatchSageMakerStandIn, InMemoryCheckpointStore, ServiceJobView
from spotline_dev.harness.standin.base.http_answers import shape_problems

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
REGION = "us-east-1"
CHECKPOINT = "s3://spotline-checkpoints/search-ranking/ranker-v2/"
PROJECT_RETRY = {
    "attempts": 3,
    "evaluateOnExit": [
        {"action": "RETRY", "onStatusReason": "Received status from SageMaker: InternalServerError*"},
        {"action": "EXIT", "onStatusReason": "*"},
    ],
}


class ManualClock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def at(self, seconds: float) -> None:
        """Move to T0 + seconds."""
        self.now = T0 + timedelta(seconds=seconds)


@dataclass
class Rig:
    clock: ManualClock
    standin: BatchSageMakerStandIn
    store: InMemoryCheckpointStore
    batch: Any
    sagemaker: Any
    queue: str
    raw_bodies: list[tuple[str, dict[str, Any]]]

    def submit(self, payload: dict[str, Any], name: str = "ranker-v2-a1-spot", **extra: Any) -> str:
        request = {
            "jobName": name,
            "jobQueue": "spotline-training",
            "serviceJobType": "SAGEMAKER_TRAINING",
            "serviceRequestPayload": json.dumps(payload),
            **extra,
        }
        return self.batch.submit_service_job(**request)["jobId"]  # type: ignore[no-any-return]

    def batch_job(self, job_id: str) -> dict[str, Any]:
        return self.batch.describe_service_job(jobId=job_id)  # type: ignore[no-any-return]

    def training(self, name: str) -> dict[str, Any]:
        return self.sagemaker.describe_training_job(TrainingJobName=name)  # type: ignore[no-any-return]

    def training_names(self, job_id: str | None = None) -> list[str]:
        """The names Batch gave the SageMaker jobs of the service job's attempts (DescribeServiceJob),
        oldest first; without `job_id`, of the last job submitted."""
        job = self.batch_job(job_id or self.standin.jobs[-1].job_id)
        return [a["serviceResourceId"]["value"].rsplit("/", 1)[1] for a in job.get("attempts") or []]

    def training_name(self, attempt: int = 1, job_id: str | None = None) -> str:
        return self.training_names(job_id)[attempt - 1]

    def view(self, job_id: str) -> ServiceJobView:
        return next(job for job in self.standin.jobs if job.job_id == job_id)

    def status_at(self, seconds: float, job_id: str) -> tuple[str, str | None]:
        self.clock.at(seconds)
        job = self.batch_job(job_id)
        if not job.get("latestAttempt"):
            return job["status"], None
        name = job["latestAttempt"]["serviceResourceId"]["value"].rsplit("/", 1)[1]
        return job["status"], self.training(name)["SecondaryStatus"]


RigFactory = Callable[..., Rig]
PAYLOAD_NAME = "ranker-v2-a1-spot"  # what Spotline sends (at most 23 characters: Batch prefixes and suffixes it)
BATCH_NAME = re.compile(r"^AWSBatch(?P<payload>.+)(?P<attempt>[0-9a-f]{32})$")


def batch_named(names: list[str], payload: str = PAYLOAD_NAME) -> bool:
    """Whether each is a name Batch gives an attempt, AWSBatch<payload name><32-hex attempt id>,
    one per attempt (the Batch user guide's examples), within SageMaker's 63 characters."""
    matches = [BATCH_NAME.match(n) for n in names]
    return all(
        m is not None and m.group("payload") == payload and len(n) <= 63 for m, n in zip(matches, names, strict=True)
    ) and len(set(names)) == len(names)


def training_payload(
    name: str = PAYLOAD_NAME,
    *,
    spot: bool = True,
    max_runtime: int = 86_400,
    max_wait: int | None = 172_800,
    checkpoint: str | None = CHECKPOINT,
    interval_minutes: int | None = None,
) -> dict[str, Any]:
    """A CreateTrainingJob request shaped like the one Spotline renders."""
    stopping: dict[str, int] = {"MaxRuntimeInSeconds": max_runtime}
    if spot and max_wait is not None:
        stopping["MaxWaitTimeInSeconds"] = max_wait
    environment = {"LOG_LEVEL": "info"}
    if interval_minutes is not None:
        environment["SPOTLINE_CHECKPOINT_INTERVAL_MINUTES"] = str(interval_minutes)
    payload: dict[str, Any] = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {
            "TrainingImage": "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:1.4.2",
            "TrainingInputMode": "File",
        },
        "RoleArn": "arn:aws:iam::123456789012:role/spotline-training",
        "InputDataConfig": [
            {
                "ChannelName": "train",
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": "s3://datasets/clicks-2026-11-28/train/",
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
                "InputMode": "File",
            }
        ],
        "OutputDataConfig": {"S3OutputPath": "s3://models/search-ranking/ranker-v2/"},
        "ResourceConfig": {"InstanceType": "ml.g5.2xlarge", "InstanceCount": 1, "VolumeSizeInGB": 100},
        "StoppingCondition": stopping,
        "EnableManagedSpotTraining": spot,
        "HyperParameters": {"epochs": "12", "lr": "0.0003"},
        "Environment": environment,
        "Tags": [{"Key": "spotline:team", "Value": "search-ranking"}],
    }
    if checkpoint:
        payload["CheckpointConfig"] = {"S3Uri": checkpoint, "LocalPath": "/opt/ml/checkpoints"}
    return payload


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def ms(seconds: float) -> int:
    return int(at(seconds).timestamp() * 1000)


def statuses(training: dict[str, Any]) -> list[str]:
    return [transition["Status"] for transition in training["SecondaryStatusTransitions"]]


# --- shapes -------------------------------------------------------------------------------

SHAPE_CHECKED = {
    "SubmitServiceJob": "batch",
    "DescribeServiceJob": "batch",
    "ListServiceJobs": "batch",
    "DescribeJobQueues": "batch",
    "DescribeTrainingJob": "sagemaker",
    "ListTrainingJobs": "sagemaker",
}


def assert_matches_shape(value: Any, shape: Any, path: str = "") -> None:
    """The stand-in's own check (every answer it gives passes it): members, wire types, enums and
    required members of botocore's output shape."""
    problems = shape_problems(value, shape, path)
    assert not problems, problems


def check_shapes(rig: Rig) -> None:
    session = botocore.session.get_session()
    assert rig.raw_bodies
    for operation, body in rig.raw_bodies:
        model = session.get_service_model(SHAPE_CHECKED[operation]).operation_model(operation)
        assert_matches_shape(body, model.output_shape, operation)


def run_to_end(rig: Rig, job_id: str, step: float = 600) -> float:
    seconds = 0.0
    while rig.batch_job(job_id)["status"] not in ("SUCCEEDED", "FAILED"):
        seconds += step
        rig.clock.at(seconds)
    stopped: int = rig.batch_job(job_id)["stoppedAt"]
    return stopped / 1000 - T0.timestamp()
