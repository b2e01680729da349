"""The Batch/SageMaker stand-in, driven through real boto3 clients on a manual clock.

Every expected time below follows from the default weather: the Batch job is SUBMITTED for
15 s and RUNNABLE for 15 s, so the SageMaker job is created at +30 s; it then needs 300 s
(spot) or 480 s (on-demand) to reach Training, the last 60 s of which are Downloading.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws

from spotline_dev.standin import (
    BatchSageMakerStandIn,
    InMemoryCheckpointStore,
    ServiceJobView,
    SpotWeather,
    TrainingBehaviour,
)

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
_LOADER = botocore.loaders.create_loader()


@pytest.fixture
def make_rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[RigFactory]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", sleeps.append)  # botocore's retry back-off, not wall time

    def factory(weather: SpotWeather | None = None, behaviour: TrainingBehaviour | None = None, **queue: Any) -> Rig:
        clock, store = ManualClock(), InMemoryCheckpointStore()
        chosen = behaviour or TrainingBehaviour(duration=3600)
        standin = BatchSageMakerStandIn(clock, weather or SpotWeather(), lambda _request: chosen, store)
        core = botocore.session.get_session()
        core.register_component("data_loader", _LOADER)  # parse the (large) SageMaker model once
        boto3.setup_default_session(botocore_session=core)
        session = boto3.DEFAULT_SESSION
        assert session is not None
        standin.install(session)
        raw: list[tuple[str, dict[str, Any]]] = []

        def capture(response_dict: dict[str, Any], operation_model: Any, **_: Any) -> None:
            if operation_model.name in _SHAPE_CHECKED and response_dict["status_code"] == 200:
                raw.append((operation_model.name, json.loads(response_dict["body"] or b"{}")))

        session.events.register("before-parse", capture)
        queue_arn = standin.register_queue("spotline-training", **queue)
        batch, sagemaker = (boto3.client(service, region_name=REGION) for service in ("batch", "sagemaker"))
        return Rig(clock, standin, store, batch, sagemaker, queue_arn, raw)

    with mock_aws():
        yield factory


def training_payload(
    name: str = "ranker-v2-1a2b3c4d-a1-spot",
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

_SHAPE_CHECKED = {
    "SubmitServiceJob": "batch",
    "DescribeServiceJob": "batch",
    "ListServiceJobs": "batch",
    "DescribeJobQueues": "batch",
    "DescribeTrainingJob": "sagemaker",
}


def assert_matches_shape(value: Any, shape: Any, path: str = "") -> None:
    """Every key the stand-in sends exists in botocore's output shape, with the wire type
    botocore expects (botocore's parser silently drops unknown keys, so check the raw body)."""
    kind = shape.type_name
    if kind == "structure":
        assert isinstance(value, dict), path
        for key, item in value.items():
            assert key in shape.members, f"{path}.{key} is not in {shape.name}"
            assert_matches_shape(item, shape.members[key], f"{path}.{key}")
    elif kind == "list":
        assert isinstance(value, list), path
        for index, item in enumerate(value):
            assert_matches_shape(item, shape.member, f"{path}[{index}]")
    elif kind == "map":
        assert isinstance(value, dict), path
        for item in value.values():
            assert_matches_shape(item, shape.value, path)
    elif kind in ("integer", "long"):
        assert isinstance(value, int) and not isinstance(value, bool), path
    elif kind == "timestamp":
        assert isinstance(value, int | float) and not isinstance(value, bool), path
    elif kind == "boolean":
        assert isinstance(value, bool), path
    elif kind in ("double", "float"):
        assert isinstance(value, int | float), path
    else:
        assert isinstance(value, str), path
        if "enum" in shape.metadata:
            assert value in shape.metadata["enum"], f"{path}={value}"


def check_shapes(rig: Rig) -> None:
    session = botocore.session.get_session()
    assert rig.raw_bodies
    for operation, body in rig.raw_bodies:
        model = session.get_service_model(_SHAPE_CHECKED[operation]).operation_model(operation)
        assert_matches_shape(body, model.output_shape, operation)


# --- lifecycles ---------------------------------------------------------------------------


def test_on_demand_job_walks_every_status_to_completed(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload(spot=False), name="ranker-v2-a1-od", retryStrategy=PROJECT_RETRY)

    assert rig.status_at(0, job_id) == ("SUBMITTED", None)
    assert rig.status_at(20, job_id) == ("RUNNABLE", None)
    assert rig.status_at(40, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(460, job_id) == ("STARTING", "Downloading")
    assert rig.status_at(600, job_id) == ("RUNNING", "Training")
    assert rig.status_at(4120, job_id) == ("RUNNING", "Uploading")
    assert rig.status_at(4170, job_id) == ("SUCCEEDED", "Completed")

    job = rig.batch_job(job_id)
    training = rig.training("ranker-v2-1a2b3c4d-a1-spot")
    assert (job["createdAt"], job["scheduledAt"], job["startedAt"], job["stoppedAt"]) == (
        ms(0),
        ms(30),
        ms(450),
        ms(4170),
    )
    assert job["isTerminated"] is False
    assert job["attempts"] == [
        {
            "serviceResourceId": {"name": "TrainingJobArn", "value": training["TrainingJobArn"]},
            "startedAt": ms(30),
            "stoppedAt": ms(4170),
        }
    ]
    assert job["latestAttempt"]["serviceResourceId"]["value"] == training["TrainingJobArn"]
    assert job["retryStrategy"] == PROJECT_RETRY
    assert training["TrainingJobArn"] == (
        "arn:aws:sagemaker:us-east-1:123456789012:training-job/ranker-v2-1a2b3c4d-a1-spot"
    )
    assert training["TrainingJobStatus"] == "Completed"
    assert statuses(training) == ["Starting", "Downloading", "Training", "Uploading", "Completed"]
    assert (training["CreationTime"], training["TrainingStartTime"], training["TrainingEndTime"]) == (
        at(30),
        at(450),
        at(4170),
    )
    assert training["TrainingTimeInSeconds"] == 60 + 3600 + 60
    assert training["BillableTimeInSeconds"] == training["TrainingTimeInSeconds"]
    assert training["EnableManagedSpotTraining"] is False
    assert training["HyperParameters"] == {"epochs": "12", "lr": "0.0003"}
    assert training["ResourceConfig"]["InstanceType"] == "ml.g5.2xlarge"
    assert training["CheckpointConfig"]["S3Uri"] == CHECKPOINT
    assert training["ModelArtifacts"]["S3ModelArtifacts"].endswith("/ranker-v2-1a2b3c4d-a1-spot/output/model.tar.gz")
    assert "Tags" not in training
    # progress.json every 15 minutes of training and once more at the end, stamped with its own time
    assert [p["step"] for _, p in rig.store.writes] == [15, 30, 45, 60]
    assert rig.store.writes[0][1] == {"step": 15, "totalSteps": 60, "updatedAt": "2026-11-29T08:23:30Z"}
    check_shapes(rig)


def test_spot_job_bills_a_fraction_of_its_training_time(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload())

    assert rig.status_at(40, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(331, job_id) == ("RUNNING", "Training")
    assert rig.view(job_id).training_seconds == pytest.approx(61)
    assert rig.view(job_id).billable_seconds == pytest.approx(61 * 0.3)
    assert rig.status_at(330 + 3600 + 60, job_id) == ("SUCCEEDED", "Completed")

    training = rig.training("ranker-v2-1a2b3c4d-a1-spot")
    assert training["TrainingTimeInSeconds"] == 3720
    assert training["BillableTimeInSeconds"] == round(3720 * 0.3)
    assert training["StoppingCondition"] == {"MaxRuntimeInSeconds": 86_400, "MaxWaitTimeInSeconds": 172_800}
    view = rig.view(job_id)
    assert (view.capacity, view.status, view.interruptions, view.lost_work_seconds) == ("spot", "SUCCEEDED", 0, 0)
    check_shapes(rig)


def _run_to_end(rig: Rig, job_id: str, step: float = 600) -> float:
    seconds = 0.0
    while rig.batch_job(job_id)["status"] not in ("SUCCEEDED", "FAILED"):
        seconds += step
        rig.clock.at(seconds)
    stopped: int = rig.batch_job(job_id)["stoppedAt"]
    return stopped / 1000 - T0.timestamp()


def test_interrupted_spot_job_resumes_from_its_last_checkpoint(make_rig: RigFactory) -> None:
    behaviour = TrainingBehaviour(duration=4 * 3600)
    payload = training_payload(interval_minutes=25)
    calm = make_rig(SpotWeather(), behaviour)
    calm_end = _run_to_end(calm, calm.submit(payload))

    rig = make_rig(SpotWeather(interruptions=[2 * 3600]), behaviour)
    job_id = rig.submit(payload)
    # Training starts at +330 s; the 2 h mark of training time comes at +7530 s.
    assert rig.status_at(7529, job_id) == ("RUNNING", "Training")
    assert rig.status_at(7531, job_id) == ("RUNNING", "Interrupted")
    assert rig.status_at(7700, job_id) == ("RUNNING", "Starting")
    assert rig.status_at(7800, job_id) == ("RUNNING", "Downloading")
    assert rig.status_at(7831, job_id) == ("RUNNING", "Training")
    view = rig.view(job_id)
    assert view.interruptions == 1
    assert view.lost_work_seconds == pytest.approx(1200)  # 2 h of work, last checkpoint at 100 minutes
    assert view.lost_work_seconds < 25 * 60
    end = _run_to_end(rig, job_id)

    training = rig.training("ranker-v2-1a2b3c4d-a1-spot")
    assert statuses(training) == [
        "Starting", "Downloading", "Training", "Interrupted", "Starting", "Downloading", "Training",
        "Uploading", "Completed",
    ]  # fmt: skip
    assert end - calm_end == pytest.approx(300 + 1200)  # restart delay + lost work
    assert training["TrainingTimeInSeconds"] == 60 + 7200 + 60 + (4 * 3600 - 6000) + 60
    steps = [p["step"] for _, p in rig.store.writes]
    assert steps[:5] == [25, 50, 75, 100, 125]  # resumed from step 100, then every 25 minutes again
    assert steps[-1] == 240
    check_shapes(rig)


def test_spot_job_waits_out_a_capacity_gap_in_starting(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(capacity_gaps=[(at(0), at(3600))]))
    job_id = rig.submit(training_payload())

    assert rig.status_at(1800, job_id) == ("SCHEDULED", "Starting")
    message = rig.training("ranker-v2-1a2b3c4d-a1-spot")["SecondaryStatusTransitions"][-1]["StatusMessage"]
    assert "capacity" in message
    assert rig.status_at(3600 + 301, job_id) == ("RUNNING", "Training")
    assert rig.status_at(3600 + 300 + 3600 + 60, job_id) == ("SUCCEEDED", "Completed")


def test_capacity_gap_during_training_interrupts_the_job(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(capacity_gaps=[(at(3600), at(7200))]))
    job_id = rig.submit(training_payload())

    assert rig.status_at(3601, job_id) == ("RUNNING", "Interrupted")
    assert rig.status_at(5000, job_id) == ("RUNNING", "Starting")
    waiting = rig.training("ranker-v2-1a2b3c4d-a1-spot")["SecondaryStatusTransitions"][-1]
    assert (waiting["Status"], "capacity" in waiting["StatusMessage"]) == ("Starting", True)
    assert rig.status_at(7200 + 301, job_id) == ("RUNNING", "Training")
    view = rig.view(job_id)
    # 3270 s of work when the gap began, last checkpoint at 2700 s (every 15 minutes)
    assert (view.interruptions, view.lost_work_seconds) == (1, pytest.approx(570))
    assert view.latest is not None and view.latest.interrupted_at == (at(3600),)
    assert rig.status_at(7500 + (3600 - 2700) + 60, job_id) == ("SUCCEEDED", "Completed")


def test_capacity_gap_longer_than_max_wait_stops_the_job(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(capacity_gaps=[(at(0), at(10 * 3600))]))
    job_id = rig.submit(training_payload(max_runtime=3600, max_wait=7200))

    assert rig.status_at(7000, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(7230, job_id) == ("FAILED", "MaxWaitTimeExceeded")
    training = rig.training("ranker-v2-1a2b3c4d-a1-spot")
    assert training["TrainingJobStatus"] == "Stopped"
    assert training["TrainingEndTime"] == at(7230)
    assert training["TrainingTimeInSeconds"] == 0
    assert "TrainingStartTime" not in training
    job = rig.batch_job(job_id)
    assert job["statusReason"] == (
        "Received status from SageMaker: MaxWaitTimeExceeded: "
        "Training job stopped: it exceeded MaxWaitTimeInSeconds (7200 seconds)"
    )
    assert job["attempts"][0]["statusReason"] == job["statusReason"]


def test_max_runtime_exceeded_stops_with_a_final_checkpoint(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=3 * 3600))
    job_id = rig.submit(training_payload(spot=False, max_runtime=3600), name="ranker-v2-a1-od")

    # Billed time starts with Downloading at +450 s, so the hour is up at +4050 s.
    assert rig.status_at(4049, job_id) == ("RUNNING", "Training")
    assert rig.status_at(4050, job_id) == ("FAILED", "MaxRuntimeExceeded")
    training = rig.training("ranker-v2-1a2b3c4d-a1-spot")
    assert (training["TrainingJobStatus"], training["TrainingTimeInSeconds"]) == ("Stopped", 3600)
    assert rig.batch_job(job_id)["statusReason"].startswith("Received status from SageMaker: MaxRuntimeExceeded")
    assert rig.store.files[CHECKPOINT] == {"step": 59, "totalSteps": 180, "updatedAt": "2026-11-29T09:07:30Z"}


def test_algorithm_error_fails_the_batch_job(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=7200, fail_after=1800))
    job_id = rig.submit(training_payload(), retryStrategy=PROJECT_RETRY)

    assert rig.status_at(330 + 1799, job_id) == ("RUNNING", "Training")
    assert rig.status_at(330 + 1800, job_id) == ("FAILED", "Failed")
    training = rig.training("ranker-v2-1a2b3c4d-a1-spot")
    assert training["TrainingJobStatus"] == "Failed"
    assert training["FailureReason"].startswith("AlgorithmError: ")
    job = rig.batch_job(job_id)
    assert job["statusReason"].startswith("Received status from SageMaker: AlgorithmError: ")
    assert len(job["attempts"]) == 1  # EXIT on "*": not retried


def test_retry_when_no_rule_matches_counts_training_across_attempts(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=7200, fail_after=1800))
    retry = {"attempts": 2, "evaluateOnExit": [{"action": "EXIT", "onStatusReason": "*CapacityError*"}]}
    job_id = rig.submit(training_payload(), retryStrategy=retry)

    assert rig.status_at(2140, job_id) == ("RUNNABLE", "Failed")  # latestAttempt: the failed one
    # The second attempt restores the last checkpoint and fails as soon as it trains again:
    # the training code has already used up its 1800 s under this checkpoint prefix.
    assert rig.status_at(2160 + 300, job_id) == ("FAILED", "Failed")
    job = rig.batch_job(job_id)
    assert [a["serviceResourceId"]["value"].rsplit("/", 1)[1] for a in job["attempts"]] == [
        "ranker-v2-1a2b3c4d-a1-spot",
        "ranker-v2-1a2b3c4d-a1-spot-2",
    ]
    assert rig.view(job_id).attempts[1].restored_from_step == 30


def test_internal_server_error_is_retried_by_the_batch_retry_strategy(make_rig: RigFactory) -> None:
    rig = make_rig()
    rig.standin.fail_next_attempt("InternalServerError: We encountered an internal error. Please try again.")
    job_id = rig.submit(training_payload(), retryStrategy=PROJECT_RETRY)

    assert rig.status_at(89, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(91, job_id)[0] == "RUNNABLE"
    assert rig.status_at(121, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(120 + 300 + 3600 + 60, job_id) == ("SUCCEEDED", "Completed")
    job = rig.batch_job(job_id)
    assert len(job["attempts"]) == 2
    assert job["attempts"][0]["statusReason"] == (
        "Received status from SageMaker: InternalServerError: We encountered an internal error. Please try again."
    )
    assert job["latestAttempt"]["serviceResourceId"]["value"].endswith("/ranker-v2-1a2b3c4d-a1-spot-2")
    failed = rig.training("ranker-v2-1a2b3c4d-a1-spot")
    assert (failed["TrainingJobStatus"], failed["FailureReason"][:19]) == ("Failed", "InternalServerError")


def test_capacity_errors_are_retried_without_using_attempts(make_rig: RigFactory) -> None:
    rig = make_rig()
    for _ in range(2):
        rig.standin.fail_next_attempt("CapacityError: Unable to provision requested ML compute capacity.")
    job_id = rig.submit(training_payload(spot=False), retryStrategy={"attempts": 1})

    rig.clock.at(100)
    job = rig.batch_job(job_id)
    assert (job["status"], job["statusReason"]) == ("RUNNABLE", "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")
    assert _run_to_end(rig, job_id, step=60) > 0
    job = rig.batch_job(job_id)
    assert job["status"] == "SUCCEEDED"
    assert len(job["attempts"]) == 3


def test_batch_timeout_stops_the_attempt(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload(), timeoutConfig={"attemptDurationSeconds": 600}, retryStrategy=PROJECT_RETRY)

    assert rig.status_at(630, job_id) == ("RUNNING", "Stopping")
    assert rig.status_at(660, job_id) == ("FAILED", "Stopped")
    job = rig.batch_job(job_id)
    assert (job["statusReason"], len(job["attempts"])) == ("Job attempt duration exceeded timeout", 1)
    assert rig.store.files[CHECKPOINT]["step"] == 5  # SIGTERM after 300 s of training


def test_client_token_makes_submission_idempotent(make_rig: RigFactory) -> None:
    rig = make_rig()
    first = rig.submit(training_payload(), clientToken="execution-1-attempt-1-spot")
    again = rig.submit(training_payload(), clientToken="execution-1-attempt-1-spot")

    assert again == first
    assert len(rig.standin.jobs) == 1
    with pytest.raises(ClientError, match="different parameters"):
        rig.submit(training_payload(max_runtime=3600), clientToken="execution-1-attempt-1-spot")
    rig.submit(training_payload("ranker-v2-1a2b3c4d-a2-spot"), clientToken="execution-1-attempt-2-spot")
    assert len(rig.standin.jobs) == 2


def test_terminate_stops_the_training_job_after_a_final_checkpoint(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=7200))
    job_id = rig.submit(training_payload())
    rig.clock.at(330 + 40 * 60)  # 40 minutes into training: checkpoints at 15 and 30 minutes
    rig.batch.terminate_service_job(jobId=job_id, reason="Deadline at risk: switching to on-demand")

    job = rig.batch_job(job_id)
    assert (job["status"], job["isTerminated"]) == ("RUNNING", True)
    training = rig.training("ranker-v2-1a2b3c4d-a1-spot")
    assert (training["TrainingJobStatus"], training["SecondaryStatus"]) == ("Stopping", "Stopping")
    assert rig.store.files[CHECKPOINT] == {"step": 40, "totalSteps": 120, "updatedAt": "2026-11-29T08:45:30Z"}

    rig.clock.at(330 + 40 * 60 + 30)
    job = rig.batch_job(job_id)
    assert (job["status"], job["statusReason"]) == ("FAILED", "Terminated: Deadline at risk: switching to on-demand")
    training = rig.training("ranker-v2-1a2b3c4d-a1-spot")
    assert (training["TrainingJobStatus"], training["SecondaryStatus"]) == ("Stopped", "Stopped")
    assert training["TrainingTimeInSeconds"] == 60 + 40 * 60
    assert [p["step"] for _, p in rig.store.writes] == [15, 30, 40]
    rig.batch.terminate_service_job(jobId=job_id, reason="again")  # a finished job: nothing happens
    with pytest.raises(ClientError, match="ValidationException"):
        rig.sagemaker.stop_training_job(TrainingJobName="ranker-v2-1a2b3c4d-a1-spot")

    # The resubmission (on-demand, same checkpoint prefix) picks up at step 40 of 120.
    rig.clock.at(3000)
    second = rig.submit(training_payload("ranker-v2-1a2b3c4d-a2-od", spot=False), name="ranker-v2-a2-od")
    assert rig.status_at(3000 + 30 + 480 + 1, second) == ("RUNNING", "Training")
    assert rig.view(second).restored_from_step == 40
    assert rig.status_at(3000 + 30 + 480 + 80 * 60 + 60, second) == ("SUCCEEDED", "Completed")
    assert rig.store.files[CHECKPOINT]["step"] == 120


def test_stop_training_job_directly_fails_the_batch_job(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload())
    rig.clock.at(1000)
    rig.sagemaker.stop_training_job(TrainingJobName="ranker-v2-1a2b3c4d-a1-spot")
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


def test_duplicate_training_job_name_is_refused(make_rig: RigFactory) -> None:
    rig = make_rig()
    rig.submit(training_payload())
    second = rig.submit(training_payload(), name="ranker-v2-a1-spot-again")
    rig.clock.at(30)
    assert rig.batch_job(second)["statusReason"].startswith("Received status from SageMaker: ResourceInUse: ")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"jobQueue": "nope"}, "does not exist"),
        ({"jobName": "has space"}, "Job name"),
        ({"schedulingPriority": 10_000}, "schedulingPriority"),
        ({"retryStrategy": {"attempts": 11}}, "attempts"),
    ],
)
def test_submit_is_validated_like_batch(make_rig: RigFactory, extra: dict[str, Any], expected: str) -> None:
    rig = make_rig()
    with pytest.raises(ClientError, match=expected) as raised:
        rig.submit(training_payload(), **extra)
    assert raised.value.response["Error"]["Code"] == "ClientException"


