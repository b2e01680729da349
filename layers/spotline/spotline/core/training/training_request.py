"""From a JobSpec to the exact AWS Batch SubmitServiceJob request, with the SageMaker
CreateTrainingJob request as its payload (pure). `spotline.aws.training.request_check` validates both
against botocore's own API models before anything is sent.

The stack's job queue always uses quota management (template.yaml, TeamQuotaSharePolicy), so
every request names the team's quota share (`quotaShareName`) and no `shareIdentifier`: Batch
requires the one on a quota management queue and accepts the other only on a fair-share queue."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from spotline.core.common.naming import short_hash, slug
from spotline.core.regions.regions import region_of_arn
from spotline.core.spec.model import CHECKPOINT_LOCAL_PATH, InputChannel, InstanceOption, JobSpec
from spotline.core.teams.quota_shares import quota_share_name
from spotline.core.training.launchers import (
    LAUNCHER_ENV,
    PROCESSES_PER_HOST_ENV,
    launcher_environment,
    launcher_hyperparameters,
)

Capacity = Literal["spot", "on-demand", "training-plan"]
SUFFIXES: dict[str, str] = {"spot": "spot", "on-demand": "od", "training-plan": "tp"}
"""Each capacity tier's suffix in the names of its attempts (`-a2-od`)."""
TRAINING_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
BATCH_JOB_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
CHECKPOINT_INTERVAL_ENV = "SPOTLINE_CHECKPOINT_INTERVAL_MINUTES"
FIRST_CHECKPOINT_ENV = "SPOTLINE_FIRST_CHECKPOINT_MINUTES"
SPOTLINE_ENVIRONMENT = (CHECKPOINT_INTERVAL_ENV, FIRST_CHECKPOINT_ENV, LAUNCHER_ENV, PROCESSES_PER_HOST_ENV)
"""Every variable Spotline may add to a job's Environment (the manifest's budget is 100 less these)."""
"""A spot attempt's first save, when it must come before the interval (`Attempt.first_checkpoint_minutes`)."""
TAG_PREFIX = "spotline:"
# How SageMaker's framework containers (the sagemaker-training-toolkit in every PyTorch,
# TensorFlow, Hugging Face... image) receive training code: the source archive in S3 and the
# script in it. The SDK's own HyperparameterTuner sets them the same way
# (sagemaker/train/tuner.py, "the legacy framework container path").
CODE_DIRECTORY_HYPERPARAMETER = "sagemaker_submit_directory"
CODE_PROGRAM_HYPERPARAMETER = "sagemaker_program"

# Batch re-runs a service job only for SageMaker internal errors; everything else is Spotline's
# decision (spot resubmission, on-demand fallback) or final (algorithm and client errors).
RETRY_STRATEGY: dict[str, Any] = {
    "attempts": 3,
    "evaluateOnExit": [
        {"action": "RETRY", "onStatusReason": "Received status from SageMaker: InternalServerError*"},
        {"action": "EXIT", "onStatusReason": "*"},
    ],
}


class TrainingSettingsInvalid(ValueError):
    """The stack's network or encryption settings cannot make a valid request (e.g. subnets
    without security groups)."""


@dataclass(frozen=True, slots=True)
class TrainingSettings:
    """The stack's network and encryption settings, the same for every training job (template
    parameters through SubmitTrainingJob's environment). The defaults add nothing to the request."""

    subnet_ids: tuple[str, ...] = ()
    security_group_ids: tuple[str, ...] = ()
    network_isolation: bool = False
    inter_container_traffic_encryption: bool = False  # only matters with instanceCount > 1
    volume_kms_key_id: str | None = None
    output_kms_key_id: str | None = None

    def __post_init__(self) -> None:
        if bool(self.subnet_ids) != bool(self.security_group_ids):
            raise TrainingSettingsInvalid(
                "VpcConfig needs both subnet ids and security group ids, or neither "
                f"(subnets: {list(self.subnet_ids)}, security groups: {list(self.security_group_ids)})"
            )


DEFAULT_SETTINGS = TrainingSettings()

