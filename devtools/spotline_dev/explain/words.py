"""Words for a run's figures that the sandbox's output and `explain` share: the billed time (per
instance, a training plan's prepaid time apart) and the saving (or why none is claimed). The
figures are the run's own (RecordOutcome's); nothing is recomputed here."""

from __future__ import annotations

from spotline.core.billing.cost import format_usd
from spotline.core.common.durations import format_duration


def saving_words(
    savings_percent: float | None,
    on_demand_usd: float | None,
    plan_seconds: int | None,
    instance_type: str | None = None,
) -> str:
    """`$X all on-demand on ml.g5.2xlarge (N% saved)`, the baseline's type said (the manifest's
    primary, wherever the run ended), or why no saving is claimed: a run that used a training plan
    claims none (the plan's fee was paid up front, elsewhere), a run that did not finish the job has
    nothing to compare."""
    baseline = f"{format_usd(on_demand_usd)} all on-demand" + (f" on {instance_type}" if instance_type else "")
    if savings_percent is not None and on_demand_usd is not None:
        return f"{baseline} ({savings_percent:.0f}% saved)"
    if on_demand_usd is not None and plan_seconds:
        return f"{baseline}; no saving claimed: {format_duration(plan_seconds)} ran on a training plan, paid up front"
    if on_demand_usd is not None:
        return baseline
    return "no saving: the job did not finish"


BILLED_LEGEND = (
    "billed = the time SageMaker charges at the hourly rate, per instance (BillableTimeInSeconds; a job on N "
    "instances is charged N times it); time on a training plan was paid up front and is shown apart"
)


def billed_words(billable_seconds: int, plan_seconds: int | None, instance_count: int | None) -> str:
    """`billed 38m24s per instance x2 = 1h16m48s`, with a training plan's (prepaid) time apart.
    SageMaker: "Multiply BillableTimeInSeconds by the number of instances (InstanceCount) in your
    training cluster to get the total compute time SageMaker bills you" (DescribeTrainingJob); the
    run's billable seconds include its jobs on training plans (`trainingPlanSeconds`), whose
    reserved capacity the plan's fee paid."""
    plan = plan_seconds or 0
    count = instance_count or 1
    paid = max(0, billable_seconds - plan)
    words = f"billed {format_duration(paid)} per instance"
    if count > 1:
        words += f" x{count} = {format_duration(paid * count)}"
    if plan:
        words += f", plus {format_duration(plan)} on a training plan (prepaid)"
    return words
