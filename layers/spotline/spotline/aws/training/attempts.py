"""SubmitTrainingJob's work: the next attempt of a run, placed, its checkpoint copied where it
runs, submitted once, and recorded as the run's new `$.training`.

The clientToken, job name and tags are derived from execution, attempt and capacity. Batch
rejects a repeated clientToken, so a retried or re-run invocation finds the job it already
created (`spotline.aws.training.submission`) instead of submitting a second one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from aws_lambda_powertools.metrics import MetricUnit

from spotline.aws.common.clients import in_region
from spotline.aws.common.observability import add_team_dimension, logger, metrics
from spotline.aws.regions.regions import allowed_regions, copy_checkpoint, home_region, place_attempt, spec_at
from spotline.aws.teams.team_registry import policy_for
from spotline.aws.training import training_settings
from spotline.aws.training.request_check import submit_service_job_request
from spotline.aws.training.submission import submit_once
from spotline.core.capacity.policy import first_checkpoint_minutes
from spotline.core.capacity.zones import ZoneChoice, choose_zone
from spotline.core.common import links
from spotline.core.regions.regions import arn_in_region
from spotline.core.spec.model import JobSpec, to_rfc3339
from spotline.core.state import CheckpointCopy, ResourceCheck, RunStatus, Training
from spotline.core.training.training_request import Attempt, Capacity, TrainingSettings, training_job_name

FIRST_POLL_SECONDS = 60
COPY_RESERVE_SECONDS = 90
"""Of the invocation's time (at most half of it), what a checkpoint copy leaves for the object in
flight and the submission."""


def next_attempt(
    execution_arn: str, spec: JobSpec, training: Training | None, status: RunStatus | None, now: datetime | None = None
) -> Attempt:
    """The attempt after `training` (the first without one), as the last check `status` decided it;
    a spot attempt submitted `now` saves first early when the work must be measured sooner."""
    number = training.attempt + 1 if training else 1
    decided = status.next_capacity if status else None
    capacity = cast(Capacity, decided or ("on-demand" if spec.strategy == "on-demand" else "spot"))
    first = _first_checkpoint(spec, status, now) if capacity == "spot" and now is not None else None
    if status is None or not decided:
        return Attempt(execution_arn, number, capacity, first_checkpoint_minutes=first)
    # The priority the last check gave the job (raised when its deadline was at risk in the queue);
    # the type it moved a spot attempt to (else the one it ran on, else the primary); how long an
    # on-demand fallback may wait for capacity; the plan a training-plan attempt runs on.
    instance_type = status.next_instance_type or (training.instance_type if training else None)
    plan = status.next_training_plan if decided == "training-plan" else None
    if plan:
        instance_type = plan.instance_type
    return Attempt(
        execution_arn,
        number,
        capacity,
        status.decision.priority,
        instance_type=instance_type or None,
        max_pending_seconds=status.max_pending_seconds if decided == "on-demand" else None,
        training_plan_arn=plan.arn if plan else None,
        first_checkpoint_minutes=first,
    )


def _first_checkpoint(spec: JobSpec, status: RunStatus | None, now: datetime) -> int | None:
    """From the manifest, and the last check's progress and restart estimate when there was one."""
    if status is None:
        return first_checkpoint_minutes(spec, now)
    return first_checkpoint_minutes(
        spec,
        now,
        fraction_done=status.progress.fraction,
        work_measured=status.progress.estimated_work_seconds is not None,
        restart_seconds=status.decision.restart_overhead_seconds,
    )


