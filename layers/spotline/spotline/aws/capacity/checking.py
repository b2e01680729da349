"""CheckTrainingStatus's work: gather what Batch, SageMaker, S3 and the fleet's record say into an
`Observation`, ask `spotline.core.capacity.assess.assess` what it makes of it, then act on the answer (raise
the job's priority, record the sighting, publish DeadlineAtRisk) and report it in `$.status`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, cast

from aws_lambda_powertools.metrics import MetricUnit

from spotline.aws.billing.billing import describe_training_job
from spotline.aws.billing.reporting import try_publish_alert
from spotline.aws.capacity.queue_state import QueueSettings, raise_priority, waiting_jobs
from spotline.aws.capacity.training_plans import candidate_plans
from spotline.aws.common.clients import client, in_region
from spotline.aws.common.observability import add_team_dimension, metrics
from spotline.aws.manifest.spec_store import spec_of
from spotline.aws.regions.region_moves import copy_seconds, fleet_record, note_sighting
from spotline.aws.regions.regions import allowed_regions, home_region, spec_at
from spotline.aws.state.progress import read_progress
from spotline.core.capacity.assess import Assessment, AtRisk, assess, at_risk_due
from spotline.core.capacity.observation import Attempt, History, Observation, QueueLimits, progress_figures
from spotline.core.capacity.policy import JobClock
from spotline.core.capacity.queue import queue_wait_now
from spotline.core.capacity.training_plans import PlanView, plan_record
from spotline.core.common import links
from spotline.core.regions.regions import arn_in_region
from spotline.core.spec.model import JobSpec, to_rfc3339
from spotline.core.state import AttemptRecord, ExcludedRegion, ResourceCheck, RunStatus, Training
from spotline.core.state.execution_state import MAX_REASON, clip
from spotline.core.training.status import TrainingStatus, earlier_training_job_names, normalize, training_job_name_of
from spotline.core.training.training_request import Capacity


def progress_of(
    spec: JobSpec,
    status: TrainingStatus,
    previous: Sequence[AttemptRecord],
    region: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """`spec` as the attempt runs in `region` (its checkpoint there): progress.json read there, in figures."""
    attempts = tuple(_attempt(a) for a in previous)
    return progress_figures(spec, status, read_progress(spec.checkpoint_s3_uri, region), attempts, now)


# --- the execution state in, the status out ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Run:
    """What the check reads of the execution state."""

    spec: JobSpec
    job_id: str
    history: History
    regions: tuple[str, ...]
    excluded: tuple[ExcludedRegion, ...]
    zone: str | None
    zones: tuple[str, ...]
    zones_by_region: dict[str, tuple[str, ...]]
    """A job of many instances: each region's zones with the stack's subnets (a plan elsewhere is no choice)."""


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _attempt(attempt: Training | AttemptRecord) -> Attempt:
    final = attempt.final_status if isinstance(attempt, AttemptRecord) else None
    wait = final.queue_wait_seconds if final else None
    plan = attempt.training_plan if isinstance(attempt, Training) else None
    return Attempt(
        capacity=cast(Capacity, attempt.capacity),
        instance_type=attempt.instance_type,
        submitted_at=_when(attempt.submitted_at),
        queue_wait_seconds=float(wait) if wait is not None else None,
        training_seconds=int(final.training_seconds or 0) if final else 0,
        plan_usable_until=_when(plan.usable_until) if plan else None,
        region=attempt.region,
        zone=attempt.zone,
    )


def _history(state: dict[str, Any], execution_arn: str) -> History:
    training, status = Training.of_state(state), RunStatus.in_state(state)
    return History(
        current=_attempt(training),
        previous=tuple(_attempt(a) for a in training.previous_attempts),
        checks=status.checks if status else 0,
        at_risk=status.deadline_at_risk.to_state() if status and status.deadline_at_risk else None,
        seed=f"{execution_arn}:{training.attempt}",
    )


def _read_state(state: dict[str, Any], execution_arn: str) -> _Run:
    resources, training = ResourceCheck.in_state(state), Training.of_state(state)
    return _Run(
        spec=spec_of(state),
        job_id=training.job_id,
        history=_history(state, execution_arn),
        regions=tuple(allowed_regions(state)),
        excluded=resources.regions.excluded if resources else (),
        # A job of many instances runs each attempt in one zone (SubmitTrainingJob).
        zone=training.zone,
        zones=tuple(resources.zones_in(training.region or home_region(), home_region()) or ())
        if resources and training.zone
        else (),
        zones_by_region=_zones_by_region(state, resources),
    )


def _status_of(
    run: _Run,
    assessed: Assessment,
    *,
    escalation: dict[str, Any] | None,
    at_risk: dict[str, Any] | None,
    job_links: dict[str, str],
    now: datetime,
) -> dict[str, Any]:
    """`$.status`: the attempt's status, the decision and what happens next."""
    status, decision, step, plan = assessed.status, assessed.decision, assessed.step, assessed.plan
    queue_wait = assessed.queue_wait_seconds
    return {
        "jobId": run.job_id,
        "instanceType": status.instance_type or run.history.current.instance_type,  # None until SageMaker selects it
        "state": status.state,
        "finished": status.finished,
        "reasonClass": status.reason_class,
        "reason": clip(status.reason, MAX_REASON),
        "batchStatus": status.batch_status,
        "secondaryStatus": status.secondary_status,
        "trainingJobName": status.training_job_name,
        "trainingSeconds": status.training_seconds,
        "billableSeconds": status.billable_seconds,
        "interruptions": status.interruptions,
        "preemptions": status.preemptions,
        "capacityShort": status.capacity_short,
        "queueWaitSeconds": int(queue_wait) if queue_wait is not None else None,
        "endedAt": to_rfc3339(status.ended_at) if status.ended_at else None,
        "progress": assessed.progress,
        "decision": {
            "verdict": decision.verdict,
            "reason": decision.reason,
            "slackSeconds": int(decision.slack_seconds) if decision.slack_seconds is not None else None,
            "restartOverheadSeconds": int(assessed.restart_overhead_seconds),
            "queueWaitNowSeconds": int(assessed.queue_wait_now_seconds),
            "priority": assessed.priority,
            "escalation": escalation,
        },
        "action": step.action,
        "explanation": step.explanation,
        "nextCapacity": step.next_capacity,
        "nextInstanceType": step.next_instance_type,
        "nextZone": step.next_zone,
        "nextRegion": assessed.next_region,
        "regionChoice": assessed.region_choice.to_dict() if assessed.region_choice else None,
        "nextTrainingPlan": plan_record(plan) if plan else None,
        "maxPendingSeconds": assessed.max_pending_seconds,
        "capacityWaitSeconds": int(assessed.capacity_wait_seconds),
        "deadlineAtRisk": at_risk,
        "backoffSeconds": step.backoff_seconds,
        "finishReason": step.finish_reason,
        "checkedAt": to_rfc3339(now),
        "nextPollSeconds": assessed.upcoming.seconds,
        "nextCheckReason": assessed.upcoming.reason,
        "checks": assessed.checks,
        "links": job_links,
    }


