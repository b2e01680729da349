"""`$.outcome`: how a training run ended, as RecordOutcome returned it (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from spotline.core.state.fields import StateRecord, key


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome(StateRecord):
    """`$.outcome` of a training run: the name its last Choice routes on, and the run's figures."""

    SECTION: ClassVar[str] = "$.outcome"
    name: str = key("name", "`TrainingSucceeded`, `DeadlineMissed`, `TrainingFailed`, ...: the run's end")
    succeeded: bool = key("succeeded", "the model is in the output location")
    cause: str = key("cause", "why, in words")
    next_step: str = key("next_step", "what to do about it")
    figures: dict[str, Any] = key(
        "figures",
        "attempts, interruptions, seconds, cost (`cost_usd`, `cost_by_region`, `savings_percent`), "
        "`deadline_met`: `spotline.core.billing.outcome.Figures`, snake_case",
    )
    prices: list[dict[str, Any]] | None = key(
        "prices", "the prices it was costed at: in RecordOutcome's answer only, not kept in the state", answer_only=True
    )
    report: str = key("report", "the outcome report beside the manifest (s3://...)")
    notified: bool = key("notified", "on-call was told (a run that failed)")