def submit_next_attempt(
    state: Mapping[str, Any],
    spec: JobSpec,
    *,
    execution_arn: str,
    training: Training | None,
    status: RunStatus | None,
    now: datetime,
    seconds_left: float,
) -> Training:
    """Submit the run's next attempt; returns it as `$.training`. `seconds_left`: the invocation's
    remaining time, which bounds a checkpoint copy (CheckpointCopyIncomplete: the task retries it)."""
    attempt = next_attempt(execution_arn, spec, training, status, now)
    placement = place_attempt(
        training, status, allowed=allowed_regions(state), spec=spec, capacity=attempt.capacity, now=now
    )
    where = placement.region
    there = spec_at(spec, where)
    copied = None
    previous_region = (training.region if training else None) or home_region()
    if there.checkpoint_s3_uri and previous_region != where:
        # The latest checkpoint is where the last attempt ran, or at home for a run's first attempt
        # (an earlier run of the job may have left one): the attempt here resumes from a copy. A large
        # one is copied over several invocations: CheckpointCopyIncomplete, which the task retries.
        source = spec_at(spec, previous_region).checkpoint_s3_uri or ""
        until = time.monotonic() + seconds_left - min(COPY_RESERVE_SECONDS, seconds_left / 2)
        copied = copy_checkpoint(source, there.checkpoint_s3_uri, previous_region, where, until=until)
        if copied.objects:
            metrics.add_metric(name="CheckpointCopies", unit=MetricUnit.Count, value=1)
        else:
            copied = None  # nothing saved yet: nothing copied
    queue = arn_in_region(os.environ["JOB_QUEUE"], where)
    share = policy_for(spec.team).share_of(spec.team)
    settings = network_settings(state, where)
    plan = status.next_training_plan if status and attempt.training_plan_arn else None
    zone = _zone(state, where, settings, training, status, plan_zone=plan.zone if plan else None)
    if zone is not None:
        settings = replace(settings, subnet_ids=zone.subnets)
    request = submit_service_job_request(there, attempt, queue, settings, share)
    with in_region(where):
        submitted = submit_once(request)
    logger.info(
        "Training job submitted",
        extra={
            "jobId": submitted.job_id,
            "foundEarlierSubmission": submitted.found,
            "attempt": attempt.number,
            "capacity": attempt.capacity,
            "region": where,
            "firstCheckpointMinutes": attempt.first_checkpoint_minutes,
            # Batch names the training job itself (AWSBatch<name><id>)
            "payloadTrainingJobName": training_job_name(spec, attempt),
        },
    )
    add_team_dimension(spec.team)
    metrics.add_metric(name="JobsSubmitted", unit=MetricUnit.Count, value=1)
    return Training(
        attempt=attempt.number,
        capacity=attempt.capacity,
        instance_type=attempt.instance_type if attempt.capacity != "on-demand" else None,
        # The plan a training-plan attempt runs on, and when its instances start to be terminated.
        training_plan=status.next_training_plan if status and attempt.training_plan_arn else None,
        job_id=submitted.job_id,
        job_arn=submitted.job_arn,
        job_name=submitted.job_name,
        region=where,
        region_choice=placement.choice["reason"] if placement.choice else None,
        zone=zone.zone if zone else None,
        zone_choice=zone.reason if zone else None,
        checkpoint_copy=CheckpointCopy.from_state(copied.to_dict()) if copied else None,
        submitted_at=to_rfc3339(now),
        first_poll_seconds=FIRST_POLL_SECONDS,
        # No training job yet: Batch creates and names it when the attempt starts (CheckTrainingStatus
        # reads its name from DescribeServiceJob and links it then).
        links=links.for_job(where, execution_arn=execution_arn, training_job_name=None, batch_job_id=submitted.job_id),
        # Earlier attempts as compact records (bounded: the state is capped at 256 KiB).
        previous_attempts=training.history(status) if training else (),
    )


def network_settings(state: Mapping[str, Any], region: str) -> TrainingSettings:
    """The network and encryption settings of the stack in `region` (this one's at home); a job
    that mounts file systems runs only in that stack's subnets that reach them (ValidateResources'
    `$.resources.subnets` at home, `$.resources.regions.subnets` in a peer region)."""
    settings = training_settings.in_region(region)
    resources = ResourceCheck.in_state(state)
    pinned = resources.pinned_subnets(region, home_region()) if resources else None
    return settings if not pinned else replace(settings, subnet_ids=tuple(str(s) for s in pinned))


def _zone(
    state: Mapping[str, Any],
    region: str,
    settings: TrainingSettings,
    training: Training | None,
    status: RunStatus | None,
    *,
    plan_zone: str | None,
) -> ZoneChoice | None:
    """The one zone of an attempt of many instances (ValidateResources' `$.resources.zones` at home,
    `$.resources.regions.zones` in a peer region, within the subnets the attempt may use); None where
    the job needs no zone or none is known."""
    resources = ResourceCheck.in_state(state)
    known = resources.zones_in(region, home_region()) if resources else None
    if not known:
        return None
    usable = set(settings.subnet_ids)
    zones = {zone: [s for s in subnets if s in usable] for zone, subnets in known.items()}
    zones = {zone: subnets for zone, subnets in zones.items() if subnets}
    if not zones:
        return None
    previous = training.zone if training and (training.region or home_region()) == region else None
    return choose_zone(zones, previous, status, plan_zone)
