"""The service environment's capacity limit, shared by every job of a queue, as the AWS Batch
API reference documents it (CapacityLimit, maxCapacity): "if maxCapacity=50 and
capacityUnit=NUM_INSTANCES, you can run up to 50 instances concurrently. If you run 5 SageMaker
Training jobs that each use 10 instances, a subsequent job requiring 10 instances waits in the
queue until capacity is available."

A job holds its instances from the moment Batch hands its attempt to SageMaker (SCHEDULED) until
the training job ends; a job that does not fit stays RUNNABLE. Waiting jobs are admitted in
submission order, except in a queue with a scheduling policy, where `schedulingPriority` comes
first: "This only affects jobs in job queues with a quota-share or fair-share scheduling policy.
Jobs with a higher scheduling priority are scheduled before jobs with a lower scheduling
priority within a share" (API reference, SubmitServiceJob and UpdateServiceJob). A job that does
not fit holds back those behind it (no backfilling).

Partial: the order between shares (fair-share usage and weights), quota shares, borrowing and
preemption are not modelled; priority orders every waiting job of a queue as if in one share.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from spotline_dev.standin.clock import EPS

if TYPE_CHECKING:
    from spotline_dev.standin.batch_jobs import ServiceJob


def instances_of(request: dict[str, Any]) -> int:
    """The instances a service job needs: its payload's ResourceConfig.InstanceCount (1 if unreadable:
    SageMaker refuses such a payload when the attempt starts)."""
    try:
        payload = json.loads(request.get("serviceRequestPayload") or "{}")
        count = int(payload["ResourceConfig"]["InstanceCount"])
    except (ValueError, TypeError, KeyError):
        return 1
    return max(1, count)


def priority_of(job: ServiceJob) -> int:
    return int(job.request.get("schedulingPriority") or 0)


def admission_order(job: ServiceJob) -> tuple[int, float, int]:
    prioritized = job.queue.scheduling_policy_arn is not None
    return (-priority_of(job) if prioritized else 0, job.created, job.sequence)


def busy_instances(jobs: Iterable[ServiceJob], queue_name: str, t: float) -> int:
    """Instances held at `t` by the queue's jobs: an attempt created by then that has not ended."""
    return sum(
        job.instances
        for job in jobs
        if job.queue.name == queue_name and any(a.created <= t + EPS < a.plan.end for a in job.attempts)
    )


def fits(job: ServiceJob, jobs: list[ServiceJob], t: float) -> bool:
    """Whether the job may start an attempt at `t`: no waiting job of its queue is ahead of it, and
    its instances fit in what the queue's capacity leaves free."""
    limit = job.queue.capacity_instances
    if limit is None:
        return True
    order = admission_order(job)
    if any(j.awaiting_capacity and j is not job and admission_order(j) < order for j in jobs if j.queue is job.queue):
        return False
    return busy_instances(jobs, job.queue.name, t) + job.instances <= limit


def admit(jobs: list[ServiceJob], queue_name: str, t: float) -> None:
    """Capacity was freed at `t`: the waiting jobs that now fit, in admission order, start then."""
    waiting = sorted((j for j in jobs if j.awaiting_capacity and j.queue.name == queue_name), key=admission_order)
    if not waiting:
        return
    limit = waiting[0].queue.capacity_instances
    free = (limit or 0) - busy_instances(jobs, queue_name, t)
    for job in waiting:
        if limit is not None and job.instances > free:
            return  # it holds back those behind it
        free -= job.instances
        job.awaiting_capacity, job.next_attempt_at = False, t