# --- gather, assess, act ------------------------------------------------------------------------


def check(state: dict[str, Any], *, execution_arn: str, now: datetime, region: str) -> dict[str, Any]:
    """The status of the run's current attempt, read in the region it runs in (`region`: home)."""
    where = Training.of_state(state).region or region
    with in_region(where if where != region else None):
        return _check(state, execution_arn=execution_arn, now=now, where=where)


def _gather(
    run: _Run, here: JobSpec, settings: QueueSettings, *, where: str, now: datetime
) -> tuple[Observation, dict[str, Any]]:
    """What AWS says of the attempt, and its Batch job."""
    batch_job = client("batch").describe_service_job(jobId=run.job_id)
    # Batch's status decides whether the job has ended; the SageMaker jobs of its attempts (one
    # per Batch retry) give the figures.
    earlier = [described for n in earlier_training_job_names(batch_job) if (described := describe_training_job(n))]
    status = normalize(batch_job, describe_training_job(training_job_name_of(batch_job)), now, earlier)
    queue = arn_in_region(settings.job_queue, where) if settings.job_queue else None
    wait_now = queue_wait_now(waiting_jobs(queue, batch_job.get("quotaShareName")), now)
    saved = read_progress(here.checkpoint_s3_uri, where)
    # A spot attempt's restart counts the copy a move would make; a spot-first job's on-demand one,
    # for a return to spot (no other attempt needs it: no S3 listing at their checks).
    capacity = run.history.current.capacity
    wants_copy = capacity == "spot" or (capacity == "on-demand" and run.spec.strategy == "spot-first")
    copy, size = copy_seconds(run.regions, here, where) if wants_copy else (0.0, 0)
    observation = Observation(
        status=status,
        region=where,
        priority=batch_job.get("schedulingPriority"),
        queue_wait_now_seconds=wait_now,
        progress=saved,
        copy_seconds=copy,
        checkpoint_bytes=size,
        regions=run.regions,
        excluded=run.excluded,
        zone=run.zone,
        zones=run.zones,
    )
    return observation, batch_job


