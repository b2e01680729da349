"""RecordOutcome's side effects: metrics (EMF via Powertools), the outcome report beside the
manifest, and the on-call message. The decision itself is `spotline.core.billing.outcome.decide`."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from spotline.aws.billing import pricing
from spotline.aws.billing.billing import BillingNotSettled, bill_for_state
from spotline.aws.common import clock
from spotline.aws.common.clients import client
from spotline.aws.common.observability import add_team_dimension, logger, metrics
from spotline.aws.manifest.reports import write_report
from spotline.core.billing.billing import RunBill
from spotline.core.billing.outcome import (
    Outcome,
    RunSections,
    decide,
    resource_problems,
    unknown_until_billed,
    without_bills,
)
from spotline.core.common import links
from spotline.core.common.errors import BillsNotRead
from spotline.core.common.naming import report_key
from spotline.core.spec.catalog import priced_by
from spotline.core.spec.model import to_rfc3339
from spotline.core.state import Outcome as OutcomeState
from spotline.core.state import RunInput, UnreadBills, UnsettledBills, as_state


def publish_metrics(team: str, outcome: Outcome) -> None:
    add_team_dimension(team)
    numbers = outcome.figures
    metrics.add_metric(name="JobsSucceeded" if outcome.succeeded else "JobsFailed", unit=MetricUnit.Count, value=1)
    if numbers.attempts:
        metrics.add_metric(name="SpotInterruptions", unit=MetricUnit.Count, value=numbers.interruptions)
        metrics.add_metric(name="TrainingSeconds", unit=MetricUnit.Seconds, value=numbers.training_seconds)
        metrics.add_metric(name="BillableSeconds", unit=MetricUnit.Seconds, value=numbers.billable_seconds)
        if numbers.savings_percent is not None:  # a run that did not finish saved nothing
            metrics.add_metric(name="SavingsPercent", unit=MetricUnit.Percent, value=numbers.savings_percent)
        if numbers.lost_work_seconds is not None:
            metrics.add_metric(name="LostWorkSeconds", unit=MetricUnit.Seconds, value=numbers.lost_work_seconds)
        if numbers.cost_usd is not None:  # no price for the type: no figure rather than a made-up one
            metrics.add_metric(name="EstimatedCostUSD", unit=MetricUnit.NoUnit, value=numbers.cost_usd)
    if numbers.on_demand_fallback:
        metrics.add_metric(name="JobsOnDemandFallback", unit=MetricUnit.Count, value=1)
    if numbers.deadline_met is not None:
        metrics.add_metric(name="DeadlinesMissed", unit=MetricUnit.Count, value=0 if numbers.deadline_met else 1)
    if numbers.queue_wait_seconds is not None:
        metrics.add_metric(name="QueueWaitSeconds", unit=MetricUnit.Seconds, value=numbers.queue_wait_seconds)


def publish_alert(
    topic_arn: str,
    *,
    kind: str,
    team: str,
    job: str,
    owner: str | None,
    what: str,
    cause: str,
    next_step: str,
    links_: dict[str, str],
    report: str | None = None,
) -> None:
    """One message on-call can act on: what happened, why, the next step, where to look.
    The `team` and `kind` attributes let teams subscribe with a filter policy."""
    lines = [
        what,
        f"Team: {team}    Job: {job}" + (f"    Owner: {owner}" if owner else ""),
        f"When: {to_rfc3339(clock.now())}",
        "",
        f"Why: {cause}",
        f"Next step: {next_step}",
        "",
        "Where to look:",
        *(f"  {label}: {url}" for label, url in links_.items()),
        *([f"  Report: {report}"] if report else []),
    ]
    client("sns").publish(
        TopicArn=topic_arn,
        Subject=f"[Spotline] {kind}: {team}/{job}"[:100],
        Message="\n".join(lines),
        MessageAttributes={
            "team": {"DataType": "String", "StringValue": team},
            "outcome": {"DataType": "String", "StringValue": kind},
        },
    )


def try_publish_alert(topic_arn: str, **message: Any) -> bool:
    """`publish_alert`, for a step whose real work is done already (a job terminated, a spot job
    stopped before its on-demand attempt): an SNS failure past botocore's retries is logged and
    counted (`AlertsNotPublished`) instead of failing the step. Returns whether it was sent."""
    try:
        publish_alert(topic_arn, **message)
    except Exception:
        logger.exception("Alert not published", extra={"kind": message.get("kind"), "team": message.get("team")})
        metrics.add_metric(name="AlertsNotPublished", unit=MetricUnit.Count, value=1)
        return False
    return True


def settled_bill(state: dict[str, Any], now: datetime) -> RunBill | None:
    """The run's bills, read again now. While a job is still stopping (SageMaker has not billed
    it), BillingNotSettled asks Step Functions to try again; once its tries are spent
    (`$.billingNotSettled`), the run is recorded with `billing_settled` false in its figures.
    Bills that cannot be read raise BillsNotRead, tried again by Step Functions; once those tries
    are spent (`$.billsNotRead`), None: the run's cost is then recorded as unknown."""
    try:
        bill = bill_for_state(state, now)
    except Exception as exc:
        if UnreadBills.in_state(state) is None:
            raise BillsNotRead(f"the run's bills could not be read: {type(exc).__name__}: {exc}") from exc
        logger.exception("The run's bills could not be read: its cost is recorded as unknown")
        metrics.add_metric(name="BillsNotRead", unit=MetricUnit.Count, value=1)
        return None
    if not bill.settled:
        unsettled = ", ".join(job.name for job in bill.jobs if not job.ended)
        if UnsettledBills.in_state(state) is None:
            raise BillingNotSettled(f"training job(s) {unsettled} have not ended yet: SageMaker has not billed them")
        logger.warning("Training jobs not ended yet: their bills are not final", extra={"trainingJobs": unsettled})
    return bill


