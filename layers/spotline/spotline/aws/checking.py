"""CheckTrainingStatus's work: read Batch, SageMaker and progress.json, then ask the status
mapping, the deadline policy and the lifecycle rules what they make of it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from spotline.aws.billing import describe_training_job
from spotline.aws.clients import client, in_region
from spotline.aws.observability import add_team_dimension, metrics
from spotline.aws.progress import read_progress
from spotline.aws.queue_state import QueueSettings, raise_priority, waiting_jobs
from spotline.aws.region_moves import copy_seconds, look_elsewhere
from spotline.aws.regions import allowed_regions, spec_at
from spotline.aws.reporting import try_publish_alert
from spotline.aws.spec_store import spec_of
from spotline.aws.training_plans import candidate_plans
from spotline.core import links
from spotline.core.durations import format_duration
from spotline.core.execution_state import MAX_REASON, clip
from spotline.core.lifecycle import CapacityWait, next_step, within_history_budget
from spotline.core.model import JobSpec, to_rfc3339
from spotline.core.policy import (
    DEFAULT_RESTART_OVERHEAD_SECONDS,
    Decision,
    JobClock,
    decide,
    describe_work_left,
    estimate_spread,
    measured_work_seconds,
    no_option_left,
    on_demand_needs,
    out_of_reach,
    remaining_work,
    training_since_checkpoint,
    work_left_at_best,
)
from spotline.core.polling import next_check
from spotline.core.queue import escalation, queue_wait_now
from spotline.core.regions import arn_in_region
from spotline.core.speeds import fastest_speed, measured_throughputs, primary_throughput, slowest_speed, type_speeds
from spotline.core.status import (
    TrainingStatus,
    earlier_training_job_names,
    normalize,
    training_job_name_of,
    waits_for_capacity,
)
from spotline.core.training_plans import fallback_plan, plan_ended, plan_record, plan_step
from spotline.core.training_request import pending_limit

STARTUP_AFTER_ACQUIRE_SECONDS = 600.0
"""Image download and start-up after instances are acquired (on top of the measured queue wait)."""


def restart_overhead(attempts: list[dict[str, Any]], current_wait: float | None, current_capacity: str) -> float:
    """What moving to on-demand costs in time: the longest measured on-demand wait for instances
    plus start-up, else a default. Spot waits are not used: they include waiting for spot
    capacity, which an on-demand restart does not."""
    waits = [
        float(a["finalStatus"]["queueWaitSeconds"])
        for a in attempts
        if a.get("capacity") == "on-demand" and (a.get("finalStatus") or {}).get("queueWaitSeconds") is not None
    ]
    if current_wait is not None and current_capacity == "on-demand":
        waits.append(current_wait)
    return max(waits) + STARTUP_AFTER_ACQUIRE_SECONDS if waits else DEFAULT_RESTART_OVERHEAD_SECONDS


def is_spot_missing(status: TrainingStatus, seconds_since_submit: float, overhead: float) -> bool:
    """Waiting for spot capacity: queued short of it, interrupted, or still starting after the
    time a start normally takes."""
    return (
        status.capacity_short
        or status.state == "interrupted"
        or (status.state in ("queued", "starting") and seconds_since_submit > overhead)
    )


def _checkpointed_at(saved: dict[str, Any]) -> datetime | None:
    """progress.json's updatedAt (when the training code wrote the last checkpoint); None if unreadable."""
    try:
        at = datetime.fromisoformat(str(saved["updatedAt"]))
    except (KeyError, ValueError):
        return None
    return at if at.tzinfo else None


