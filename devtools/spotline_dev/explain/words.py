"""Words for a run's figures that the sandbox's output and `explain` share: the saving (or why none is
claimed). The figures are the run's own (RecordOutcome's); nothing is recomputed here."""

from __future__ import annotations

from spotline.core.cost import format_usd
from spotline.core.durations import format_duration


def saving_words(savings_percent: float | None, on_demand_usd: float | None, plan_seconds: int | None) -> str:
    """`$X all on-demand (N% saved)`, or why no saving is claimed: a run that used a training plan
    claims none (the plan's fee was paid up front, elsewhere), a run that did not finish the job has
    nothing to compare."""
    if savings_percent is not None and on_demand_usd is not None:
        return f"{format_usd(on_demand_usd)} all on-demand ({savings_percent:.0f}% saved)"
    if on_demand_usd is not None and plan_seconds:
        return (
            f"{format_usd(on_demand_usd)} all on-demand; no saving claimed: {format_duration(plan_seconds)} ran on "
            "a training plan, paid up front"
        )
    if on_demand_usd is not None:
        return f"{format_usd(on_demand_usd)} all on-demand"
    return "no saving: the job did not finish"