def test_fair_share_queue_needs_a_share_identifier(make_rig: RigFactory) -> None:
    rig = make_rig(scheduling_policy_arn="arn:aws:batch:us-east-1:123456789012:scheduling-policy/teams")
    with pytest.raises(ClientError, match="shareIdentifier is required"):
        rig.submit(training_payload())
    job_id = rig.submit(training_payload(), shareIdentifier="search-ranking", schedulingPriority=100)
    assert rig.batch_job(job_id)["shareIdentifier"] == "search-ranking"


def test_throttled_calls_are_retried_by_botocore(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload())
    rig.standin.throttle("DescribeServiceJob", times=2)
    retrying = boto3.client("batch", region_name=REGION, config=Config(retries={"mode": "standard", "max_attempts": 5}))

    described = retrying.describe_service_job(jobId=job_id)
    assert described["ResponseMetadata"]["RetryAttempts"] == 2
    assert described["status"] == "SUBMITTED"

    rig.standin.throttle("DescribeTrainingJob", times=5)
    rig.clock.at(40)
    impatient = boto3.client(
        "sagemaker", region_name=REGION, config=Config(retries={"mode": "standard", "max_attempts": 3})
    )
    with pytest.raises(ClientError, match="ThrottlingException") as raised:
        impatient.describe_training_job(TrainingJobName="ranker-v2-1a2b3c4d-a1-spot")
    assert raised.value.response["ResponseMetadata"]["RetryAttempts"] == 3  # max_attempts counts retries