def _unread_reason(state: dict[str, Any]) -> str:
    """BillsNotRead's message, from the error Step Functions caught (`$.billsNotRead`)."""
    unread = UnreadBills.in_state(state)
    cause = (unread.cause if unread else None) or ""
    with contextlib.suppress(ValueError, AttributeError):  # Lambda's error as JSON: its message
        cause = str(json.loads(cause).get("errorMessage") or cause)
    return (cause or "the run's bills could not be read")[:500]


def record_outcome(
    state: dict[str, Any], *, execution_arn: str, now: datetime, topic_arn: str, region: str
) -> OutcomeState:
    run, started = RunSections.of(state), RunInput.from_state(state)
    bill = settled_bill(state, now)
    prices = pricing.run_prices(run.job, bill, region=region, now=now.timestamp())
    with priced_by(prices):  # each job at its region's price, from the Price List API or the table
        outcome = decide(run, now, region=region, bill=bill)
    if bill is None and run.attempts:  # billed, but for how much is unknown
        outcome = replace(outcome, figures=without_bills(outcome.figures, _unread_reason(state)))
    # A job still training or stopping after BillingNotSettled's tries has no bill yet: its cost
    # is unknown, not the ended jobs' part alone.
    outcome = replace(outcome, figures=unknown_until_billed(outcome.figures, bill))
    summary = run.job
    team = summary.team if summary else started.team or "unknown"
    job = summary.name if summary else started.manifest_key
    training, status = run.training, run.status
    links_ = links.for_job(
        region,
        execution_arn=execution_arn,
        training_job_name=status.training_job_name if status else None,  # Batch's name, as last checked
        batch_job_id=training.job_id if training else None,
    )
    report = {
        "outcome": outcome.name,
        "succeeded": outcome.succeeded,
        "cause": outcome.cause,
        "nextStep": outcome.next_step,
        "team": team,
        "job": job,
        "execution": execution_arn,
        "manifest": {"bucket": started.bucket, "key": started.manifest_key, "versionId": started.version_id},
        "figures": outcome.to_dict()["figures"],
        "attempts": [attempt.to_state() for attempt in run.attempts],
        "bills": [job.to_dict() for job in bill.jobs] if bill else None,
        "prices": pricing.described(prices),
        "resourceProblems": [problem.to_state() for problem in resource_problems(run)],
        "cleanup": as_state(run.cleanup) or as_state(run.cleanup_failure),
        "links": links_,
        "recordedAt": to_rfc3339(now),
    }
    location = write_report(started.bucket, report_key(started.manifest_key, "outcome"), report)
    publish_metrics(team, outcome)
    if not outcome.succeeded:
        publish_alert(
            topic_arn,
            kind=outcome.name,
            team=team,
            job=job,
            owner=summary.owner if summary else None,
            what=f"Spotline training run ended in {outcome.name}.",
            cause=outcome.cause,
            next_step=outcome.next_step,
            links_=links_,
            report=location,
        )
    return OutcomeState(
        name=outcome.name,
        succeeded=outcome.succeeded,
        cause=outcome.cause,
        next_step=outcome.next_step,
        figures=outcome.to_dict()["figures"],
        prices=pricing.described(prices),
        report=location,
        notified=not outcome.succeeded,
    )