def _check(state: dict[str, Any], *, execution_arn: str, now: datetime, where: str) -> dict[str, Any]:
    run = _read_state(state, execution_arn)
    spec, here = run.spec, spec_at(run.spec, where)
    settings = QueueSettings.from_environment()
    observation, batch_job = _gather(run, here, settings, where=where, now=now)
    limits = QueueLimits(settings.max_priority(spec.team))
    assessed = assess(here, observation, run.history, limits, now)
    if assessed.sighting is not None:
        note_sighting(assessed.sighting, execution_arn)
    if assessed.needs:  # the fleet's record or the training plans: read only when the decision needs them
        if "fleet" in assessed.needs:
            instances = here.option(assessed.instance_type).instance_count
            observation = replace(observation, fleet=fleet_record(run.regions, assessed.instance_type, now, instances))
        if "plans" in assessed.needs:
            plans = candidate_plans(spec, settings.team_policy(spec.team), run.regions)
            observation = replace(observation, plans=tuple(p for p in plans if _zone_reachable(p, run)))
        assessed = assess(here, observation, run.history, limits, now)
    return _act(
        run, assessed, settings, batch_job_id=batch_job["jobId"], execution_arn=execution_arn, where=where, now=now
    )


def _zones_by_region(state: dict[str, Any], resources: ResourceCheck | None) -> dict[str, tuple[str, ...]]:
    if resources is None:
        return {}
    home = home_region()
    return {region: tuple(found) for region in allowed_regions(state) if (found := resources.zones_in(region, home))}


def _zone_reachable(plan: PlanView, run: _Run) -> bool:
    """A plan a job of many instances can run on: its zone has a subnet of the stack of its region
    (an attempt on a plan runs in the plan's zone); any plan for a job that runs in no zone."""
    zones = run.zones_by_region.get(plan.region)
    return zones is None or plan.zone is None or plan.zone in zones


def _act(
    run: _Run,
    assessed: Assessment,
    settings: QueueSettings,
    *,
    batch_job_id: str,
    execution_arn: str,
    where: str,
    now: datetime,
) -> dict[str, Any]:
    """Raise the job's priority and publish DeadlineAtRisk when the assessment says so; `$.status`."""
    spec, status = run.spec, assessed.status
    escalation = None
    if assessed.escalation is not None:  # raised before its deadline forces on-demand (`spotline.core.capacity.queue`)
        raise_links = links.for_job(
            where, execution_arn=None, training_job_name=status.training_job_name, batch_job_id=batch_job_id
        )
        notified = raise_priority(batch_job_id, spec, assessed.escalation, settings, raise_links)
        escalation = assessed.escalation.to_dict() | {"notified": notified}
    job_links = links.for_job(
        where, execution_arn=execution_arn, training_job_name=status.training_job_name, batch_job_id=run.job_id
    )
    at_risk: dict[str, Any] | None = None
    if assessed.at_risk is not None:
        at_risk = _publish_at_risk(spec, assessed.at_risk, assessed.clock, settings=settings, links_=job_links)
    elif run.history.at_risk:
        at_risk = dict(run.history.at_risk)
    return _status_of(run, assessed, escalation=escalation, at_risk=at_risk, job_links=job_links, now=now)


def _publish_at_risk(
    spec: JobSpec, due: AtRisk, clock: JobClock, *, settings: QueueSettings, links_: dict[str, str]
) -> dict[str, Any]:
    """Count DeadlineAtRisk, page the team; the notice kept in the state."""
    # The metric's record carries how sure the work left is (searchable in Logs Insights).
    add_team_dimension(spec.team)
    metrics.add_metric(name="DeadlinesAtRisk", unit=MetricUnit.Count, value=1)
    metrics.add_metadata("workLeftSeconds", round(due.work_left_seconds))
    metrics.add_metadata("workLeftSpreadSeconds", round(due.spread_seconds))
    metrics.add_metadata("workLeftEstimated", due.estimated)
    notified = bool(settings.alert_topic_arn) and try_publish_alert(
        str(settings.alert_topic_arn),
        kind="DeadlineAtRisk",
        team=spec.team,
        job=spec.name,
        owner=spec.owner,
        what="Spotline can no longer meet a training job's deadline on any capacity.",
        cause=due.cause,
        next_step="Decide now: move the deadline, or accept a late model (the job keeps going on "
        f"{clock.capacity}); a job that has no capacity at its deadline is stopped (CapacityUnavailable). "
        "The work left is the figure in Why, with how sure it is; docs/runbook.md, DeadlineAtRisk.",
        links_=links_,
    )
    return due.record(notified)


def deadline_at_risk(
    spec: JobSpec,
    state: dict[str, Any],
    clock: JobClock,
    status: TrainingStatus,
    *,
    settings: QueueSettings,
    links_: dict[str, str],
) -> dict[str, Any] | None:
    """DeadlineAtRisk, once per run (`spotline.core.capacity.assess.at_risk_due`), sent when due. Returns
    the notice kept in the state."""
    history = _history(state, "")
    due = at_risk_due(spec, history, clock, status)
    if due is None:
        return dict(history.at_risk) if history.at_risk else None
    return _publish_at_risk(spec, due, clock, settings=settings, links_=links_)
