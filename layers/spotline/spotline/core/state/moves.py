"""How a run moves on: `$.fallback` (StopSpotJob's record of the job it stopped to move the run)
and `$.continuedAs` (the execution a long run's watch was handed to) (pure)."""

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


@dataclass(frozen=True, slots=True, kw_only=True)
class ContinuedAs(StateRecord):
    """The fresh execution ContinueInNewExecution handed the watch to (this one then ends)."""

    SECTION: ClassVar[str] = "$.continuedAs"
    execution_name: str = key("executionName", "its name, `<first>-c<n>`")
    execution_arn: str = key("executionArn", "its ARN")
    retagged: list[str] = key("retagged", "the jobs now tagged `spotline:execution=<it>`")
