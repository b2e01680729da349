"""`$.fallback`: StopSpotJob's record of the job it stopped to move the run (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from spotline.core.state.fields import StateRecord, key


@dataclass(frozen=True, slots=True, kw_only=True)
class Fallback(StateRecord):
    """The spot job StopSpotJob stopped, and where the run went."""

    SECTION: ClassVar[str] = "$.fallback"
    job_id: str = key("jobId", "the stopped job")
    capacity: str = key("capacity", "where it went: `on-demand`, `training-plan`, or `spot` on another type or region")
    terminated: bool = key("terminated", "it was stopped (false: it had already ended)")
    reason: str = key("reason", "the terminate reason Batch keeps (at most 256 characters)")
    at: str = key("at", "when (RFC 3339)")
    notified: bool = key(
        "notified",
        "false: the `MovedToOnDemand`, `MovedToTrainingPlan`, `MovedToAnotherInstanceType` or `MovedToAnotherRegion` "
        "message could not be sent; the move went on",
    )
