"""What the stand-in reports of a Batch service job (`BatchSageMakerStandIn.jobs`): its status and
its attempts' SageMaker training jobs, summed where a run's totals are wanted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from spotline_dev.harness.standin.sagemaker.training_jobs import TrainingJobView

__all__ = ["ServiceJobView"]


@dataclass(frozen=True)
class ServiceJobView:
    """One Batch service job with its attempts, as of the stand-in's last advance."""

    job_id: str
    job_name: str
    job_arn: str
    queue: str  # queue name
    capacity: str  # of the latest attempt (of the payload before the first one)
    submitted_at: datetime
    status: str  # Batch status now
    status_reason: str | None
    attempts: tuple[TrainingJobView, ...]
    quota_share: str | None = None
    preemptions: int = 0  # attempts preempted (and stopped) so far
    ended_at: datetime | None = None  # when Batch ended the job (DescribeServiceJob stoppedAt)

    @property
    def latest(self) -> TrainingJobView | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def training_job_name(self) -> str | None:
        return self.latest.name if self.latest else None

    @property
    def training_status(self) -> str | None:
        return self.latest.status if self.latest else None

    @property
    def secondary_status(self) -> str | None:
        return self.latest.secondary_status if self.latest else None

    @property
    def training_seconds(self) -> float:
        return sum(a.training_seconds for a in self.attempts)

    @property
    def billable_seconds(self) -> float:
        return sum(a.billable_seconds for a in self.attempts)

    @property
    def interruptions(self) -> int:
        return sum(a.interruptions for a in self.attempts)

    @property
    def repairs(self) -> int:
        """Cluster repairs after a GPU failure, across attempts."""
        return sum(len(a.repaired_at) for a in self.attempts)

    @property
    def lost_work_seconds(self) -> float:
        return sum(a.lost_work_seconds for a in self.attempts)

    @property
    def restored_from_step(self) -> int | None:
        return self.latest.restored_from_step if self.latest else None