# Instance families with local NVMe instance storage. SageMaker trains on that storage instead of
# an EBS volume, encrypts it with the instance's hardware module, and rejects a VolumeKmsKeyId
# for these types (CreateTrainingJob, ResourceConfig.VolumeKmsKeyId; the list is the EC2 user
# guide's "Instance store volumes"; g7e and the p6 families from the hardware source of the price
# table, instances.vantage.sh 2026-01-21): the key is left out for them rather than failing the job.
INSTANCE_STORAGE_FAMILIES = frozenset(
    [
        "c5d",
        "m5d",
        "r5d",
        "g4dn",
        "g4ad",
        "g5",
        "g6",
        "g6e",
        "g7e",
        "p3dn",
        "p4d",
        "p4de",
        "p5",
        "p5e",
        "p5en",
        "p6-b200",
        "p6-b300",
        "p6e-gb200",
        "trn1",
        "trn1n",
        "trn2",
    ]
)


def has_instance_storage(instance_type: str) -> bool:
    """`ml.g5.2xlarge` -> True (family g5 has local NVMe storage)."""
    parts = instance_type.split(".")
    return len(parts) == 3 and parts[1] in INSTANCE_STORAGE_FAMILIES


@dataclass(frozen=True, slots=True)
class Attempt:
    """Which submission this is: the n-th of the execution, on spot, on-demand or a training plan."""

    execution_arn: str
    number: int
    capacity: Capacity
    priority: int | None = None
    """schedulingPriority when Spotline raised it (a deadline at risk in a crowded queue, within the
    team's maxPriority: `spotline.core.capacity.queue`); None: the manifest's priority."""
    instance_type: str | None = None
    """A spot attempt's instance type (None: the primary). Spot takes one type per job; an
    on-demand attempt of a job with alternatives lists them all (InstancePreferences)."""
    training_plan_arn: str | None = None
    """The training plan a `training-plan` attempt runs on (its reserved capacity, of `instance_type`)."""
    max_pending_seconds: int | None = None
    """StoppingCondition.MaxPendingTimeInSeconds: how long SageMaker may look for capacity
    (on-demand fallback: from the deadline's slack; `pending_limit`)."""
    first_checkpoint_minutes: int | None = None
    """A spot attempt's first checkpoint, minutes after each start, when the interval would come too
    late to measure the work before the deadline policy's margin switches
    (`spotline.core.capacity.policy.first_checkpoint_minutes`); None: the interval."""


BATCH_NAME_PREFIX = "AWSBatch"
BATCH_ATTEMPT_ID_LENGTH = 32
MAX_TRAINING_JOB_NAME = 63
MAX_PAYLOAD_NAME = MAX_TRAINING_JOB_NAME - len(BATCH_NAME_PREFIX) - BATCH_ATTEMPT_ID_LENGTH  # 23
"""Batch names each attempt's training job `AWSBatch<payload TrainingJobName><32-hex attempt id>`
(the Batch user guide's examples) and SageMaker allows 63 characters; whether Batch truncates a
longer name is not documented, so the payload's name is kept to what always fits."""


def training_job_name(spec: JobSpec, attempt: Attempt) -> str:
    """The payload's TrainingJobName, `<job>-a<n>-<spot|od>` in at most 23 characters. The
    training job's real name is Batch's (DescribeServiceJob's attempts); the execution and attempt
    are on its tags, and Batch's attempt id keeps the real name unique."""
    suffix = f"-a{attempt.number}-{SUFFIXES[attempt.capacity]}"
    return f"{slug(spec.name, MAX_PAYLOAD_NAME - len(suffix)) or 'job'}{suffix}"


def client_token(attempt: Attempt) -> str:
    """Same execution + attempt + capacity -> same token: Batch rejects a retried submission
    instead of starting a second job (`spotline.aws.training.submission` then finds the first)."""
    return short_hash(attempt.execution_arn, str(attempt.number), attempt.capacity, length=40)


def _tags(spec: JobSpec, attempt: Attempt) -> dict[str, str]:
    execution_name = attempt.execution_arn.rsplit(":", 1)[-1]
    return {
        **spec.labels,
        f"{TAG_PREFIX}team": spec.team,
        f"{TAG_PREFIX}job": spec.name,
        f"{TAG_PREFIX}execution": execution_name,
        f"{TAG_PREFIX}attempt": str(attempt.number),
        f"{TAG_PREFIX}capacity": attempt.capacity,
        # The region of the run's execution: a peer region's reconciler asks there whether it runs.
        f"{TAG_PREFIX}home": region_of_arn(attempt.execution_arn),
    }


