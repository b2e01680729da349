"""What a fleet scenario came to: the sandbox's `fleet` object, its text table, and a picture of
the queue's capacity used by each team over time.

Judged from the training jobs themselves (the stand-in's view of each Batch service job and its
SageMaker attempts), not from what the executions noticed:

- a job's *queue wait* is the time each of its service jobs spent RUNNABLE before an attempt
  started: from submission to the first attempt, and from an attempt's end to the next one
  (Batch's own retries, preemptions); one figure per service job (each Spotline attempt is one).
- *busy instance-seconds* (a team's `instanceSeconds`, "held" in the table) count an attempt's
  instances from its creation (Batch hands it to SageMaker: it holds its capacity) to its end,
  including the time SageMaker waits for spot capacity with no instance running; utilization is
  that over capacity x the fleet's span (from the scenario's start to the last attempt's end).
  Quota management counts capacity per instance type, so capacity, peak, utilization, each team's
  instance-seconds and starvation are also given per type (`instanceTypes`, `instanceSecondsByType`).
- *running instance-seconds* (`runningInstanceSeconds`, "running" in the table) count only the
  time the instances ran: each attempt's Downloading, Training and Uploading seconds (SageMaker
  bills from TrainingStartTime, once the instances are acquired) times its instance count.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from spotline.core.billing.cost import format_usd
from spotline.core.common.durations import format_duration
from spotline_dev.harness.standin import ServiceJobView

PERCENTILES = {"p50": 50, "p95": 95}
SCHEDULING_GRACE_SECONDS = 300.0
"""A wait with room in the job's share shorter than this is the scheduler's pace (Batch schedules
in cycles; the stand-in takes 30 s per job, 60 s after a preemption), not unfairness."""


def percentile(values: Iterable[float], rank: int) -> float:
    """The nearest-rank percentile (0 of nothing)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(rank / 100 * len(ordered)) - 1)]


def queue_wait_seconds(job: ServiceJobView, end: datetime) -> float:
    """How long the service job waited RUNNABLE for its attempts (until `end` if still waiting)."""
    return sum((b - a).total_seconds() for a, b in waiting_intervals(job, end))


def busy_intervals(job: ServiceJobView, end: datetime) -> list[tuple[datetime, datetime]]:
    return [(a.created_at, a.ended_at or end) for a in job.attempts]


def waiting_intervals(job: ServiceJobView, end: datetime) -> list[tuple[datetime, datetime]]:
    """When the service job waited RUNNABLE (the spans `queue_wait_seconds` adds up)."""
    spans, ready = [], job.submitted_at
    for attempt in sorted(job.attempts, key=lambda a: a.created_at):
        spans.append((ready, attempt.created_at))
        ready = attempt.ended_at or end
    if not job.attempts or job.attempts[-1].ended_at:  # waiting again, or never started: until it ended
        until = job.ended_at if job.status in ("SUCCEEDED", "FAILED") else end
        if until is not None:
            spans.append((ready, until))
    return [(a, b) for a, b in spans if b > a]


def starved_seconds(
    jobs: list[ServiceJobView],
    instances: Mapping[str, tuple[str, int]],
    quotas: Mapping[str, Mapping[str, int]],
    end: datetime,
    grace_seconds: float = SCHEDULING_GRACE_SECONDS,
) -> dict[str, float]:
    """Per quota share: how long its jobs waited, beyond `grace_seconds` per wait, although they
    fit in what the share left unused of their instance type (its quota of the type less the
    instances of that type its own jobs held). Batch's quota management promises each share its
    capacity (lent capacity comes back through preemption), so this stays 0. `instances`: each
    service job's (instance type, instance count); `quotas`: each share's limits per type."""
    changes: dict[tuple[str, str], Counter[datetime]] = defaultdict(Counter)  # (share, type) -> held from then
    for job in jobs:
        unit, count = instances.get(job.job_id, ("", 1))
        for begin, finish in busy_intervals(job, end):
            changes[(job.quota_share or "", unit)][begin] += count
            changes[(job.quota_share or "", unit)][finish] -= count
    steps = {key: _steps(counter) for key, counter in changes.items()}
    starved = dict.fromkeys(quotas, 0.0)
    for job in jobs:
        share = job.quota_share or ""
        unit, count = instances.get(job.job_id, ("", 1))
        if share not in quotas or unit not in quotas[share]:
            continue  # a type without a limit in the share waits by design, never within its quota
        room = quotas[share][unit] - count
        for begin, finish in waiting_intervals(job, end):
            fitting = _seconds_at_most(steps.get((share, unit), []), room, begin, finish)
            starved[share] += max(0.0, fitting - grace_seconds)
    return starved


