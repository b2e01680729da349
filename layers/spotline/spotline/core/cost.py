"""What a training run cost and what it would have cost on-demand (pure)."""

from __future__ import annotations

from spotline.core.catalog import instance_type


def hourly_price(instance: str, count: int) -> float:
    known = instance_type(instance)
    return (known.usd_per_hour if known else 0.0) * count


def cost_usd(instance: str, count: int, billable_seconds: float) -> float:
    """SageMaker bills BillableTimeInSeconds at the on-demand rate; managed spot already
    shows its discount as a shorter billable time."""
    return round(hourly_price(instance, count) * billable_seconds / 3600, 4)


def spot_savings_percent(training_seconds: float, billable_seconds: float) -> float:
    if training_seconds <= 0:
        return 0.0
    return round(100 * (1 - billable_seconds / training_seconds), 2)
