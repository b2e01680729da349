"""The stand-in's records: Batch job queues, their quota shares, service jobs and the SageMaker
training jobs of their attempts, with the preemptions that stopped them. Only data and what it
answers about itself: the services that act on these records (batch_queues, batch_shares,
batch_jobs, batch_capacity, batch_preemption, training_jobs) import them, never the reverse,
so the stand-in's modules form no import cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spotline_dev.harness.standin.base.clock import EPS
from spotline_dev.harness.standin.base.spot_weather import TrainingBehaviour
from spotline_dev.harness.standin.base.timeline import Plan

CAPACITY_LIMIT_REASON = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
ANY_INSTANCE_TYPE = "NUM_INSTANCES"  # a service environment's unit for instances of every type


@dataclass
class Queue:
    name: str
    arn: str
    state: str
    status: str
    scheduling_policy_arn: str | None
    capacity: dict[str, int] | None = None  # the service environment's limits: {NUM_INSTANCES: n} or per type
    quota_shares: dict[str, QuotaShare] = field(default_factory=dict)  # by name (batch_shares)
    time_limits: list[dict[str, Any]] = field(default_factory=list)  # jobStateTimeLimitActions

    def capacity_wait_limit(self) -> float | None:
        """maxTimeSeconds of the queue's TERMINATE for jobs waiting for instance capacity, if any."""
        limits = [a["maxTimeSeconds"] for a in self.time_limits if a["reason"] == CAPACITY_LIMIT_REASON]
        return float(min(limits)) if limits else None

    @property
    def counts_instance_types(self) -> bool:
        """Whether its service environment counts capacity per instance type (quota management)."""
        return self.capacity is not None and ANY_INSTANCE_TYPE not in self.capacity

    def capacity_for(self, instance_type: str) -> int | None:
        """The environment's limit a job of this type counts against (None: no limit; 0: the
        environment has no limit for the type, so the job waits until one is configured)."""
        if self.capacity is None:
            return None
        if ANY_INSTANCE_TYPE in self.capacity:
            return self.capacity[ANY_INSTANCE_TYPE]
        return self.capacity.get(instance_type, 0)

    def same_limit(self, one: str, other: str) -> bool:
        """Whether jobs of the two instance types count against the same environment limit."""
        return not self.counts_instance_types or one == other


@dataclass
class QuotaShare:
    name: str
    arn: str
    queue: Queue
    limits: dict[str, int]  # capacityUnit (an instance type) -> maxCapacity
    strategy: str  # RESERVE | LEND | LEND_AND_BORROW
    borrow_limit: int = -1  # percent of each limit it may borrow on top; -1 unlimited
    in_share_preemption: bool = False
    state: str = "ENABLED"
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def lends(self) -> bool:
        return self.strategy in ("LEND", "LEND_AND_BORROW")

    @property
    def borrows(self) -> bool:
        return self.strategy == "LEND_AND_BORROW"

    def limit(self, unit: str) -> int:
        return self.limits.get(unit, 0)

    def detail(self) -> dict[str, Any]:
        """QuotaShareDetail (ListQuotaShares); DescribeQuotaShare adds the tags."""
        sharing: dict[str, Any] = {"strategy": self.strategy}
        if self.borrows:
            sharing["borrowLimit"] = self.borrow_limit
        return {
            "quotaShareName": self.name,
            "quotaShareArn": self.arn,
            "jobQueueArn": self.queue.arn,
            "capacityLimits": [{"maxCapacity": n, "capacityUnit": unit} for unit, n in self.limits.items()],
            "resourceSharingConfiguration": sharing,
            "preemptionConfiguration": {"inSharePreemption": "ENABLED" if self.in_share_preemption else "DISABLED"},
            "state": self.state,
            "status": "VALID",
        }


@dataclass
class TrainingJob:
    name: str
    arn: str
    request: dict[str, Any]
    key: str | None  # CheckpointConfig.S3Uri: progress and cumulative training are kept per key
    spot: bool
    created: float
    behaviour: TrainingBehaviour
    plan: Plan
    restored_from_step: int | None
    service_job: ServiceJob
    written: int = 0  # checkpoints of the plan already written to the store
    selected: tuple[str, int] = ("", 1)  # the instance type and count it runs on (SelectedInstanceType)
    zone: str = ""  # the Availability Zone it runs in, when the scenario's weather differs by zone
    by_type_before: dict[str, dict[str, Any]] = field(default_factory=dict)  # progress.json's, at its start
    handled: bool = False  # its end has been reported to the Batch job
    world: int | None = None  # a distributed job of many instances: its ranks, each saving a shard
    torn: int = 0  # interruptions of the plan whose torn step is written (sharded jobs)

    @property
    def batch_arn(self) -> str:
        """The training job's ARN as Batch's attempts give it (serviceResourceId): the name as
        created, its case kept, as the Batch user guide's examples show
        ("training-job/AWSBatchmy-training-job88b610a69aa8380ca5b0a7aba3f81cb8")."""
        return self.arn.rsplit("/", 1)[0] + "/" + self.name


@dataclass(frozen=True)
class Preemption:
    attempt: TrainingJob
    at: float  # when Batch stopped it; its instances are free at attempt.plan.end
    reason: str
    counted: bool  # whether the attempt had counted against retryStrategy.attempts (not a capacity failure)


@dataclass
class ServiceJob:
    job_id: str
    name: str
    arn: str
    queue: Queue
    created: float
    request: dict[str, Any]
    runnable_at: float
    next_attempt_at: float | None
    attempts: list[TrainingJob] = field(default_factory=list)
    counted_attempts: int = 0  # attempts that use up retryStrategy.attempts (capacity retries do not)
    final_status: str | None = None
    final_at: float = 0.0
    final_reason: str | None = None
    terminate_reason: str | None = None
    terminated_at: float | None = None  # when TerminateServiceJob was called
    instances: int = 1  # what it holds of the queue's capacity while an attempt runs
    sequence: int = 0  # submission order (jobs submitted at the same moment keep it)
    awaiting_capacity: bool = False  # RUNNABLE until the queue's capacity lets it start (batch_capacity)
    quota_share: QuotaShare | None = None  # its quota share (queues with quota shares)
    instance_type: str = ""  # the payload's, the capacity unit it uses
    admitted: bool = False  # quota_schedule let it start now: its next attempt starts without checks
    blocked_reason: str | None = None  # statusReason while it waits and can never start (misconfiguration)
    preemptions: list[Preemption] = field(default_factory=list)
    capacity_waited: float = 0.0  # time short of capacity, added up (SCHEDULED then failing, and RUNNABLE)
    time_limit_due: bool = False  # its next "attempt" is the queue's TERMINATE (jobStateTimeLimitActions)

    def attempts_at(self, t: float) -> list[TrainingJob]:
        """The attempts Batch had started by `t` (every attempt, once the stand-in is past `t`)."""
        return [a for a in self.attempts if a.created <= t + EPS]

    def final_at_or_before(self, t: float) -> bool:
        return self.final_status is not None and self.final_at <= t + EPS

    @property
    def retry_attempts(self) -> int:
        return int((self.request.get("retryStrategy") or {}).get("attempts", 1))