def peak_instances(
    jobs: list[ServiceJobView], instances: Mapping[str, tuple[str, int]], end: datetime
) -> dict[str, int]:
    """Per instance type: the most instances held at once."""
    changes: dict[str, Counter[datetime]] = defaultdict(Counter)
    for job in jobs:
        unit, count = instances.get(job.job_id, ("", 1))
        for begin, finish in busy_intervals(job, end):
            changes[unit][begin] += count
            changes[unit][finish] -= count
    return {unit: max((held for _, held in _steps(counter)), default=0) for unit, counter in changes.items()}


def _steps(changes: Counter[datetime]) -> list[tuple[datetime, int]]:
    """A step function from its changes: (moment, value from then on), in time order."""
    value, out = 0, []
    for moment in sorted(changes):
        value += changes[moment]
        out.append((moment, value))
    return out


def _seconds_at_most(steps: list[tuple[datetime, int]], limit: int, begin: datetime, finish: datetime) -> float:
    """How long within [begin, finish) the step function (0 before its first step) was <= limit."""
    total, value, at = 0.0, 0, begin
    for moment, after in [*steps, (finish, 0)]:
        if moment > at:
            if value <= limit:
                total += (min(moment, finish) - at).total_seconds()
            at = moment
            if at >= finish:
                break
        value = after
    return total


def fleet_figures(
    runs: list[dict[str, Any]],
    jobs: list[ServiceJobView],
    *,
    capacity: Mapping[str, int] | None,
    start: datetime,
    end: datetime,
    quotas: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, Any]:
    """The sandbox's `fleet` object (docs/getting-started.md, "Fleet scenarios"). `capacity`: the service
    environment's limits per instance type (None: unlimited); `quotas`: each quota share's limits
    per instance type (a share is named after its team)."""
    owner = {job_id: run for run in runs for job_id in run.get("jobIds", ())}
    last_end = max((a.ended_at for j in jobs for a in j.attempts if a.ended_at), default=start)
    span = max((last_end - start).total_seconds(), 1.0)
    waits: dict[str, list[float]] = defaultdict(list)
    instance_seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))  # team -> type ->
    running: dict[str, float] = defaultdict(float)  # team -> instance-seconds with instances running
    sizes = {  # the type and count the job ran on (an alternative's), else the manifest's
        job.job_id: (job.attempts[-1].instance_type, job.attempts[-1].instance_count)
        if job.attempts and job.attempts[-1].instance_type
        else (str(run.get("instanceType") or ""), int(run["instanceCount"]))
        for job in jobs
        if (run := owner.get(job.job_id))
    }
    for job in jobs:
        run = owner.get(job.job_id)
        team = run["team"] if run else "?"
        waits[team].append(queue_wait_seconds(job, end))
        unit, count = sizes.get(job.job_id, ("", 1))
        instance_seconds[team][unit] += sum((b - a).total_seconds() for a, b in busy_intervals(job, end)) * count
        running[team] += sum(a.training_seconds * a.instance_count for a in job.attempts)
    all_waits = [w for team_waits in waits.values() for w in team_waits]
    starved = starved_seconds(jobs, sizes, quotas or {}, end)
    by_type: dict[str, float] = defaultdict(float)
    for seconds in instance_seconds.values():
        for unit, n in seconds.items():
            by_type[unit] += n
    peaks = peak_instances(jobs, sizes, end)
    total_capacity = sum(capacity.values()) if capacity else None
    missed = [run for run in runs if _missed(run)]
    teams = sorted({run["team"] for run in runs} | set(waits))
    return {
        "jobs": len(runs),
        "succeeded": sum(1 for run in runs if run["status"] == "SUCCEEDED"),
        "failed": sum(1 for run in runs if run["status"] != "SUCCEEDED"),
        "deadlinesMet": sum(1 for run in runs if run["deadlineMet"] is True),
        "deadlinesMissed": len(missed),
        "costUsd": total_cost(run["costUsd"] for run in runs),
        # The work the fleet finished, on-demand from the start (a run that did not finish has none).
        "onDemandCostUsd": total_cost(run["onDemandCostUsd"] for run in runs if run.get("onDemandSeconds") is not None),
        "capacityInstances": total_capacity,
        "capacityUtilization": round(sum(by_type.values()) / (total_capacity * span), 4) if total_capacity else None,
        "instanceTypes": {
            unit: {
                "capacityInstances": capacity.get(unit) if capacity else None,
                "peakInstances": peaks.get(unit, 0),
                "capacityUtilization": (
                    round(by_type[unit] / (capacity[unit] * span), 4) if capacity and capacity.get(unit) else None
                ),
            }
            for unit in sorted(set(capacity or {}) | {u for u in by_type if u})
        },
        "queueWaitSeconds": {
            **{name: round(percentile(all_waits, rank)) for name, rank in PERCENTILES.items()},
            "max": round(max(all_waits, default=0.0)),
        },
        "preemptions": sum(job.preemptions for job in jobs),
        "teams": {
            team: {
                "jobs": sum(1 for run in runs if run["team"] == team),
                "instanceSeconds": round(sum(instance_seconds[team].values())),
                "instanceSecondsByType": {unit: round(n) for unit, n in sorted(instance_seconds[team].items())},
                "runningInstanceSeconds": round(running[team]),
                "queueWaitP95Seconds": round(percentile(waits[team], 95)),
                "deadlinesMissed": sum(1 for run in missed if run["team"] == team),
                # Only a team with a quota share can be starved of it: null for one without.
                **({"starvedSeconds": round(starved[team]) if team in starved else None} if quotas is not None else {}),
            }
            for team in teams
        },
    }


