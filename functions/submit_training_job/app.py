"""SubmitTrainingJob: queue the SageMaker training job on AWS Batch.

The clientToken, job name and tags are derived from execution, attempt and capacity. Batch
rejects a repeated clientToken, so a retried or re-run invocation finds the job it already
created (`spotline.aws.submission`) instead of submitting a second one.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws import clock, training_settings
from spotline.aws.clients import in_region
from spotline.aws.observability import add_team_dimension, bind_execution, log_metrics, logger, metrics
from spotline.aws.regions import copy_checkpoint, home_region, place_attempt, spec_at
from spotline.aws.request_check import submit_service_job_request
from spotline.aws.spec_store import spec_of
from spotline.aws.submission import submit_once
from spotline.aws.team_registry import policy_for
from spotline.core import links
from spotline.core.execution_state import attempt_history
from spotline.core.model import JobSpec, to_rfc3339
from spotline.core.regions import arn_in_region
from spotline.core.training_request import Attempt, TrainingSettings, training_job_name

FIRST_POLL_SECONDS = 60
COPY_RESERVE_SECONDS = 90
"""Of the invocation's time (at most half of it), what a checkpoint copy leaves for the object in
flight and the submission."""


def _next_attempt(state: dict[str, Any], spec: JobSpec) -> Attempt:
    previous = state.get("training")
    number = previous["attempt"] + 1 if previous else 1
    status = state.get("status") or {}
    decided = status.get("nextCapacity")
    capacity = decided or ("on-demand" if spec.strategy == "on-demand" else "spot")
    # The priority the last check gave the job (raised when its deadline was at risk in the queue).
    priority = (status.get("decision") or {}).get("priority") if decided else None
    # The type the last check moved a spot attempt to (else the one it ran on, else the primary),
    # and how long an on-demand fallback may wait for capacity.
    instance_type = (status.get("nextInstanceType") or (previous or {}).get("instanceType")) if decided else None
    pending = status.get("maxPendingSeconds") if decided == "on-demand" else None
    plan = (status.get("nextTrainingPlan") or {}) if decided == "training-plan" else {}
    if plan:
        instance_type = plan.get("instanceType")
    return Attempt(
        state["executionArn"],
        number,
        capacity,
        int(priority) if priority is not None else None,
        instance_type=str(instance_type) if instance_type else None,
        max_pending_seconds=int(pending) if pending is not None else None,
        training_plan_arn=plan.get("arn"),
    )


@log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    state = {**event["input"], "executionArn": event["execution"]}
    spec = spec_of(state)
    attempt = _next_attempt(state, spec)
    placement = place_attempt(state, spec, attempt.capacity, clock.now())
    where = placement.region
    there = spec_at(spec, where)
    copied = None
    previous_region = (state.get("training") or {}).get("region") or home_region()
    if there.checkpoint_s3_uri and previous_region != where:
        # The latest checkpoint is where the last attempt ran, or at home for a run's first attempt
        # (an earlier run of the job may have left one): the attempt here resumes from a copy. A large
        # one is copied over several invocations: CheckpointCopyIncomplete, which the task retries.
        source = spec_at(spec, previous_region).checkpoint_s3_uri or ""
        remaining = context.get_remaining_time_in_millis() / 1000
        until = time.monotonic() + remaining - min(COPY_RESERVE_SECONDS, remaining / 2)
        copied = copy_checkpoint(source, there.checkpoint_s3_uri, previous_region, where, until=until)
        if copied.objects:
            metrics.add_metric(name="CheckpointCopies", unit=MetricUnit.Count, value=1)
        else:
            copied = None  # nothing saved yet: nothing copied
    queue = arn_in_region(os.environ["JOB_QUEUE"], where)
    share = policy_for(spec.team).share_of(spec.team)
    request = submit_service_job_request(there, attempt, queue, _settings(state, where), share)
    with in_region(where):
        submitted = submit_once(request)
    name = training_job_name(spec, attempt)
    region = where
    logger.info(
        "Training job submitted",
        extra={
            "jobId": submitted.job_id,
            "foundEarlierSubmission": submitted.found,
            "attempt": attempt.number,
            "capacity": attempt.capacity,
            "region": where,
            "payloadTrainingJobName": name,  # Batch names the training job itself (AWSBatch<name><id>)
        },
    )
    add_team_dimension(spec.team)
    metrics.add_metric(name="JobsSubmitted", unit=MetricUnit.Count, value=1)
    # Earlier attempts as compact records (bounded: the state is capped at 256 KiB).
    history = attempt_history(state.get("training"), state.get("status"))
    return {
        "attempt": attempt.number,
        "capacity": attempt.capacity,
        "instanceType": attempt.instance_type if attempt.capacity != "on-demand" else None,
        # The plan a training-plan attempt runs on, and when its instances start to be terminated.
        "trainingPlan": (state.get("status") or {}).get("nextTrainingPlan") if attempt.training_plan_arn else None,
        "jobId": submitted.job_id,
        "jobArn": submitted.job_arn,
        "region": where,
        "regionChoice": placement.choice["reason"] if placement.choice else None,
        "checkpointCopy": copied.to_dict() if copied else None,
        "jobName": submitted.job_name,
        "submittedAt": to_rfc3339(clock.now()),
        "firstPollSeconds": FIRST_POLL_SECONDS,
        # No training job yet: Batch creates and names it when the attempt starts (CheckTrainingStatus
        # reads its name from DescribeServiceJob and links it then).
        "links": links.for_job(
            region, execution_arn=event["execution"], training_job_name=None, batch_job_id=submitted.job_id
        ),
        "previousAttempts": history,
    }


def _settings(state: dict[str, Any], region: str) -> TrainingSettings:
    """The network and encryption settings of the stack in `region` (this one's at home); a job
    that mounts file systems runs only in that stack's subnets that reach them (ValidateResources'
    `$.resources.subnets` at home, `$.resources.regions.subnets` in a peer region)."""
    settings = training_settings.in_region(region)
    resources = state.get("resources") or {}
    if region == home_region():
        pinned = resources.get("subnets")
    else:
        pinned = ((resources.get("regions") or {}).get("subnets") or {}).get(region)
    return settings if not pinned else replace(settings, subnet_ids=tuple(str(s) for s in pinned))