def create_training_job_request(
    spec: JobSpec, attempt: Attempt, settings: TrainingSettings = DEFAULT_SETTINGS
) -> dict[str, Any]:
    spot = attempt.capacity == "spot"
    stopping: dict[str, int] = {"MaxRuntimeInSeconds": spec.max_runtime_seconds}
    if spot:
        stopping["MaxWaitTimeInSeconds"] = spec.max_wait_seconds or spec.max_runtime_seconds
    environment = dict(spec.environment)
    hyperparameters = dict(spec.hyperparameters)
    if spec.code_s3_uri and spec.code_entry_point:
        hyperparameters[CODE_PROGRAM_HYPERPARAMETER] = spec.code_entry_point
        hyperparameters[CODE_DIRECTORY_HYPERPARAMETER] = spec.code_s3_uri
    algorithm: dict[str, Any] = {"TrainingImage": spec.image, "TrainingInputMode": "File"}
    if spec.metrics:
        algorithm["MetricDefinitions"] = [{"Name": m.name, "Regex": m.regex} for m in spec.metrics]
    resources: dict[str, Any] = {**instance_resources(spec, attempt), "VolumeSizeInGB": spec.volume_size_gb}
    if attempt.max_pending_seconds is not None:
        stopping["MaxPendingTimeInSeconds"] = attempt.max_pending_seconds
    if spec.keep_alive_seconds and not spot:  # SageMaker keeps no warm pools on spot
        resources["KeepAlivePeriodInSeconds"] = spec.keep_alive_seconds
    if spec.checkpoint_s3_uri:
        environment[CHECKPOINT_INTERVAL_ENV] = str(spec.checkpoint_interval_minutes)
        if spot and attempt.first_checkpoint_minutes is not None:
            environment[FIRST_CHECKPOINT_ENV] = str(attempt.first_checkpoint_minutes)
    hyperparameters.update(launcher_hyperparameters(spec, resources.get("InstanceType")))
    environment.update(launcher_environment(spec))
    request: dict[str, Any] = {
        "TrainingJobName": training_job_name(spec, attempt),
        "AlgorithmSpecification": algorithm,
        "RoleArn": spec.role_arn,
        "InputDataConfig": [_channel(channel) for channel in spec.inputs],
        "OutputDataConfig": {"S3OutputPath": spec.output_s3_uri},
        "ResourceConfig": resources,
        "StoppingCondition": stopping,
        "EnableManagedSpotTraining": spot,
        "HyperParameters": hyperparameters,
        "Environment": environment,
        "Tags": [{"Key": k, "Value": v} for k, v in _tags(spec, attempt).items()],
    }
    if "InstancePreferences" in resources:
        # "InstancePreferences is mutually exclusive with ... EnableManagedSpotTraining" (botocore's
        # sagemaker model, ResourceConfig): whether an explicit false counts as given is not
        # documented, so the key is left out (absent: not spot).
        del request["EnableManagedSpotTraining"]
    if spec.checkpoint_s3_uri:
        request["CheckpointConfig"] = {"S3Uri": spec.checkpoint_s3_uri, "LocalPath": CHECKPOINT_LOCAL_PATH}
    if spec.checks_infrastructure(max(o.instance_count for o in _options(spec, attempt))):
        # "A SageMaker-provided health check tests the health of instance hardware and cluster
        # network connectivity" (InfraCheckConfig): on by default where there is a cluster.
        request["InfraCheckConfig"] = {"EnableInfraCheck": True}
    _apply_settings(request, spec, settings)
    return request


def instance_resources(spec: JobSpec, attempt: Attempt) -> dict[str, Any]:
    """ResourceConfig's instances. A spot attempt runs on one type: "InstancePreferences is mutually
    exclusive with ... EnableManagedSpotTraining" (CreateTrainingJob, ResourceConfig). An on-demand
    attempt of a job with alternatives lists every type, the primary first, each with its count
    (counts "per preference": set on every entry and not in ResourceConfig), and SageMaker "launches
    the training job on the first instance type in the list that has available capacity"."""
    options = _options(spec, attempt)
    if len(options) > 1:
        preferences = [{"InstanceType": o.instance_type, "InstanceCount": o.instance_count} for o in options]
        return {"InstancePreferences": preferences}
    (option,) = options
    resources = {"InstanceType": option.instance_type, "InstanceCount": option.instance_count}
    if attempt.capacity == "training-plan" and attempt.training_plan_arn:
        resources["TrainingPlanArn"] = attempt.training_plan_arn  # "The plan's instance type must match"
    return resources


