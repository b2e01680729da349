"""How a run moves on: `$.fallback` (StopSpotJob's record of the job it stopped to move the run),
`$.continuedAs` (the execution a long run's watch was handed to) and `$.continuedFrom` (the
execution a continuation took it from) (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from spotline.core.state.fields import StateRecord, key


@dataclass(frozen=True, slots=True, kw_only=True)
class Fallback(StateRecord):
    """The job StopSpotJob stopped (spot, or on-demand for a return to spot), and where the run went."""

    SECTION: ClassVar[str] = "$.fallback"
    job_id: str = key("jobId", "the stopped job")
    capacity: str = key(
        "capacity",
        "where it went: `on-demand`, `training-plan`, or `spot` (on another type or region, or back from on-demand)",
    )
    terminated: bool = key("terminated", "it was stopped (false: it had already ended)")
    reason: str = key("reason", "the terminate reason Batch keeps (at most 256 characters)")
    at: str = key("at", "when (RFC 3339)")
    notified: bool = key(
        "notified",
        "false: the `MovedToOnDemand`, `MovedToTrainingPlan`, `MovedToAnotherInstanceType`, `MovedToAnotherZone`, "
        "`MovedToAnotherRegion` or `MovedBackToSpot` message could not be sent; the move went on",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ContinuedAs(StateRecord):
    """The fresh execution ContinueInNewExecution handed the watch to (this one then ends)."""

    SECTION: ClassVar[str] = "$.continuedAs"
    execution_name: str = key("executionName", "its name, `<first>-c<n>`")
    execution_arn: str = key("executionArn", "its ARN")
    retagged: list[str] = key("retagged", "the jobs now tagged `spotline:execution=<it>`")


@dataclass(frozen=True, slots=True, kw_only=True)
class ContinuedFrom(StateRecord):
    """The execution a continuation took the run's watch from (null in a run's first execution:
    `IsItAContinuation?` routes on it)."""

    SECTION: ClassVar[str] = "$.continuedFrom"
    execution: str = key("execution", "the execution before this one")
    first: str = key("first", "the run's first execution (continuations are named `<first>-c<n>`)")
    number: int = key("number", "this continuation's number, from 1")

    @classmethod
    def after(cls, previous: ContinuedFrom | None, execution: str) -> ContinuedFrom:
        """The continuation of `execution`, itself a continuation `previous` or a run's first."""
        first, number = (previous.first, previous.number) if previous else (execution, 0)
        return cls(execution=execution, first=first, number=number + 1)