def total_cost(costs: Iterable[float | None]) -> float | None:
    """The sum, or None (unknown) when one run's type has no price: a part is not the whole."""
    known = list(costs)
    return None if any(cost is None for cost in known) else round(sum(float(c) for c in known if c is not None), 2)


def _missed(run: dict[str, Any]) -> bool:
    """A deadline missed: finished after it, or not finished when the deadline came. A run that
    ended unfinished (stopped, failed) before its deadline has missed nothing yet."""
    if not run.get("deadline") or run.get("deadlineMet") is True:
        return False
    if run.get("deadlineMet") is False:
        return True
    ended = run.get("executionEndedAt") or run.get("virtualEnd")
    return not ended or datetime.fromisoformat(str(ended)) >= datetime.fromisoformat(str(run["deadline"]))


def render_fleet(fleet: dict[str, Any]) -> list[str]:
    """The fleet summary table of the sandbox's text output."""
    waits = fleet["queueWaitSeconds"]
    kinds = fleet.get("instanceTypes") or {}
    per_type = "; ".join(
        f"{unit} {f['peakInstances']} of {'-' if f['capacityInstances'] is None else f['capacityInstances']} at peak"
        + ("" if f["capacityUtilization"] is None else f", {f['capacityUtilization'] * 100:.0f}% used")
        for unit, f in kinds.items()
    )
    capacity = (
        f"capacity {fleet['capacityInstances']} instances, {fleet['capacityUtilization'] * 100:.0f}% used"
        if fleet["capacityInstances"]
        else "capacity unlimited"
    ) + (f" ({per_type})" if len(kinds) > 1 else "")
    priced = fleet["costUsd"] is not None and fleet["onDemandCostUsd"]
    saved = f"{(1 - fleet['costUsd'] / fleet['onDemandCostUsd']) * 100:.0f}% saved" if priced else "saving unknown"
    with_deadline = fleet["deadlinesMet"] + fleet["deadlinesMissed"]
    out = [
        f"Fleet: {fleet['jobs']} job(s), {fleet['succeeded']} succeeded, {fleet['failed']} failed; "
        f"deadlines met {fleet['deadlinesMet']} of {with_deadline}",
        f"  cost {format_usd(fleet['costUsd'])} vs {format_usd(fleet['onDemandCostUsd'])} all on-demand on each "
        f"job's primary type ({saved}); "
        f"{capacity}; {fleet['preemptions']} preemption(s)",
        f"  queue wait p50 {_short(waits['p50'])}, p95 {_short(waits['p95'])}, max {_short(waits['max'])}",
        "",
        f"  {'team':<24} {'jobs':>5} {'held inst-h':>12} {'running inst-h':>15} {'queue wait p95':>15}"
        f" {'deadlines missed':>17} {'starved':>8}",
    ]
    for team, figures in fleet["teams"].items():
        starved = _short(figures["starvedSeconds"]) if figures.get("starvedSeconds") is not None else "-"
        out.append(
            f"  {team:<24} {figures['jobs']:>5} {figures['instanceSeconds'] / 3600:>12.1f} "
            f"{figures['runningInstanceSeconds'] / 3600:>15.1f} "
            f"{_short(figures['queueWaitP95Seconds']):>15} {figures['deadlinesMissed']:>17} {starved:>8}"
        )
    return [*out, *HOURS_LEGEND]


