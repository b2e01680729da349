"""From a SageMaker CreateTrainingJob request (what the SageMaker Python SDK's ModelTrainer sends)
plus Spotline's own fields to a `spotline/v1` manifest (pure: no SDK import).

Every member of the request is either carried into the manifest or refused with the reason;
nothing is dropped silently. What Spotline renders differently on purpose is listed once, in
INTENDED_DIFFERENCES, and `comparable` removes exactly those members from both payloads so the
tests can compare the rest for equality.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from spotline.core.spec.model import CHECKPOINT_LOCAL_PATH
from spotline.core.training.training_request import CODE_DIRECTORY_HYPERPARAMETER, CODE_PROGRAM_HYPERPARAMETER

STACK_SETTING = "set by the stack for every job (template parameters), not by a manifest"

# Members of the request Spotline renders its own way, and why. Keys are paths in the
# CreateTrainingJob request ("*" = every channel).
INTENDED_DIFFERENCES: dict[str, str] = {
    "TrainingJobName": (
        "Spotline names each attempt (<name>-a<n>-spot|od; Batch makes it AWSBatch<that><attempt id>); "
        "the SDK adds a timestamp"
    ),
    "Tags": "the trainer's tags become metadata.labels; Spotline adds its spotline:team, job, execution, attempt "
    "and capacity tags",
    "AlgorithmSpecification.TrainingInputMode": "Spotline sends File and states every channel's InputMode; "
    "each channel's effective mode (its own, else the job's) is compared",
    "OutputDataConfig.CompressionType": "the SDK states GZIP, SageMaker's default, which Spotline leaves implied",
    "Environment.SPOTLINE_CHECKPOINT_INTERVAL_MINUTES": "Spotline tells the checkpoint helper its interval",
    "InfraCheckConfig": "Spotline asks SageMaker's health check for every attempt of more than one instance "
    "(resources.infraCheck, default on there), where a trainer asks for it only when told to",
    "CheckpointConfig.LocalPath": "always /opt/ml/checkpoints, where Spotline's checkpoint helper looks (a trainer's "
    "/opt/ml/checkpoints/ is the same folder; any other path is refused)",
}


# What SageMaker assumes for a member left out; Spotline always states these, the SDK may not.
STATED_DEFAULTS: dict[str, Any] = {"EnableManagedSpotTraining": False, "HyperParameters": {}, "Environment": {}}


class TrainerNotConvertible(ValueError):
    """The request holds members a manifest cannot carry; `problems` says each one and why."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True, slots=True)
class SpotlineFields:
    """What a manifest needs that a trainer does not know."""

    team: str
    name: str
    strategy: str | None = None  # None: spot-first for a spot trainer, on-demand otherwise
    owner: str | None = None
    deadline: str | None = None
    expected_duration: str | None = None
    priority: int | None = None
    depends_on: tuple[str, ...] = ()
    checkpoint_interval_minutes: int | None = None
    labels: dict[str, str] = field(default_factory=dict)


