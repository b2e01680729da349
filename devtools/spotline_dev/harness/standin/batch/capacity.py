"""The service environment's capacity limit, shared by every job of a queue, as the AWS Batch
API reference documents it (CapacityLimit, maxCapacity): "if maxCapacity=50 and
capacityUnit=NUM_INSTANCES, you can run up to 50 instances concurrently. If you run 5 SageMaker
Training jobs that each use 10 instances, a subsequent job requiring 10 instances waits in the
queue until capacity is available." In a quota management enabled service environment the
limits are per instance type: "only ml.m5.large instances count against this limit, and jobs
requiring other instance types wait until a matching capacity limit is configured" (see
`Queue.capacity_for`).

A job holds its instances from the moment Batch hands its attempt to SageMaker (SCHEDULED) until
the training job ends; a job that does not fit stays RUNNABLE. Waiting jobs are admitted in
submission order, except in a queue with a scheduling policy, where `schedulingPriority` comes
first: "This only affects jobs in job queues with a quota-share or fair-share scheduling policy.
Jobs with a higher scheduling priority are scheduled before jobs with a lower scheduling
priority within a share" (API reference, UpdateServiceJob.schedulingPriority). A job that does
not fit holds back those behind it (no backfilling).

Partial: the order between fair-share shares (usage and weights) is not modelled; priority
orders every waiting job of a fair-share queue as if in one share.

A queue with quota shares (`batch_shares`) is scheduled by `quota_schedule`, as the AWS Batch user
guide documents quota management:

- "Creating quota shares": quota shares "function as virtual queues within the associated job
  queue that the AWS Batch scheduler iterates between when scheduling". A share's capacity is
  counted per instance type: each capacity limit is "the type and maximum quantity of a
  particular resource that can be allocated to jobs in the quota share without borrowing" (API
  reference, QuotaShareCapacityLimit), and Batch restores "borrowed capacity back to a quota
  share when jobs arrive" ("Preemption"). So each capacity limit of a share is its own line
  (schedulingPriority, then submission order, no backfilling within it), and the lines' front
  jobs are looked at in submission order (API reference, QuotaSharePolicy: idle resources are
  assigned to borrowing shares "FIFO"). The guides do not say whether a job waiting for one
  instance type holds back its share's jobs of another; the stand-in's does not, so a share
  under its limit for a type gets the next instance of that type (taken back from a borrowing
  share if need be), the fairness the guide promises.
- A job first uses its own share's capacity limit; beyond it, a LEND_AND_BORROW share borrows
  the idle capacity of LEND and LEND_AND_BORROW shares ("Quota shares"), within its borrowLimit
  (a percentage of its own limit; -1 unlimited). Everything borrowed stays within the idle
  capacity of lending shares; a share with jobs waiting lends none of its idle capacity to new
  borrowers; the service environment's capacity is never exceeded.
- "Preemption": Batch "stops a SCHEDULED, STARTING, or RUNNING job to create capacity for a
  RUNNABLE job". Cross-share preemption "restore[s] borrowed capacity back to a quota share when
  jobs arrive": a waiting job within its own share's limit stops jobs running beyond their
  share's limit. In-share preemption (the share's inSharePreemption ENABLED) "allows higher
  priority RUNNABLE jobs to trigger preemptions of lower priority jobs within the same quota
  share". Whom to stop: Batch "considers the number and type of instances a job is borrowing,
  relative priorities of the jobs and the duration of the jobs, and applies a custom heuristic";
  the stand-in's heuristic stops the lowest schedulingPriority first, then the most recently
  started, and no more jobs than the waiting one needs (none if stopping every candidate would
  not make room for it). A stopped attempt holds its instances until its training job stopped.
- "Jobs stuck in RUNNABLE due to misconfiguration": a job larger than its share's limits (plus
  what it may borrow) or than the service environment waits with the documented statusReason,
  holding back its share's line of its instance type ("Jobs stuck in a RUNNABLE status": "a
  RUNNABLE job blocking the front of the queue"; terminating it allows "the next job to advance
  to the head of the job queue").
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spotline_dev.harness.standin.base.clock import EPS
from spotline_dev.harness.standin.base.records import Queue, QuotaShare, ServiceJob

CROSS_SHARE_REASON = "Cross-share preemption triggered to reclaim borrowed capacity"  # "Service job preemption events"
IN_SHARE_REASON = "In-share preemption triggered by a higher priority job"  # the stand-in's wording
_MISCONFIGURED = "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - "
ENVIRONMENT_TOO_SMALL = (
    "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE - Service environment(s) associated with the job queue "
    "cannot meet the capacity requirement of the job."
)


def _first_choice(request: dict[str, Any]) -> dict[str, Any]:
    """The payload's ResourceConfig, or for one with InstancePreferences its first preference (with
    the job-level InstanceCount when the preference has none). Stand-in: the Batch guides document
    capacity per ResourceConfig.InstanceType only; how Batch counts a job with InstancePreferences
    is not documented, and the stand-in counts it in its first (most preferred) type."""
    resources = json.loads(request.get("serviceRequestPayload") or "{}")["ResourceConfig"]
    preferences = resources.get("InstancePreferences")
    if preferences:
        return {"InstanceCount": resources.get("InstanceCount"), **preferences[0]}
    return dict(resources)


def instance_type_of(request: dict[str, Any]) -> str:
    """The payload's ResourceConfig.InstanceType ("" if unreadable): the job's capacityUnit."""
    try:
        return str(_first_choice(request)["InstanceType"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return ""


def instances_of(request: dict[str, Any]) -> int:
    """The instances a service job needs: its payload's ResourceConfig.InstanceCount (1 if unreadable:
    SageMaker refuses such a payload when the attempt starts)."""
    try:
        count = int(_first_choice(request)["InstanceCount"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return 1
    return max(1, count)


def priority_of(job: ServiceJob) -> int:
    return int(job.request.get("schedulingPriority") or 0)


def admission_order(job: ServiceJob) -> tuple[int, float, int]:
    prioritized = job.queue.scheduling_policy_arn is not None
    return (-priority_of(job) if prioritized else 0, job.created, job.sequence)


def busy_instances(jobs: Iterable[ServiceJob], queue_name: str, t: float, instance_type: str | None = None) -> int:
    """Instances held at `t` by the queue's jobs (of the same environment limit as `instance_type`,
    if given): an attempt created by then that has not ended."""
    return sum(
        job.instances
        for job in jobs
        if job.queue.name == queue_name
        and (instance_type is None or job.queue.same_limit(job.instance_type, instance_type))
        and any(a.created <= t + EPS < a.plan.end for a in job.attempts)
    )


def fits(job: ServiceJob, jobs: list[ServiceJob], t: float) -> bool:
    """Whether the job may start an attempt at `t`: no waiting job of its queue (counting against
    the same limit) is ahead of it, and its instances fit in what the limit leaves free."""
    limit = job.queue.capacity_for(job.instance_type)
    if limit is None:
        return True
    order, queue = admission_order(job), job.queue
    if any(
        j.awaiting_capacity
        and j is not job
        and admission_order(j) < order
        and queue.same_limit(j.instance_type, job.instance_type)
        for j in jobs
        if j.queue is queue
    ):
        return False
    return busy_instances(jobs, queue.name, t, job.instance_type) + job.instances <= limit


def admit(jobs: list[ServiceJob], queue_name: str, t: float) -> None:
    """Capacity was freed at `t`: the waiting jobs that now fit, in admission order, start then
    (per environment limit: a job that does not fit holds back those behind it of its limit)."""
    waiting = sorted((j for j in jobs if j.awaiting_capacity and j.queue.name == queue_name), key=admission_order)
    free: dict[str, int | None] = {}
    blocked: set[str] = set()
    for job in waiting:
        queue = job.queue
        key = job.instance_type if queue.counts_instance_types else ""
        if key in blocked:
            continue
        if key not in free:
            limit = queue.capacity_for(job.instance_type)
            free[key] = None if limit is None else limit - busy_instances(jobs, queue_name, t, job.instance_type)
        room = free[key]
        if room is not None and job.instances > room:
            blocked.add(key)  # it holds back those behind it
            continue
        free[key] = None if room is None else room - job.instances
        job.awaiting_capacity, job.next_attempt_at = False, t


# --- quota management (queues with quota shares) ------------------------------------------


@dataclass
class QuotaDecision:
    """What the scheduler does at one moment: jobs that start now, attempts it stops (and why)."""

    admitted: list[ServiceJob] = field(default_factory=list)
    preempted: list[tuple[ServiceJob, str]] = field(default_factory=list)


def holds(job: ServiceJob, t: float) -> bool:
    """Whether the job holds its instances at `t`: admitted to start now, or an attempt under way."""
    return job.admitted or any(a.created <= t + EPS < a.plan.end for a in job.attempts)


def unit_of(job: ServiceJob) -> str:
    """The capacity unit a job counts against in its quota share: its instance type."""
    return job.instance_type


def share_order(job: ServiceJob) -> tuple[int, float, int]:
    """Within a quota share: schedulingPriority, then submission."""
    return (-priority_of(job), job.created, job.sequence)


def misconfiguration(job: ServiceJob) -> str | None:
    """The statusReason of a job that can never start ("Jobs stuck in RUNNABLE due to
    misconfiguration": the service environment, or its share's limits and borrowing, too small)."""
    cap, share, n = job.queue.capacity_for(job.instance_type), job.quota_share, job.instances
    if cap is not None and n > cap:
        return ENVIRONMENT_TOO_SMALL
    if share is None:
        return None
    if unit_of(job) not in share.limits:  # "wait until a matching capacity limit is configured"
        return _MISCONFIGURED + "Job requirements exceed quota share capacity limits."
    limit = share.limit(unit_of(job))
    if not share.borrows:
        return _MISCONFIGURED + "Job requirements exceed quota share capacity limits." if n > limit else None
    if not _within_borrow_limit(share, n - limit, limit):
        return _MISCONFIGURED + "Job requirements exceed quota share capacity limits and borrow limits."
    others = sum(s.limit(unit_of(job)) for s in job.queue.quota_shares.values() if s is not share and s.lends)
    if n > limit + others:
        return _MISCONFIGURED + "Job requires borrowing that exceeds all configured borrowable capacity."
    return None


class _Held:
    """The jobs of one queue holding instances, counted per quota share and capacity unit."""

    def __init__(self, jobs: Iterable[ServiceJob]) -> None:
        self.jobs = list(jobs)

    def total_for(self, job: ServiceJob) -> int:
        """Instances held against the environment limit the job counts against."""
        return sum(j.instances for j in self.jobs if job.queue.same_limit(j.instance_type, job.instance_type))

    def of(self, share: QuotaShare, unit: str) -> int:
        return sum(j.instances for j in self.jobs if j.quota_share is share and unit_of(j) == unit)

    def plus(self, job: ServiceJob) -> _Held:
        return _Held([*self.jobs, job])

    def minus(self, gone: Iterable[ServiceJob]) -> _Held:
        ids = {j.job_id for j in gone}
        return _Held(j for j in self.jobs if j.job_id not in ids)


def _within_borrow_limit(share: QuotaShare, borrowed: int, limit: int) -> bool:
    return share.borrow_limit < 0 or borrowed * 100 <= limit * share.borrow_limit


def _fits(job: ServiceJob, held: _Held, waiting: list[ServiceJob]) -> bool:
    """Whether the job may start on top of `held`: the environment has room, its share's limit
    (plus what it may borrow) allows it, and everything borrowed stays within the idle capacity of
    lending shares; a new borrower gets none of the idle capacity other shares' waiting jobs need."""
    share, unit, n = job.quota_share, unit_of(job), job.instances
    assert share is not None
    cap = job.queue.capacity_for(job.instance_type)
    if cap is not None and held.total_for(job) + n > cap:
        return False
    after = held.plus(job)
    own, limit = after.of(share, unit), share.limit(unit)
    borrowing = own > limit
    if borrowing and not (share.borrows and _within_borrow_limit(share, own - limit, limit)):
        return False
    needy = {w.quota_share.name for w in waiting if w is not job and w.quota_share and unit_of(w) == unit}
    shares = job.queue.quota_shares.values()
    borrowed = sum(max(0, after.of(s, unit) - s.limit(unit)) for s in shares)
    lendable = sum(
        max(0, s.limit(unit) - after.of(s, unit))
        for s in shares
        if s.lends and (s is share or not borrowing or s.name not in needy)
    )
    return borrowed <= lendable


def quota_schedule(jobs: list[ServiceJob], queue: Queue, t: float) -> QuotaDecision:
    """The queue's waiting jobs that start at `t`, then the attempts to stop for those still
    waiting (see the module's docstring). Sets each waiting job's `blocked_reason`."""
    mine = [j for j in jobs if j.queue is queue]
    held = _Held(j for j in mine if holds(j, t))
    lines: dict[tuple[str, str], list[ServiceJob]] = {}  # one line per share and capacity unit
    for job in sorted((j for j in mine if j.awaiting_capacity and j.quota_share), key=share_order):
        job.blocked_reason = None
        lines.setdefault(_line_of(job), []).append(job)
    decision = QuotaDecision()
    while True:
        for line in lines.values():
            if line:
                line[0].blocked_reason = misconfiguration(line[0])  # it holds back its line
        waiting = [j for line in lines.values() for j in line if j.blocked_reason is None]
        heads = sorted(
            (line[0] for line in lines.values() if line and line[0].blocked_reason is None),
            key=lambda j: (j.created, j.sequence),
        )
        chosen = next((w for w in heads if _fits(w, held, waiting)), None)
        if chosen is None:
            break
        decision.admitted.append(chosen)
        held = held.plus(chosen)
        lines[_line_of(chosen)].pop(0)
    stopping = [j for j in held.jobs if _releasing(j, t)]
    for head in heads:
        gone = stopping + [v for v, _ in decision.preempted]
        decision.preempted.extend(_victims(head, held.minus(gone), waiting, t))
    return decision


def _line_of(job: ServiceJob) -> tuple[str, str]:
    """The line a waiting job queues in: its share's, of its capacity unit (see the module's docstring)."""
    return (job.quota_share.name if job.quota_share else "", unit_of(job))


def _releasing(job: ServiceJob, t: float) -> bool:
    """An attempt being stopped: its instances are free once its training job has stopped."""
    if not job.attempts or job.admitted:
        return False
    plan = job.attempts[-1].plan
    return plan.end > t + EPS and plan.segment_at(t).status == "Stopping"


def _preemptible(job: ServiceJob, t: float) -> bool:
    """SCHEDULED, STARTING or RUNNING ("Preemption"), and not already being stopped."""
    if job.quota_share is None or job.admitted or not job.attempts or job.terminate_reason is not None:
        return False
    attempt = job.attempts[-1]
    return attempt.created <= t + EPS < attempt.plan.end and attempt.plan.segment_at(t).status != "Stopping"


def _started(job: ServiceJob) -> tuple[float, int]:
    """When its current attempt started (a job admitted just now: after every other)."""
    return (float("inf") if job.admitted or not job.attempts else job.attempts[-1].created, job.sequence)


def _beyond_limits(held: _Held) -> list[ServiceJob]:
    """Jobs running beyond their share's limit (borrowing, or above a lowered limit): in each
    share and unit, those started last."""
    beyond: list[ServiceJob] = []
    groups: dict[tuple[str, str], list[ServiceJob]] = {}
    for job in held.jobs:
        if job.quota_share is not None:
            groups.setdefault((job.quota_share.name, unit_of(job)), []).append(job)
    for (_, unit), group in groups.items():
        used = 0
        for job in sorted(group, key=_started):
            used += job.instances
            if job.quota_share is not None and used > job.quota_share.limit(unit):
                beyond.append(job)
    return beyond


def _victims(job: ServiceJob, held: _Held, waiting: list[ServiceJob], t: float) -> list[tuple[ServiceJob, str]]:
    """The attempts to stop so that the waiting `job` can start (`held` leaves out what is already
    stopping): none if it fits once those have stopped, or if no choice of candidates makes room."""
    share, unit, n = job.quota_share, unit_of(job), job.instances
    assert share is not None
    if _fits(job, held, waiting):
        return []
    cap = job.queue.capacity_for(job.instance_type)
    full = cap is not None and held.total_for(job) + n > cap  # the environment's limit is full

    def candidate(j: ServiceJob) -> bool:
        helps = unit_of(j) == unit or (full and job.queue.same_limit(j.instance_type, job.instance_type))
        return _preemptible(j, t) and helps

    def entitled(h: _Held) -> bool:
        return h.of(share, unit) + n <= share.limit(unit)

    def victim_order(j: ServiceJob) -> tuple[int, float, int]:
        return (priority_of(j), -j.attempts[-1].created, -j.sequence)

    cross = sorted((j for j in _beyond_limits(held) if j.quota_share is not share and candidate(j)), key=victim_order)
    inside = sorted(
        (
            j
            for j in held.jobs
            if share.in_share_preemption
            and j.quota_share is share
            and priority_of(j) < priority_of(job)
            and candidate(j)
        ),
        key=victim_order,
    )
    reclaim = [(j, CROSS_SHARE_REASON) for j in cross]
    displace = [(j, IN_SHARE_REASON) for j in inside]
    chosen: list[tuple[ServiceJob, str]] = []
    for victim in (reclaim + displace) if entitled(held) else (displace + reclaim):
        current = held.minus(v for v, _ in chosen)
        if _fits(job, current, waiting):
            break
        if victim[1] == CROSS_SHARE_REASON and not entitled(current):
            continue  # only capacity the share is entitled to is reclaimed from others
        chosen.append(victim)
    if not _fits(job, held.minus(v for v, _ in chosen), waiting):
        return []
    for victim in reversed(list(chosen)):  # stop no more than needed
        rest = [c for c in chosen if c is not victim]
        trial = held.minus(v for v, _ in rest)
        if _fits(job, trial, waiting) and (all(r != CROSS_SHARE_REASON for _, r in rest) or entitled(trial)):
            chosen = rest
    return chosen
