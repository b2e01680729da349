"""What a training run cost and what it would have cost on-demand (pure). A type without a
price in the table, or a stack in a region the table does not price, has no cost: None, shown
as unknown, never a made-up figure."""

from __future__ import annotations

from spotline.core.catalog import known_facts, price_region


def hourly_price(instance: str, count: int, *, region: str) -> float | None:
    known = known_facts(instance) if region == price_region() else None
    return known.usd_per_hour * count if known and known.usd_per_hour is not None else None


def cost_usd(instance: str, count: int, billable_seconds: float, *, region: str) -> float | None:
    """SageMaker bills BillableTimeInSeconds at the on-demand rate of the stack's region; managed
    spot already shows its discount as a shorter billable time."""
    if count <= 0 or billable_seconds <= 0:
        return 0.0  # nothing billed costs nothing, priced or not (a run that never trained)
    price = hourly_price(instance, count, region=region)
    return round(price * billable_seconds / 3600, 4) if price is not None else None


def format_usd(usd: float | None) -> str:
    """`$3.79`, or `unknown` for a type without a price."""
    return f"${usd:.2f}" if usd is not None else "unknown"


def spot_savings_percent(training_seconds: float, billable_seconds: float) -> float:
    if training_seconds <= 0:
        return 0.0
    return round(100 * (1 - billable_seconds / training_seconds), 2)