def manifest_from_request(request: dict[str, Any], fields: SpotlineFields) -> dict[str, Any]:
    """The manifest for `request`; raises TrainerNotConvertible naming every member it cannot carry.
    The result is not validated here: `spotline.core.manifest.manifest.validate_document` does that."""
    reader = _Reader(copy.deepcopy(request))
    spec: dict[str, Any] = {}
    algorithm = reader.take("AlgorithmSpecification", {})
    spec["image"] = algorithm.pop("TrainingImage", None)
    if spec["image"] is None:
        reader.refuse("AlgorithmSpecification.TrainingImage", "is required: Spotline runs your own image")
    job_mode = algorithm.pop("TrainingInputMode", "File")
    metrics = algorithm.pop("MetricDefinitions", None)
    reader.rest("AlgorithmSpecification", algorithm)
    spec["roleArn"] = reader.take("RoleArn")
    hyperparameters = dict(reader.take("HyperParameters", {}))
    code = _code(hyperparameters, reader)
    if hyperparameters:
        spec["hyperparameters"] = hyperparameters
    if code:
        spec["code"] = code
    environment = reader.take("Environment", {})
    if environment:
        spec["environment"] = environment
    spec["resources"] = _resources(reader.take("ResourceConfig", {}), reader)
    infra_check = dict(reader.take("InfraCheckConfig", {}))
    if "EnableInfraCheck" in infra_check:
        spec["resources"]["infraCheck"] = bool(infra_check.pop("EnableInfraCheck"))
    reader.rest("InfraCheckConfig", infra_check)
    spec["inputs"] = [
        _channel(index, channel, job_mode, reader) for index, channel in enumerate(reader.take("InputDataConfig", []))
    ]
    spec["output"] = _output(reader.take("OutputDataConfig", {}), reader)
    checkpoint = _checkpoint(reader.take("CheckpointConfig", None), fields, reader)
    if checkpoint:
        spec["checkpoint"] = checkpoint
    if metrics:
        spec["metrics"] = [{"name": m.pop("Name", None), "regex": m.pop("Regex", None)} for m in metrics]
    spot = bool(reader.take("EnableManagedSpotTraining", False))
    spec["capacity"] = _capacity(reader.take("StoppingCondition", {}), spot, fields, reader)
    if fields.priority is not None:
        spec["priority"] = fields.priority
    if fields.depends_on:
        spec["dependsOn"] = [{"dataset": name} for name in fields.depends_on]
    for setting in ("EnableNetworkIsolation", "EnableInterContainerTrafficEncryption"):
        if reader.take(setting, False):
            reader.refuse(setting, STACK_SETTING)
    if reader.take("VpcConfig", None):
        reader.refuse("VpcConfig", STACK_SETTING)
    reader.take("TrainingJobName", None)
    labels = {**{t["Key"]: t["Value"] for t in reader.take("Tags", []) or []}, **fields.labels}
    reader.rest("", reader.request)
    if reader.problems:
        raise TrainerNotConvertible(reader.problems)
    metadata: dict[str, Any] = {"team": fields.team, "name": fields.name}
    if fields.owner:
        metadata["owner"] = fields.owner
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "spotline/v1", "kind": "TrainingJob", "metadata": metadata, "spec": spec}


