"""What a training run cost and what it would have cost on-demand (pure). Prices come from
`catalog.training_price`: the run's price book (the Price List API's, read by the adapter), else
the bundled table in its own region. A type or region without a price has no cost: None, shown
as unknown, never a made-up figure and never another region's price."""

from __future__ import annotations

from spotline.core.spec.catalog import training_price


def hourly_price(instance: str, count: int, *, region: str) -> float | None:
    price = training_price(instance, region)
    return price.usd_per_hour * count if price is not None else None


def cost_usd(instance: str, count: int, billable_seconds: float, *, region: str) -> float | None:
    """SageMaker bills BillableTimeInSeconds at the on-demand rate of the job's region; managed
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
