"""The normalized, typed training job that every stage after LoadManifest consumes.

`JobSpec.to_dict()` is what travels through the state machine (JSON-safe, durations in
seconds, timestamps in UTC RFC 3339); `JobSpec.from_dict()` reads it back in later Lambdas.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Strategy = Literal["spot-first", "spot-only", "on-demand"]

DEFAULT_STRATEGY: Strategy = "spot-first"
DEFAULT_MAX_RUNTIME_S = 24 * 3600  # SageMaker's own default
DEFAULT_CHECKPOINT_INTERVAL_MIN = 15
DEFAULT_RETRY_ATTEMPTS = 3
DEFAULT_RETRY_BACKOFF_S = 120
DEFAULT_INSTANCE_COUNT = 1
DEFAULT_VOLUME_GB = 50
DEFAULT_PRIORITY = 100
DEFAULT_DEPENDENCY_TIMEOUT_S = 24 * 3600
MAX_DEPENDENCY_TIMEOUT_S = 7 * 24 * 3600
CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"


@dataclass(frozen=True, slots=True)
class InputChannel:
    """An input channel: an S3 prefix, or a directory of a file system SageMaker mounts
    (`file_system_*`; then `s3_uri` is empty)."""

    name: str
    s3_uri: str
    mode: str = "File"
    distribution: str = "FullyReplicated"
    file_system_type: str | None = None  # fsx-lustre | efs
    file_system_id: str | None = None
    file_system_path: str | None = None
    file_system_access: str | None = None  # ro | rw

    @property
    def on_file_system(self) -> bool:
        return self.file_system_id is not None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True, slots=True)
class MetricDefinition:
    """A regex SageMaker matches against the training log; its first group becomes the value of
    the CloudWatch training metric `name`."""

    name: str
    regex: str


@dataclass(frozen=True, slots=True)
class InstanceOption:
    """One instance type a job may run on: its primary (`resources.instanceType`) or an alternative
    (`resources.alternatives[]`), with its count and declared speed relative to the primary."""

    instance_type: str
    instance_count: int
    speed: float = 1.0


@dataclass(frozen=True, slots=True)
class Distribution:
    """`spec.distribution`: how the job starts its ranks, and what its instances need between them."""

    launcher: str  # torchrun | mpi | smddp
    processes_per_host: int | None = None
    efa: bool = False


@dataclass(frozen=True, slots=True)
class JobSpec:
    team: str
    name: str
    image: str
    role_arn: str
    instance_type: str
    inputs: tuple[InputChannel, ...]
    output_s3_uri: str
    strategy: Strategy = DEFAULT_STRATEGY
    instance_count: int = DEFAULT_INSTANCE_COUNT
    volume_size_gb: int = DEFAULT_VOLUME_GB
    checkpoint_s3_uri: str | None = None
    checkpoint_interval_minutes: int = DEFAULT_CHECKPOINT_INTERVAL_MIN
    max_runtime_seconds: int = DEFAULT_MAX_RUNTIME_S
    max_wait_seconds: int | None = None
    expected_duration_seconds: int | None = None
    deadline: str | None = None
    retry_max_attempts: int = DEFAULT_RETRY_ATTEMPTS
    retry_backoff_seconds: int = DEFAULT_RETRY_BACKOFF_S
    priority: int = DEFAULT_PRIORITY
    owner: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    hyperparameters: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    dependency_timeout_seconds: int = DEFAULT_DEPENDENCY_TIMEOUT_S
    code_s3_uri: str | None = None
    code_entry_point: str | None = None
    metrics: tuple[MetricDefinition, ...] = ()
    keep_alive_seconds: int = 0
    alternatives: tuple[InstanceOption, ...] = ()
    """`resources.alternatives`, in order of preference after the primary type."""
    training_plan: str | None = None
    """`capacity.trainingPlan`: a training plan ARN, `auto`, or None (no reserved capacity)."""
    regions: tuple[str, ...] = ()
    """`capacity.regions`: where spot attempts may run (empty: the home region only)."""
    distribution: Distribution | None = None
    checkpoint_format: str = "per-rank"
    """`checkpoint.format`: per-rank (loads into as many ranks only) or dcp (reshardable)."""
    infra_check: bool | None = None
    """`resources.infraCheck` (None: SageMaker's health check runs on attempts of more than one instance)."""

    @property
    def instance_options(self) -> tuple[InstanceOption, ...]:
        """Every type the job may run on, the primary first."""
        return (InstanceOption(self.instance_type, self.instance_count), *self.alternatives)

    def option(self, instance_type: str | None) -> InstanceOption:
        """The option of `instance_type` (the primary for None or a type not listed)."""
        return next((o for o in self.instance_options if o.instance_type == instance_type), self.instance_options[0])

    @property
    def multi_node(self) -> bool:
        """Some type it may run on takes more than one instance: its instances talk to each other."""
        return any(o.instance_count > 1 for o in self.instance_options)

    def checks_infrastructure(self, instance_count: int) -> bool:
        """Whether an attempt on `instance_count` instances asks for SageMaker's health check."""
        return instance_count > 1 if self.infra_check is None else self.infra_check

    @property
    def uses_spot(self) -> bool:
        return self.strategy != "on-demand"

    @property
    def deadline_at(self) -> datetime | None:
        return datetime.fromisoformat(self.deadline) if self.deadline else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["inputs"] = [channel.to_dict() for channel in self.inputs]
        data["depends_on"] = list(self.depends_on)
        data["metrics"] = [asdict(metric) for metric in self.metrics]
        data["alternatives"] = [asdict(option) for option in self.alternatives]
        data["regions"] = list(self.regions)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobSpec:
        values = dict(data)
        values["inputs"] = tuple(InputChannel(**channel) for channel in values["inputs"])
        values["depends_on"] = tuple(values.get("depends_on", ()))
        values["metrics"] = tuple(MetricDefinition(**metric) for metric in values.get("metrics", ()))
        values["alternatives"] = tuple(InstanceOption(**option) for option in values.get("alternatives", ()))
        values["regions"] = tuple(values.get("regions", ()))
        if values.get("distribution") is not None:
            values["distribution"] = Distribution(**values["distribution"])
        return cls(**values)


def scalar_to_string(value: Any) -> str:
    """SageMaker takes hyperparameters and environment values as strings only."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