class _Reader:
    """Takes members out of the request; what is left at the end could not be carried."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.problems: list[str] = []

    def take(self, key: str, default: Any = None) -> Any:
        value = self.request.pop(key, default)
        return default if value is None else value

    def refuse(self, path: str, why: str) -> None:
        self.problems.append(f"{path}: {why}")

    def rest(self, path: str, members: dict[str, Any]) -> None:
        for key in sorted(members):
            if members[key] is not None:
                self.refuse(f"{path}.{key}" if path else key, "has no manifest field; Spotline cannot carry it")


def _code(hyperparameters: dict[str, str], reader: _Reader) -> dict[str, str] | None:
    """The framework containers' code hyperparameters become spec.code; other sagemaker_* names
    are reserved by the manifest."""
    program = hyperparameters.pop(CODE_PROGRAM_HYPERPARAMETER, None)
    directory = hyperparameters.pop(CODE_DIRECTORY_HYPERPARAMETER, None)
    for name in sorted(hyperparameters):
        if name.startswith("sagemaker_"):
            reader.refuse(
                f"HyperParameters.{name}", "sagemaker_* hyperparameters are the framework containers' own settings"
            )
            del hyperparameters[name]
    if program is None and directory is None:
        return None
    if program is None or directory is None or not directory.startswith("s3://"):
        reader.refuse(
            "HyperParameters",
            f"{CODE_PROGRAM_HYPERPARAMETER} and {CODE_DIRECTORY_HYPERPARAMETER} (an s3:// source archive) go together",
        )
        return None
    return {"s3Uri": directory, "entryPoint": program}


def _resources(config: dict[str, Any], reader: _Reader) -> dict[str, Any]:
    resources: dict[str, Any] = {"instanceType": config.pop("InstanceType", None)}
    if resources["instanceType"] is None:
        reader.refuse("ResourceConfig.InstanceType", "is required (instance groups and preferences are not supported)")
    resources["instanceCount"] = config.pop("InstanceCount", 1)
    if "VolumeSizeInGB" in config:
        resources["volumeSizeGB"] = config.pop("VolumeSizeInGB")
    keep_alive = config.pop("KeepAlivePeriodInSeconds", None)
    if keep_alive:
        resources["keepAlive"] = _duration(keep_alive)
    if config.pop("VolumeKmsKeyId", None):
        reader.refuse("ResourceConfig.VolumeKmsKeyId", STACK_SETTING)
    reader.rest("ResourceConfig", config)
    return resources


def _channel(index: int, channel: dict[str, Any], job_mode: str, reader: _Reader) -> dict[str, Any]:
    path = f"InputDataConfig[{index}]"
    name = channel.pop("ChannelName", None)
    source = channel.pop("DataSource", {}) or {}
    s3 = source.pop("S3DataSource", None) or {}
    reader.rest(f"{path}.DataSource", source)
    data_type = s3.pop("S3DataType", "S3Prefix")
    if data_type != "S3Prefix":
        reader.refuse(f"{path}.DataSource.S3DataSource.S3DataType", f"{data_type}: Spotline reads S3 prefixes only")
    result: dict[str, Any] = {"name": name, "s3Uri": s3.pop("S3Uri", None)}
    if result["s3Uri"] is None:
        reader.refuse(f"{path}.DataSource", "needs an S3DataSource with an S3Uri")
    mode = channel.pop("InputMode", None) or job_mode
    if mode != "File":
        result["mode"] = mode
    distribution = s3.pop("S3DataDistributionType", "FullyReplicated")
    if distribution != "FullyReplicated":
        result["distribution"] = distribution
    if channel.get("CompressionType") in (None, "None"):
        channel.pop("CompressionType", None)
    reader.rest(f"{path}.DataSource.S3DataSource", s3)
    reader.rest(path, channel)
    return result


def _output(config: dict[str, Any], reader: _Reader) -> dict[str, Any]:
    output = {"s3Uri": config.pop("S3OutputPath", None)}
    if output["s3Uri"] is None:
        reader.refuse("OutputDataConfig.S3OutputPath", "is required: give the trainer an explicit output path")
    if config.get("CompressionType") == "GZIP":
        config.pop("CompressionType")
    if config.pop("KmsKeyId", None):
        reader.refuse("OutputDataConfig.KmsKeyId", STACK_SETTING)
    reader.rest("OutputDataConfig", config)
    return output


def _checkpoint(config: dict[str, Any] | None, fields: SpotlineFields, reader: _Reader) -> dict[str, Any] | None:
    if not config:
        if fields.checkpoint_interval_minutes is not None:
            reader.refuse("CheckpointConfig", "--checkpoint-interval needs the trainer's CheckpointConfig(s3_uri=...)")
        return None
    checkpoint: dict[str, Any] = {"s3Uri": config.pop("S3Uri", None)}
    local = config.pop("LocalPath", None)
    if local is not None and local.rstrip("/") != CHECKPOINT_LOCAL_PATH:
        reader.refuse("CheckpointConfig.LocalPath", f"{local}: Spotline's checkpoints live in {CHECKPOINT_LOCAL_PATH}")
    if fields.checkpoint_interval_minutes is not None:
        checkpoint["intervalMinutes"] = fields.checkpoint_interval_minutes
    reader.rest("CheckpointConfig", config)
    return checkpoint


def _capacity(stopping: dict[str, Any], spot: bool, fields: SpotlineFields, reader: _Reader) -> dict[str, Any]:
    capacity: dict[str, Any] = {"strategy": fields.strategy or ("spot-first" if spot else "on-demand")}
    runtime = stopping.pop("MaxRuntimeInSeconds", None)
    if runtime is not None:
        capacity["maxRuntime"] = _duration(runtime)
    wait = stopping.pop("MaxWaitTimeInSeconds", None)
    if wait is not None and capacity["strategy"] != "on-demand":
        capacity["maxWait"] = _duration(wait)
    if fields.expected_duration:
        capacity["expectedDuration"] = fields.expected_duration
    if fields.deadline:
        capacity["deadline"] = fields.deadline
    reader.rest("StoppingCondition", stopping)
    return capacity


def _duration(seconds: int) -> str:
    """The manifest's compact form in the largest unit that is exact: 86400 -> 24h, 5400 -> 90m."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def comparable(payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` without the members INTENDED_DIFFERENCES names, with STATED_DEFAULTS filled in
    and each channel's effective InputMode, to compare Spotline's request with the SDK's."""
    result = {**copy.deepcopy(STATED_DEFAULTS), **copy.deepcopy(payload)}
    job_mode = result.get("AlgorithmSpecification", {}).get("TrainingInputMode", "File")
    for channel in result.get("InputDataConfig", []):
        channel["InputMode"] = channel.get("InputMode") or job_mode  # what SageMaker will read with
    for path in INTENDED_DIFFERENCES:
        _drop(result, path.split("."))
    return result


def _drop(node: Any, keys: list[str]) -> None:
    head, rest = keys[0], keys[1:]
    if head == "*":
        for item in node if isinstance(node, list) else []:
            _drop(item, rest)
    elif isinstance(node, dict) and head in node:
        if rest:
            _drop(node[head], rest)
        else:
            del node[head]