def test_list_service_jobs_filters_by_queue_and_status(make_rig: RigFactory) -> None:
    rig = make_rig()
    rig.standin.register_queue("other-queue")
    running = rig.submit(training_payload("job-a"), name="ranker-a")
    rig.clock.at(600)
    queued = rig.submit(training_payload("job-b"), name="ranker-b")
    elsewhere = rig.submit(training_payload("job-c"), name="ranker-c", jobQueue="other-queue")
    failed = rig.submit(training_payload("job-d"), name="other-d")
    rig.batch.terminate_service_job(jobId=failed, reason="not needed")

    def ids(**query: Any) -> list[str]:
        return [job["jobId"] for job in rig.batch.list_service_jobs(**query)["jobSummaryList"]]

    assert ids(jobQueue="spotline-training") == [running]  # RUNNING unless told otherwise
    assert ids(jobQueue="spotline-training", jobStatus="SUBMITTED") == [queued]
    assert ids(jobQueue=rig.queue, jobStatus="FAILED") == [failed]
    assert ids(jobQueue="other-queue", jobStatus="SUBMITTED") == [elsewhere]
    assert ids(jobQueue="spotline-training", filters=[{"name": "JOB_NAME", "values": ["ranker-*"]}]) == [
        queued,
        running,
    ]

    first = rig.batch.list_service_jobs(
        jobQueue="spotline-training", filters=[{"name": "JOB_NAME", "values": ["*"]}], maxResults=2
    )
    assert len(first["jobSummaryList"]) == 2
    rest = rig.batch.list_service_jobs(
        jobQueue="spotline-training", filters=[{"name": "JOB_NAME", "values": ["*"]}], nextToken=first["nextToken"]
    )
    assert [j["jobId"] for j in rest["jobSummaryList"]] == [running]
    assert "nextToken" not in rest
    summary = next(j for j in first["jobSummaryList"] if j["jobId"] == failed)
    assert (summary["status"], summary["isTerminated"]) == ("FAILED", True)
    pages = rig.batch.get_paginator("list_service_jobs").paginate(
        jobQueue="spotline-training", jobStatus="FAILED", PaginationConfig={"PageSize": 1}
    )
    assert [j["jobId"] for page in pages for j in page["jobSummaryList"]] == [failed]
    check_shapes(rig)


def test_describe_job_queues_answers_for_registered_queues(make_rig: RigFactory) -> None:
    rig = make_rig(state="ENABLED")
    queues = rig.batch.describe_job_queues(jobQueues=["spotline-training"])["jobQueues"]

    assert [(q["jobQueueName"], q["jobQueueArn"], q["jobQueueType"], q["state"], q["status"]) for q in queues] == [
        ("spotline-training", rig.queue, "SAGEMAKER_TRAINING", "ENABLED", "VALID")
    ]
    assert rig.batch.describe_job_queues(jobQueues=["unknown-to-the-stand-in"])["jobQueues"] == []  # moto answers
    disabled = make_rig(state="DISABLED")
    with pytest.raises(ClientError, match="DISABLED"):
        disabled.submit(training_payload())
    check_shapes(rig)


def test_other_sagemaker_and_batch_calls_reach_moto(make_rig: RigFactory) -> None:
    rig = make_rig()
    with pytest.raises(ClientError, match="Could not find training job"):
        rig.training("never-created")
    assert rig.batch.describe_compute_environments()["computeEnvironments"] == []
