"""What stopping an execution's jobs leaves in the state (pure): `$.cleanup` after an unexpected
error (StopTrainingJobAfterError) and `$.capacityCleanup` when a job is stopped for lack of
capacity (StopJobWithoutCapacity), both from StopExecutionJobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from spotline.core.state.checks import ServiceJobRecord
from spotline.core.state.fields import StateRecord, key


@dataclass(frozen=True, slots=True, kw_only=True)
class JobsStopped(StateRecord):
    """The execution's training jobs StopExecutionJobs found still queued or running and terminated."""

    SECTION: ClassVar[str] = "$.cleanup"
    stopped: tuple[ServiceJobRecord, ...] = key("stopped", "the jobs it terminated", record=ServiceJobRecord, many=True)
    checked: int = key("checked", "how many of the execution's jobs it looked at, here and in peer regions")
    at: str = key("at", "when (RFC 3339)")