def progress_of(
    spec: JobSpec,
    status: TrainingStatus,
    previous: list[dict[str, Any]],
    region: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """`spec` as the attempt runs in `region` (its checkpoint there). With `now`, a job training
    since its last checkpoint also gets `estimatedFraction`: the checkpointed fraction plus the
    seconds trained since (`training_since_checkpoint`) at the measured pace on its type."""
    saved = read_progress(spec.checkpoint_s3_uri, region)
    if saved:
        fraction = min(1.0, saved["step"] / saved["totalSteps"])
        measured = measured_work_seconds(fraction, saved.get("trainingSeconds"))
        by_type = saved.get("byInstanceType") if isinstance(saved.get("byInstanceType"), dict) else None
        if spec.alternatives and (throughput := primary_throughput(spec, measured_throughputs(by_type))):
            measured = saved["totalSteps"] / throughput  # in seconds on the primary type
        speeds = [s.to_dict() for s in type_speeds(spec, by_type)] if spec.alternatives else None
        since = 0.0
        if now is not None and status.state == "training" and status.secondary_status == "Training":
            interval = spec.checkpoint_interval_minutes * 60.0
            since = training_since_checkpoint(now, _checkpointed_at(saved), status.state_since, interval)
        work = measured or spec.expected_duration_seconds or spec.max_runtime_seconds  # on the primary type
        speed = next((float(s["speed"]) for s in speeds or [] if s["instanceType"] == status.instance_type), 1.0)
        return {
            "fraction": fraction,
            "step": saved["step"],
            "totalSteps": saved["totalSteps"],
            "source": "progress.json",
            "trainingSeconds": saved.get("trainingSeconds"),
            "estimatedWorkSeconds": round(measured) if measured is not None else None,
            "speeds": speeds,
            "trainingSinceCheckpointSeconds": int(since),
            "estimatedFraction": min(1.0, fraction + since * speed / work) if work else fraction,
        }
    total = spec.expected_duration_seconds or spec.max_runtime_seconds
    # Without checkpoints, earlier attempts' work is lost: Spotline's and Batch's own retries alike.
    trained = status.attempt_training_seconds
    if spec.checkpoint_s3_uri:
        trained = status.training_seconds
        trained += sum(int((a.get("finalStatus") or {}).get("trainingSeconds", 0)) for a in previous)
    return {
        "fraction": min(1.0, trained / total) if total else 0.0,
        "step": None,
        "totalSteps": None,
        "source": "training time (no progress.json yet)",
        "trainingSeconds": None,
        "estimatedWorkSeconds": None,
        "speeds": [s.to_dict() for s in type_speeds(spec, None)] if spec.alternatives else None,
        "trainingSinceCheckpointSeconds": None,
        "estimatedFraction": None,
    }


def _raise_priority_if_at_risk(
    spec: JobSpec,
    status: TrainingStatus,
    *,
    batch_job: dict[str, Any],
    decision: Decision,
    settings: QueueSettings,
    in_queue_for: timedelta,
    region: str,
) -> dict[str, Any] | None:
    """Raise a queued job's priority before its deadline forces on-demand (`spotline.core.queue`)."""
    max_priority = settings.max_priority(spec.team)
    if decision.verdict != "continue" or max_priority is None:
        return None
    raised = escalation(
        status,
        current_priority=int(batch_job.get("schedulingPriority") or spec.priority),
        max_priority=max_priority,
        slack_seconds=decision.slack_seconds,
        waited_seconds=max(0.0, in_queue_for.total_seconds()),
    )
    if raised is None:
        return None
    job_links = links.for_job(
        region, execution_arn=None, training_job_name=status.training_job_name, batch_job_id=batch_job["jobId"]
    )
    notified = raise_priority(batch_job["jobId"], spec, raised, settings, job_links)
    return raised.to_dict() | {"notified": notified}


def _priority_next(
    spec: JobSpec,
    batch_job: dict[str, Any],
    decision: Decision,
    raised: dict[str, Any] | None,
    settings: QueueSettings,
) -> int:
    """The job's priority from now on: as raised; the team's maximum for an on-demand fallback
    forced by the deadline (it must not wait behind lower-priority work); else as it is."""
    current = int(batch_job.get("schedulingPriority") or spec.priority)
    if raised:
        return int(raised["to"])
    if decision.verdict == "switch-to-on-demand":
        return max(current, settings.max_priority(spec.team) or current)
    return current


def capacity_wait_seconds(status: TrainingStatus, submitted: datetime, now: datetime) -> float:
    """How long the attempt has waited for capacity of its type so far (0 when not waiting)."""
    if not (status.capacity_short or waits_for_capacity(status.state, status.reason)):
        return 0.0
    since = status.state_since if status.state_since and status.state == "starting" else submitted
    return max(0.0, (now - since).total_seconds())


def _tried(spec: JobSpec, state: dict[str, Any], status: TrainingStatus) -> str:
    """Each attempt's tier and type (an on-demand one not yet selected: every type it asked for)."""
    training = state["training"]
    current = {**training, "instanceType": status.instance_type or training.get("instanceType")}
    any_type = "/".join(option.instance_type for option in spec.instance_options)

    def where(attempt: dict[str, Any]) -> str:
        fallback = any_type if attempt.get("capacity") == "on-demand" else spec.instance_type
        return f"{attempt.get('capacity')} on {attempt.get('instanceType') or fallback}"

    return ", ".join(where(a) for a in [*training.get("previousAttempts", []), current])


def deadline_at_risk(
    spec: JobSpec,
    state: dict[str, Any],
    clock: JobClock,
    status: TrainingStatus,
    *,
    settings: QueueSettings,
    links_: dict[str, str],
) -> dict[str, Any] | None:
    """DeadlineAtRisk, once per run, as soon as no capacity tier can meet the deadline while it is
    still ahead: cause, what was tried, what is left. Returns the notice kept in the state."""
    earlier = (state.get("status") or {}).get("deadlineAtRisk")
    running = status.state == "training"
    if earlier or status.finished or not no_option_left(clock, running=running):
        return earlier or None
    tried = _tried(spec, state, status)
    left = (clock.deadline - clock.now).total_seconds() if clock.deadline else 0.0
    work = work_left_at_best(clock, running=running)
    spread = work * estimate_spread(clock)
    cause = (
        f"{format_duration(left)} left before the deadline; {describe_work_left(clock, running=running)}"
        f"{'' if running else ', plus a restart'}: even at best it ends after the deadline, on any capacity "
        f"(tried: {tried})"
    )
    # The metric's record carries how sure the work left is (searchable in Logs Insights).
    add_team_dimension(spec.team)
    metrics.add_metric(name="DeadlinesAtRisk", unit=MetricUnit.Count, value=1)
    metrics.add_metadata("workLeftSeconds", round(work))
    metrics.add_metadata("workLeftSpreadSeconds", round(spread))
    metrics.add_metadata("workLeftEstimated", clock.pace_measured_seconds > 0)
    notified = bool(settings.alert_topic_arn) and try_publish_alert(
        str(settings.alert_topic_arn),
        kind="DeadlineAtRisk",
        team=spec.team,
        job=spec.name,
        owner=spec.owner,
        what="Spotline can no longer meet a training job's deadline on any capacity.",
        cause=cause,
        next_step="Decide now: move the deadline, or accept a late model (the job keeps going on "
        f"{clock.capacity}); a job that has no capacity at its deadline is stopped (CapacityUnavailable). "
        "The work left is the figure in Why, with how sure it is; docs/runbook.md, DeadlineAtRisk.",
        links_=links_,
    )
    return {
        "at": to_rfc3339(clock.now),
        "cause": clip(cause, MAX_REASON),
        "notified": notified,
        "workLeftSeconds": round(work),
        "workLeftSpreadSeconds": round(spread),
        "workLeftEstimated": clock.pace_measured_seconds > 0,
    }


def check(state: dict[str, Any], *, execution_arn: str, now: datetime, region: str) -> dict[str, Any]:
    """The status of the run's current attempt, read in the region it runs in (`region`: home)."""
    where = state["training"].get("region") or region
    with in_region(where if where != region else None):
        return _check(state, execution_arn=execution_arn, now=now, where=where)


def _check(state: dict[str, Any], *, execution_arn: str, now: datetime, where: str) -> dict[str, Any]:
    spec = spec_of(state)
    here = spec_at(spec, where)
    training = state["training"]
    previous: list[dict[str, Any]] = training.get("previousAttempts", [])
    batch_job = client("batch").describe_service_job(jobId=training["jobId"])
    # Batch's status decides whether the job has ended; the SageMaker jobs of its attempts (one
    # per Batch retry) give the figures.
    earlier = [described for n in earlier_training_job_names(batch_job) if (described := describe_training_job(n))]
    status = normalize(batch_job, describe_training_job(training_job_name_of(batch_job)), now, earlier)
    submitted = datetime.fromisoformat(training["submittedAt"])
    first_submitted = datetime.fromisoformat(previous[0]["submittedAt"]) if previous else submitted
    queue_wait = (status.started_at - submitted).total_seconds() if status.started_at else None
    capacity = training["capacity"]
    settings = QueueSettings.from_environment()
    queue = arn_in_region(settings.job_queue, where) if settings.job_queue else None
    wait_now = queue_wait_now(waiting_jobs(queue, batch_job.get("quotaShareName")), now)
    overhead = max(restart_overhead(previous, queue_wait, capacity), wait_now + STARTUP_AFTER_ACQUIRE_SECONDS)
    progress = progress_of(here, status, previous, where, now)
    copy, size = copy_seconds(state, here, where) if capacity == "spot" else (0.0, 0)
    since_submit = (now - submitted).total_seconds()
    clock = JobClock(
        now=now,
        started_at=first_submitted,
        deadline=spec.deadline_at,
        total_work_seconds=float(
            progress["estimatedWorkSeconds"] or spec.expected_duration_seconds or spec.max_runtime_seconds
        )
        / slowest_speed(progress),
        fastest_speed=fastest_speed(progress) / slowest_speed(progress),
        progress=progress["fraction"],
        capacity="spot" if capacity == "spot" else "on-demand",  # a plan's attempt never goes back to spot
        spot_missing=is_spot_missing(status, since_submit, overhead),
        restart_overhead_seconds=overhead + copy,  # a move to another region copies the checkpoint first
        queue_wait_seconds=wait_now,
        work_measured=progress["estimatedWorkSeconds"] is not None,
        trained_since_checkpoint=(progress["estimatedFraction"] or progress["fraction"]) - progress["fraction"],
        since_checkpoint_seconds=float(progress["trainingSinceCheckpointSeconds"] or 0),
        pace_measured_seconds=float(progress["trainingSeconds"] or 0) if progress["estimatedWorkSeconds"] else 0.0,
        checkpoint_interval_seconds=spec.checkpoint_interval_minutes * 60.0,
    )
    decision = decide(clock)
    raised = _raise_priority_if_at_risk(
        spec,
        status,
        batch_job=batch_job,
        decision=decision,
        settings=settings,
        in_queue_for=now - submitted,
        region=where,
    )
    spot_attempts = sum(1 for a in [*previous, training] if a["capacity"] == "spot")
    wait = CapacityWait(
        instance_type=status.instance_type or training.get("instanceType") or spec.instance_type,
        waited_seconds=capacity_wait_seconds(status, submitted, now),
        deadline_passed=spec.deadline_at is not None and now >= spec.deadline_at,
        plan_ended=plan_ended(training, now),
        on_demand_attempts=sum(1 for a in [*previous, training] if a["capacity"] == "on-demand"),
    )
    checks = int((state.get("status") or {}).get("checks") or 0) + 1
    step = within_history_budget(
        next_step(
            spec,
            status,
            capacity=capacity,
            spot_attempts=spot_attempts,
            decision=decision,
            seed=f"{execution_arn}:{training['attempt']}",
            wait=wait,
        ),
        checks,
    )
    step, region_choice, next_region = look_elsewhere(
        state,
        spec,
        status,
        clock,
        step,
        where=where,
        execution=execution_arn,
        size=size,
        restart_seconds=overhead,
    )
    plan = None
    if step.next_capacity == "on-demand" and capacity == "spot" and spec.training_plan:
        plan = fallback_plan(
            spec,
            candidate_plans(spec, settings.team_policy(spec.team), allowed_regions(state)),
            now,
            min_seconds=on_demand_needs(clock),
        )
        if plan is not None:
            step = plan_step(step, plan)
    # Only a job that may still move to on-demand has a moment of its own to look again at.
    upcoming = next_check(
        status,
        expected_duration=spec.expected_duration_seconds,
        slack_seconds=decision.slack_seconds,
        may_switch=capacity == "spot" and spec.strategy == "spot-first" and not out_of_reach(clock),
    )
    job_links = links.for_job(
        where,
        execution_arn=execution_arn,
        training_job_name=status.training_job_name,
        batch_job_id=training["jobId"],
    )
    at_risk = deadline_at_risk(spec, state, clock, status, settings=settings, links_=job_links)
    left = (spec.deadline_at - now).total_seconds() if spec.deadline_at else None
    return {
        "jobId": training["jobId"],
        "instanceType": status.instance_type or training.get("instanceType"),  # None until SageMaker selects it
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
        "progress": progress,
        "decision": {
            "verdict": decision.verdict,
            "reason": decision.reason,
            "slackSeconds": int(decision.slack_seconds) if decision.slack_seconds is not None else None,
            "restartOverheadSeconds": int(overhead),
            "queueWaitNowSeconds": int(wait_now),
            "priority": _priority_next(spec, batch_job, decision, raised, settings),
            "escalation": raised,
        },
        "action": step.action,
        "explanation": step.explanation,
        "nextCapacity": step.next_capacity,
        "nextInstanceType": step.next_instance_type,
        "nextRegion": next_region,
        "regionChoice": region_choice,
        "nextTrainingPlan": plan_record(plan) if plan else None,
        # An on-demand fallback may look for capacity as long as the deadline leaves after the work.
        "maxPendingSeconds": pending_limit(left - remaining_work(clock) - STARTUP_AFTER_ACQUIRE_SECONDS)
        if left is not None and step.next_capacity == "on-demand"
        else None,
        "capacityWaitSeconds": int(wait.waited_seconds),
        "deadlineAtRisk": at_risk,
        "backoffSeconds": step.backoff_seconds,
        "finishReason": step.finish_reason,
        "checkedAt": to_rfc3339(now),
        "nextPollSeconds": upcoming.seconds,
        "nextCheckReason": upcoming.reason,
        "checks": checks,
        "links": job_links,
    }
