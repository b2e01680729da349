"""One sandbox run, as the sandbox follows and reports it: running an execution to its end (and
the fresh executions a long run continues in), letting stops under way finish, and the summary
of the run (the `--json` fields, the timeline and the story), judged from the training jobs
themselves. Shared by the single-manifest sandbox and the fleet."""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from moto.sns.models import sns_backends

from spotline.aws.billing.billing import bill_for_state
from spotline.aws.common import clock
from spotline.core.billing.outcome import (
    attempt_records,
    checkpoint_copies,
    figures,
    switched_to_on_demand,
    unknown_until_billed,
)
from spotline.core.spec.model import to_rfc3339
from spotline.core.state import ContinuedAs, JobSummary, ManifestCheck, Training
from spotline_dev.explain import explain, timeline
from spotline_dev.explain.history import region_of
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.template import PROJECT_ROOT, powertools_environment
from spotline_dev.harness.sandbox.scenario import Capacity, Scenario
from spotline_dev.harness.standin import ServiceJobView, SpotWeather
from spotline_dev.harness.standin.base.training_plans import ReservedPlan

QUIET = {"POWERTOOLS_LOG_LEVEL": "ERROR", "POWERTOOLS_METRICS_DISABLED": "true"}
ENDED = frozenset({"SUCCEEDED", "FAILED"})  # Batch service job statuses that are an end
SETTLE_SECONDS = 600.0  # after the last execution: how long stops already under way may take
SETTLE_STEP = 10.0


@contextmanager
def powertools_environment_for(verbose: bool) -> Iterator[None]:
    """Powertools reads its settings at import, as in Lambda: set them before the handlers load.
    Unless verbose, moto's own log stays out of the output too: its Step Functions interpreter
    logs every failure it raises (a Fail state, a JSONPath with nothing there) at ERROR, with
    its internal state, though the run's outcome already says what happened."""
    wanted = {**powertools_environment(), **({} if verbose else QUIET)}
    saved = {k: os.environ.get(k) for k in wanted}
    os.environ.update(wanted)
    moto_log = logging.getLogger("moto")
    moto_propagates = moto_log.propagate
    silence = logging.NullHandler()
    if not verbose:
        moto_log.addHandler(silence)
        moto_log.propagate = False
    try:
        with warnings.catch_warnings():
            if not verbose:  # metrics are off: Powertools says so for each handler that had none
                warnings.filterwarnings("ignore", message="No application metrics to publish")
            yield
    finally:
        moto_log.removeHandler(silence)
        moto_log.propagate = moto_propagates
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def weather_of(scenario: Scenario) -> SpotWeather:
    """The scenario's capacity: spot gaps and interruptions, on-demand gaps and start delays, the
    same for every type but those `instanceTypes:` names, and in every zone but those `zones:`
    names."""
    weather = _weather(scenario, scenario)
    weather.instance_types = {name: _weather(scenario, capacity) for name, capacity in scenario.instance_types.items()}
    weather.zones = {zone: _weather(scenario, capacity) for zone, capacity in scenario.zones.items()}
    weather.training_plans = [
        ReservedPlan(
            plan.name,
            plan.instance_type,
            plan.instances,
            scenario.start + timedelta(seconds=plan.start),
            scenario.start + timedelta(seconds=plan.end),
            tags=plan.tags,
            zone=plan.zone,
        )
        for plan in scenario.training_plans
    ]
    return weather


def peer_weathers(scenario: Scenario) -> dict[str, SpotWeather]:
    """Each peer region's capacity (`regions:`), its types' where they differ."""
    weathers = {}
    for name, region in scenario.regions.items():
        weather = _weather(scenario, region.capacity)
        weather.instance_types = {kind: _weather(scenario, c) for kind, c in region.instance_types.items()}
        weathers[name] = weather
    return weathers


def _weather(scenario: Scenario, capacity: Scenario | Capacity) -> SpotWeather:
    def moments(gaps: list[tuple[float, float]]) -> list[tuple[datetime, datetime]]:
        return [(scenario.start + timedelta(seconds=a), scenario.start + timedelta(seconds=b)) for a, b in gaps]

    return SpotWeather(
        capacity_gaps=moments(capacity.capacity_gaps),
        interruptions=list(capacity.interruptions),
        spot_start_delay=capacity.spot_start_delay,
        on_demand_start_delay=capacity.on_demand_start_delay,
        on_demand_gaps=moments(capacity.on_demand_gaps),
        speed=capacity.speed if isinstance(capacity, Capacity) else 1.0,
    )