def _options(spec: JobSpec, attempt: Attempt) -> tuple[InstanceOption, ...]:
    """The options an attempt's request lists (every one for an on-demand attempt with alternatives)."""
    if attempt.capacity == "on-demand" and spec.alternatives:
        return spec.instance_options
    return (spec.option(attempt.instance_type),)


def requested_types(request: dict[str, Any]) -> list[str]:
    """The instance types a CreateTrainingJob request may run on."""
    resources = request.get("ResourceConfig") or {}
    if "InstancePreferences" in resources:
        return [str(p["InstanceType"]) for p in resources["InstancePreferences"]]
    return [str(resources["InstanceType"])] if resources.get("InstanceType") else []


MIN_PENDING_SECONDS = 1800
MAX_PENDING_SECONDS = 28 * 24 * 3600
"""StoppingCondition.MaxPendingTimeInSeconds' valid range (1,800 s to 28 days)."""


def pending_limit(seconds: float) -> int:
    """`seconds` within MaxPendingTimeInSeconds' range."""
    return int(min(MAX_PENDING_SECONDS, max(MIN_PENDING_SECONDS, seconds)))


def _apply_settings(request: dict[str, Any], spec: JobSpec, settings: TrainingSettings) -> None:
    if settings.subnet_ids:
        request["VpcConfig"] = {
            "SecurityGroupIds": list(settings.security_group_ids),
            "Subnets": list(settings.subnet_ids),
        }
    if settings.network_isolation:
        request["EnableNetworkIsolation"] = True
    if settings.inter_container_traffic_encryption:
        request["EnableInterContainerTrafficEncryption"] = True
    if settings.volume_kms_key_id and not any(has_instance_storage(t) for t in requested_types(request)):
        request["ResourceConfig"]["VolumeKmsKeyId"] = settings.volume_kms_key_id
    if settings.output_kms_key_id:
        request["OutputDataConfig"]["KmsKeyId"] = settings.output_kms_key_id


def service_job_request(
    spec: JobSpec,
    attempt: Attempt,
    job_queue: str,
    settings: TrainingSettings = DEFAULT_SETTINGS,
    quota_share: str | None = None,
) -> dict[str, Any]:
    """The SubmitServiceJob request with the CreateTrainingJob request as its payload (unvalidated:
    `spotline.aws.training.request_check.submit_service_job_request` checks it against botocore's models).
    `quota_share`: the share the team counts in (its registry entry's quotaShare; default its own)."""
    training = create_training_job_request(spec, attempt, settings)
    execution_name = attempt.execution_arn.rsplit(":", 1)[-1]
    return {
        "jobName": f"{execution_name}-a{attempt.number}-{SUFFIXES[attempt.capacity]}"[:128],
        "jobQueue": job_queue,
        "serviceJobType": "SAGEMAKER_TRAINING",
        "serviceRequestPayload": json.dumps(training, separators=(",", ":")),
        "retryStrategy": RETRY_STRATEGY,
        "schedulingPriority": spec.priority if attempt.priority is None else attempt.priority,
        "quotaShareName": quota_share_name(quota_share or spec.team),
        "clientToken": client_token(attempt),
        "tags": _tags(spec, attempt),
    }


FILE_SYSTEM_TYPES = {"fsx-lustre": "FSxLustre", "efs": "EFS"}
"""The manifest's fileSystem.type -> SageMaker's FileSystemType."""


def _channel(channel: InputChannel) -> dict[str, Any]:
    """A channel of InputDataConfig: an S3 prefix, or a file system SageMaker mounts (File mode:
    FastFile and Pipe read from S3 only)."""
    if channel.on_file_system:
        return {
            "ChannelName": channel.name,
            "DataSource": {
                "FileSystemDataSource": {
                    "FileSystemId": channel.file_system_id,
                    "FileSystemType": FILE_SYSTEM_TYPES[str(channel.file_system_type)],
                    "DirectoryPath": channel.file_system_path,
                    "FileSystemAccessMode": channel.file_system_access or "ro",
                }
            },
            "InputMode": "File",
        }
    return {
        "ChannelName": channel.name,
        "DataSource": {
            "S3DataSource": {
                "S3DataType": "S3Prefix",
                "S3Uri": channel.s3_uri,
                "S3DataDistributionType": channel.distribution,
            }
        },
        "InputMode": channel.mode,
    }