HOURS_LEGEND = (
    "  held inst-h: instance-hours of queue capacity Batch held for the team's jobs, from each attempt's",
    "    start to its end, waits for spot capacity with no instance running included",
    "  running inst-h: instance-hours the instances ran (SageMaker's Downloading, Training and Uploading)",
    "  starved: time a job waited although it fit in what its team's quota share left unused of its type",
)


def _short(seconds: float) -> str:
    return format_duration(seconds) if seconds else "0s"


def capacity_by_team(
    runs: list[dict[str, Any]], jobs: list[ServiceJobView], end: datetime
) -> dict[str, list[tuple[datetime, int]]]:
    """Instances each team held over time: per team, (moment, instances held from then on)."""
    owner = {job_id: run for run in runs for job_id in run.get("jobIds", ())}
    changes: dict[str, dict[datetime, int]] = defaultdict(lambda: defaultdict(int))
    for job in jobs:
        run = owner.get(job.job_id)
        team, count = (run["team"], int(run["instanceCount"])) if run else ("?", 1)
        for begin, finish in busy_intervals(job, end):
            changes[team][begin] += count
            changes[team][finish] -= count
    steps: dict[str, list[tuple[datetime, int]]] = {}
    for team in sorted(changes):
        held, series = 0, []
        for moment in sorted(changes[team]):
            held += changes[team][moment]
            series.append((moment, held))
        steps[team] = series
    return steps


def plot_fleet(
    runs: list[dict[str, Any]],
    jobs: list[ServiceJobView],
    path: Path,
    *,
    capacity: Mapping[str, int] | None,
    start: datetime,
    end: datetime,
    title: str,
) -> Path:
    """`--plot FILE.png` for a fleet: the instances each team held over time, stacked, under the
    queue's capacity."""
    import matplotlib  # noqa: PLC0415 (only when drawing)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    steps = capacity_by_team(runs, jobs, end)
    moments = sorted({start, end} | {m for series in steps.values() for m, _ in series})
    hours = [(m - start).total_seconds() / 3600 for m in moments]
    stacks = []
    for series in steps.values():
        held, index, values = 0, 0, []
        for moment in moments:
            while index < len(series) and series[index][0] <= moment:
                held = series[index][1]
                index += 1
            values.append(held)
        stacks.append(values)
    figure, axes = plt.subplots(figsize=(11, 4.5))
    if stacks:
        axes.stackplot(hours, stacks, labels=list(steps), step="post", alpha=0.85)
    if capacity:
        axes.axhline(sum(capacity.values()), color="#000000", linewidth=1, linestyle="--", label="queue capacity")
    axes.set_xlabel("hours since the scenario's start")
    axes.set_ylabel("instances held")
    axes.set_xlim(0, max(hours[-1], 1.0))
    axes.legend(loc="upper right", fontsize=8)
    axes.grid(True, alpha=0.3)
    axes.set_title(title, fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