def follow_run(
    stack: LocalStack, arn: str, delivery_errors: list[str], *, timeout: float = 600
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the execution to its end, and the fresh executions a long run continues in
    (`$.continuedAs`), delivering what each end triggers (rules on Step Functions status
    changes). Returns the last execution and the run's whole history, oldest first."""
    history: list[dict[str, Any]] = []
    while True:
        execution = stack.wait_for_execution(arn, timeout=timeout)
        stack.deliver_events(on_error=lambda rule, error: delivery_errors.append(f"{rule}: {error}"))
        history += stack.history(arn)
        following = ContinuedAs.in_state(json.loads(execution.get("output") or "{}"))
        if execution["status"] != "SUCCEEDED" or following is None:
            return execution, history
        arn = following.execution_arn


def settle(stack: LocalStack) -> None:
    """Let stops already under way finish (SageMaker takes a little while to stop a training job),
    so that a job told to stop is not reported as left running."""
    waited = 0.0
    while waited < SETTLE_SECONDS and any(job.training_status == "Stopping" for job in stack.standin.jobs):
        stack.clock.advance(SETTLE_STEP)
        waited += SETTLE_STEP


def left_running(execution: str, job: ServiceJobView) -> dict[str, Any]:
    return {
        "execution": execution,
        "jobId": job.job_id,
        "jobName": job.job_name,
        "status": job.status,
        "trainingJobName": job.training_job_name,
        "trainingStatus": job.training_status,
    }


def notifications_of(stack: LocalStack, execution_name: str) -> list[dict[str, str]]:
    """What on-call received about one run: every message on the stack's SNS topics that links to
    its execution (or a continuation of it), as `{at, type}` in the order published. Read from
    moto's record of published messages (`sent_notifications`, moto's internal API, pinned)."""
    backend = sns_backends[stack.account][stack.region]
    received = []
    for topic in backend.topics.values():
        for _id, message, _subject, attributes, _group in topic.sent_notifications:
            if execution_name not in message:
                continue
            at = next((line.removeprefix("When: ") for line in message.splitlines() if line.startswith("When: ")), "")
            kind = ((attributes or {}).get("outcome") or {}).get("Value") or ""  # moto keeps {Type, Value}
            received.append({"at": at, "type": str(kind)})
    return sorted(received, key=lambda n: n["at"])


def rfc3339_or_none(moment: datetime | None) -> str | None:
    return to_rfc3339(moment) if moment else None


def read_json(stack: Any, key: str) -> dict[str, Any] | None:
    try:
        return json.loads(stack.client("s3").get_object(Bucket=stack.bucket, Key=key)["Body"].read())  # type: ignore[no-any-return]
    except Exception:
        return None


def training_end(jobs: list[ServiceJobView], deadline: str | None) -> dict[str, Any]:
    """When the execution's training ended, judged from the training jobs themselves (not from
    when the execution noticed): the last attempt's end (any outcome; None while one still runs),
    the completion (`finishedAt`) and whether it came by the deadline."""
    attempts = sorted((a for job in jobs for a in job.attempts), key=lambda a: a.created_at)
    last = attempts[-1] if attempts else None
    completed = last.ended_at if last and last.status == "Completed" else None
    met = completed <= datetime.fromisoformat(deadline) if completed and deadline else None
    return {
        "trainingEndedAt": rfc3339_or_none(last.ended_at if last else None),
        "trainingStatus": last.status if last else None,
        "finishedAt": rfc3339_or_none(completed),
        "deadlineMet": met,
    }


def summarize(
    *,
    scenario: Scenario,
    manifest: Path,
    execution: dict[str, Any],
    history: list[dict[str, Any]],
    jobs: list[ServiceJobView],
    reports: dict[str, dict[str, Any] | None],
) -> dict[str, Any]:
    report = reports.get("outcome") or {}
    job = _job_from_history(history)
    attempts = sorted((a for j in jobs for a in j.attempts), key=lambda a: a.created_at)
    figures = report.get("figures") or run_figures(history, execution)
    deadline = figures.get("deadline") or (job.deadline if job is not None else None)
    return {
        "name": execution["name"],
        "manifest": str(manifest.relative_to(PROJECT_ROOT)) if manifest.is_relative_to(PROJECT_ROOT) else str(manifest),
        "status": execution["status"],
        "error": execution.get("error"),
        "cause": execution.get("cause"),
        "attempts": figures.get("attempts", len(jobs)),
        "spotInterruptions": figures.get("interruptions", 0),
        "clusterRepairs": sum(len(a.repaired_at) for a in attempts),  # the stand-in's, after GPU failures
        "onDemandFallback": bool(figures.get("on_demand_fallback", False)),
        "deadline": deadline,
        **training_end(jobs, deadline),
        "trainingSeconds": figures.get("training_seconds", 0),
        "billableSeconds": figures.get("billable_seconds", 0),
        "lostWorkSeconds": figures.get("lost_work_seconds"),
        "instanceType": job.instance_type if job is not None else None,
        "instanceTypes": [a.instance_type or None for a in attempts],
        "capacityTiers": [a.capacity for a in attempts],
        # No figures at all: nothing was submitted (nothing billed), or the run's state was not read.
        "costUsd": figures.get("cost_usd", None if jobs else 0.0),
        "costUnknown": figures.get("cost_unknown") or (None if figures or not jobs else "the run's state was not read"),
        "costByRegion": figures.get("cost_by_region") or {},
        "onDemandCostUsd": figures.get("on_demand_cost_usd"),
        "onDemandSeconds": figures.get("on_demand_seconds"),
        "onDemandInstanceType": figures.get("on_demand_instance_type"),  # the baseline's: the manifest's primary
        "savingsPercent": figures.get("savings_percent"),
        "trainingPlanSeconds": figures.get("training_plan_seconds", 0),
        "regions": [a.region for a in attempt_records(_latest_state(history))] if history else [],
        # A job of many instances: the one zone of each attempt (null: any of the stack's subnets).
        "zones": [a.zone for a in attempt_records(_latest_state(history))] if history else [],
        "checkpointCopies": figures.get("checkpoint_copies")
        or checkpoint_copies(attempt_records(_latest_state(history)))
        or {"count": 0, "bytes": 0, "seconds": 0.0, "usd": 0.0},
        "billingSettled": figures.get("billing_settled", False),
        "prices": report.get("prices") or [],  # what RecordOutcome priced the figures with, and from where
        "stateTransitions": sum(1 for e in history if e["type"].endswith("StateEntered")),
        "historyEvents": len(history),
        "maxStateBytes": max_state_bytes(history),
        "timeline": timeline(history, scenario.start),
        "start": scenario.start,
        "story": explain(history, execution),
        # Each training job's bill as RecordOutcome read it (None: no outcome report): the parts the
        # tests reconcile with the stand-in's ledger per instance type and region.
        "bills": report.get("bills"),
    }


def run_figures(history: list[dict[str, Any]], execution: dict[str, Any]) -> dict[str, Any]:
    """The figures of a run that wrote no outcome report (stopped, or failed before RecordOutcome),
    as `spotline status` reads them: its newest state and its training jobs' bills, read now."""
    state = _latest_state(history)
    if not state:
        return {}
    bill = bill_for_state(state, clock.now()) if Training.in_state(state) is not None else None
    counted = figures(
        _job_of(state),
        attempt_records(state),
        region=region_of(str(execution["executionArn"])),
        bill=bill,
        switched=switched_to_on_demand(state),
    )
    return asdict(unknown_until_billed(counted, bill))


def _latest_state(history: list[dict[str, Any]]) -> dict[str, Any]:
    """The newest state document with the job in it (`$.manifest`), from the end of the history."""
    for event in reversed(history):
        for details, field in (("stateExitedEventDetails", "output"), ("stateEnteredEventDetails", "input")):
            text = (event.get(details) or {}).get(field)
            if text:
                document = json.loads(text)
                if isinstance(document, dict) and "manifest" in document:
                    return document
    return {}


def _job_of(state: dict[str, Any]) -> JobSummary | None:
    """The job in brief in a state document of this run (None: the manifest was rejected, or
    LoadManifest's error was caught)."""
    check = ManifestCheck.in_state(state)
    return check.job if check is not None else None


def _job_from_history(history: list[dict[str, Any]]) -> JobSummary | None:
    """The job summary LoadManifest left in the state (None when the manifest was rejected)."""
    for event in history:
        details = event.get("stateExitedEventDetails")
        if details and details["name"] == "LoadManifest":
            return _job_of(json.loads(details["output"]))
    return None


def max_state_bytes(history: list[dict[str, Any]]) -> int:
    """The largest state input or output in the history, in UTF-8 bytes: what Step Functions
    holds to its 256 KiB limit (States.DataLimitExceeded). moto does not enforce it."""
    return max(
        (
            len(text.encode())
            for event in history
            for key, details in event.items()
            if key.endswith("EventDetails") and isinstance(details, dict)
            for text in (details.get("input"), details.get("output"))
            if isinstance(text, str)
        ),
        default=0,
    )
