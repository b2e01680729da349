"""`spotline sandbox`: the whole system in one process on a virtual clock.

For each manifest of a scenario it starts the local stack (moto + the Batch/SageMaker
stand-in + the real handlers + the real state machine), plays the team's account (bucket
with data, role, image; the team allowed in the team policy), uploads the manifest, delivers
the S3 event to Intake and replays the execution: hours of training pass in seconds. Each
manifest gets a fresh stack starting at the scenario's start; a fleet scenario (`submissions:`
or `queue:`) runs every upload in one stack instead, its executions sharing one queue and one
clock (`spotline_dev.harness.sandbox.fleet`).
"""

from __future__ import annotations

import io
import json
import sys
import time
from contextlib import ExitStack, redirect_stdout
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from spotline.core.billing.cost import format_usd
from spotline.core.common.durations import format_duration
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.spec.catalog import price_region
from spotline_dev.exit_codes import EXIT_NOT_SUCCEEDED, EXIT_OK
from spotline_dev.explain import render_text as render_story
from spotline_dev.explain.timeline import offset
from spotline_dev.explain.words import BILLED_LEGEND, billed_words, saving_words
from spotline_dev.harness.local.peers import every_job, every_ledger
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.sandbox.account import played_account, played_capacity, prepare_account, team_allowance
from spotline_dev.harness.sandbox.file_systems import check_zones, needs_vpc, play_file_systems
from spotline_dev.harness.sandbox.fleet import run_fleet
from spotline_dev.harness.sandbox.fleet_figures import fleet_figures, plot_fleet, render_fleet
from spotline_dev.harness.sandbox.rejected import FALLBACK_TEAM, declared, rejected_run
from spotline_dev.harness.sandbox.replicas import list_replica_file_systems, play_replicas, played_replicas
from spotline_dev.harness.sandbox.runs import (
    ENDED,
    QUIET,
    follow_run,
    left_running,
    notifications_of,
    peer_weathers,
    powertools_environment_for,
    read_json,
    rfc3339_or_none,
    settle,
    summarize,
    weather_of,
)
from spotline_dev.harness.sandbox.scenario import FaultSpec, Scenario, ScenarioError, load_scenario
from spotline_dev.harness.sandbox.scoring import run_scoring, scoring_result_lines
from spotline_dev.harness.sandbox.team_changes import schedule_team_changes
from spotline_dev.harness.standin import ServiceJobView, TrainingBehaviour

__all__ = ["FaultSpec", "Scenario", "ScenarioError", "load_scenario", "main", "run_scenario"]


def run_scenario(scenario: Scenario, *, verbose: bool = False) -> dict[str, Any]:
    """Run the scenario; returns the `--json` summary (plus timelines and the fleet's figures).
    A fleet scenario (submissions, or a queue) runs in one stack; otherwise each manifest alone."""
    with powertools_environment_for(verbose):
        if scenario.shares_a_queue:
            summary = run_fleet(scenario, verbose=verbose)
        else:
            runs = [_run_manifest(scenario, manifest, verbose) for manifest in scenario.manifests]
            summary = {
                "scenario": scenario.name,
                "executions": [run for run, _ in runs],
                "leftRunning": [job for run, _ in runs for job in run["leftRunning"]],
                "jobs": [job for run, jobs in runs for job in jobs],
                "virtualEnd": max((run["virtualEndAt"] for run, _ in runs), default=scenario.start),
                # Each manifest ran in a stack of its own: no capacity they shared, no utilization.
                "capacity": None,
                "sharedQueue": False,
                # The same changes in each manifest's stack: the first's tell what they did.
                "teamChanges": runs[0][0]["teamChanges"] if runs else [],
            }
    summary["capacityGaps"] = weather_of(scenario).capacity_gaps  # for the pictures: when spot had none
    summary["start"] = scenario.start
    summary["fleet"] = fleet_figures(
        summary["executions"],
        summary["jobs"],
        capacity=summary["capacity"],
        start=scenario.start,
        end=summary["virtualEnd"],
        quotas=summary.get("quotas"),
    )
    return summary


def _run_manifest(scenario: Scenario, manifest: Path, verbose: bool) -> tuple[dict[str, Any], list[ServiceJobView]]:
    body = manifest.read_bytes()
    validated = validate_bytes(body, now=scenario.start)
    if validated.scoring is not None:  # a scoring manifest: its own stack and summary
        return run_scoring(scenario, manifest, validated.scoring, body, verbose)
    spec = validated.spec
    rejected = declared(body) if spec is None else None  # what an invalid manifest still says of itself
    team = spec.team if spec else rejected.team if rejected else FALLBACK_TEAM
    if scenario.team_policy is not None:
        policy = scenario.team_policy
    else:
        policy = {"teams": {spec.team: team_allowance(spec)}} if spec else {"teams": {}}
    weather = weather_of(scenario)
    duration = scenario.duration or (spec.expected_duration_seconds if spec else None) or 3600.0

    def behaviour(_request: dict[str, Any]) -> TrainingBehaviour:
        return TrainingBehaviour(
            duration=duration, fail_after=scenario.fail_after, hardware_faults=tuple(scenario.hardware_faults)
        )

    key = f"manifests/{team}/{manifest.name}"
    names_account = rejected.account if rejected else None  # a rejected manifest's valid role and image
    played = played_account([spec] if spec else [names_account] if names_account else [], scenario.account)
    replicas: dict[str, dict[str, str]] = {}
    if spec and scenario.regions:
        entry = policy.get("teams", {}).get(spec.team)
        if entry is not None:  # the team's replicas, as the platform team would declare them
            replicas = entry.setdefault("replicas", played_replicas(spec, played.region, scenario.regions))
            list_replica_file_systems(entry)
    environment = {} if verbose else dict(QUIET)
    in_vpc = needs_vpc([spec])
    check_zones(scenario.zones, played.region, in_vpc)
    with ExitStack() as scope:
        stack = scope.enter_context(
            start_local_stack(
                scenario.start,
                environment=environment,
                team_policy=policy,
                network=in_vpc,
                weather=weather,
                behaviour=behaviour,
                capacity=played_capacity([spec] if spec else [], scenario.capacity),
                account=played.id,
                region=played.region,
                parameters={"TrainingRolePath": played.role_path},
                peers=peer_weathers(scenario),
                prices=scenario.prices,
            )
        )
        if not verbose:
            # The handlers are loaded (their loggers hold the real stdout); what they print from now
            # on, such as EMF from Powertools' single_metric (which POWERTOOLS_METRICS_DISABLED does
            # not silence), would mix with the sandbox's own output.
            scope.enter_context(redirect_stdout(io.StringIO()))
        if spec:
            prepare_account(stack.client, spec, missing=scenario.missing)
            play_file_systems(stack, spec, scenario.missing)
            play_replicas(stack, scenario, spec, replicas)
        if scenario.stop_execution_at is not None:
            stack.stop_executions_after(scenario.stop_execution_at)
        faults = [
            stack.inject_fault(f.function, count=f.count, start=scenario.start + timedelta(seconds=f.start))
            for f in scenario.faults
        ]
        team_changes = schedule_team_changes(stack, scenario.start, scenario.team_changes)
        stack.client("s3").put_object(Bucket=stack.bucket, Key=key, Body=body)
        (started,) = stack.deliver_events()
        delivery_errors: list[str] = []
        execution, history = follow_run(stack, started["executionArn"], delivery_errors)
        ended_at = stack.execution(execution["executionArn"]).ended_at
        settle(stack)
        jobs = every_job(stack)
        reports = {outcome: read_json(stack, f"reports/{key}.{outcome}.json") for outcome in ("outcome", "rejected")}
        run = summarize(
            scenario=scenario,
            manifest=manifest,
            execution=execution,
            history=history,
            jobs=jobs,
            reports=reports,
        )
        ledgers = list(every_ledger(stack).values())  # this stack ran this one manifest
        run |= {
            "account": played.describe(),
            "ledger": ledgers[0] if ledgers else None,
            "executionEndedAt": rfc3339_or_none(ended_at),
            "virtualEnd": rfc3339_or_none(stack.clock.now()),
            "faults": [
                {"function": f.logical_id, "count": f.count, "raisedAt": [rfc3339_or_none(t) for t in f.raised_at]}
                for f in faults
            ],
            "deliveryErrors": delivery_errors + stack.delivery_errors,
            "notifications": notifications_of(stack, run["name"]),
            "history": history,
            "team": team,
            "instanceType": spec.instance_type if spec else None,
            "instanceCount": spec.instance_count if spec else 0,
            "jobIds": [job.job_id for job in jobs],
            "virtualEndAt": stack.clock.now(),
            "capacity": stack.queue_capacities.get("TrainingJobQueue"),
            "teamChanges": team_changes,
        }
    run["leftRunning"] = [left_running(run["name"], job) for job in jobs if job.status not in ENDED]
    return (run | rejected_run(rejected) if rejected else run), jobs


# --- printing ---------------------------------------------------------------------------------


def _cost_line(run: dict[str, Any]) -> str:
    """What it cost, against the whole job on-demand; a saving only for a run that finished the
    job (a failed run's low bill saved nothing: the work is not done) and used no training plan."""
    if run["costUsd"] is None and run.get("costUnknown"):
        parts = run.get("costByRegion") or {}
        known = " + ".join(f"{format_usd(usd)} in {region}" for region, usd in parts.items() if usd is not None)
        unknown = ", ".join(region for region, usd in parts.items() if usd is None)
        if known and unknown:  # the known part, never dropped; the rest named
            return f"cost {known} + {format_usd(None)} in {unknown} ({run['costUnknown']})"
        return f"cost {format_usd(None)} ({run['costUnknown']})"
    if run["costUsd"] is None:
        unpriced = sorted({r for r in run.get("regions") or [] if r and r != price_region()})
        where = f" in {', '.join(unpriced)}" if unpriced else ""
        return f"cost {format_usd(None)} (no price for {run['instanceType']}{where} in Spotline's table)"
    cost = f"cost {format_usd(run['costUsd'])}"
    against = saving_words(
        run["savingsPercent"], run["onDemandCostUsd"], run.get("trainingPlanSeconds"), run.get("onDemandInstanceType")
    )
    return f"{cost} vs {against}" if run["onDemandCostUsd"] is not None else f"{cost} ({against})"


def _hours(seconds: float) -> str:
    return format_duration(seconds)


SLACK_LEGEND = (
    "slack = time to spare before on-demand from now would just meet the deadline (deadline - now - work left "
    "- restart - margin); it grows when a checkpoint shows more work done, and at 0 the job moves to on-demand"
)


def _team_change_line(change: dict[str, Any], start: datetime) -> str:
    at = offset(start + timedelta(seconds=change["at"]), start)
    what = "removed" if change["remove"] else "changed"
    if change["outcome"] == "refused":
        return f"Team registry {at}: {change['team']} not {what}: {change['reason']}"
    return f"Team registry {at}: {change['team']} {what} ({change['outcome']}, version {change['version']})"


def render_text(summary: dict[str, Any], wall_seconds: float) -> str:
    out = [
        f"Scenario {summary['scenario']}: {len(summary['executions'])} execution(s), replayed in {wall_seconds:.1f}s"
    ]
    played = {run.get("account") for run in summary["executions"]}
    one_account = len(played) == 1
    if one_account:
        out.append(f"Plays {next(iter(played))}")
    if any("slack" in line for run in summary["executions"] for line in run.get("timeline") or ()):
        out.append(SLACK_LEGEND)
    if not summary.get("sharedQueue") and any(run.get("trainingSeconds") for run in summary["executions"]):
        out.append(BILLED_LEGEND)
    out += [_team_change_line(change, summary["start"]) for change in summary.get("teamChanges") or ()]
    if summary.get("sharedQueue"):
        out += ["", *_fleet_runs(summary), "", *render_fleet(summary["fleet"])]
    for run in [] if summary.get("sharedQueue") else summary["executions"]:
        out += ["", f"== {run['name']}  ({run['manifest']})"]
        out += [] if one_account else [f"  plays {run['account']}"]
        out += ["  " + line for line in run["timeline"]]
        if run.get("kind") == "ScoringJob":
            out += scoring_result_lines(run)
            continue
        result = f"{run['status']}" + (f" ({run['error']})" if run["error"] else "")
        if run["deadlineMet"] is not None:
            deadline = "met" if run["deadlineMet"] else "MISSED"
        else:
            deadline = f"{run['deadline']} not reached" if run["deadline"] else "none"
        out.append(
            f"  result: {result}; attempts {run['attempts']}, spot interruptions {run['spotInterruptions']}, "
            f"on-demand fallback {'yes' if run['onDemandFallback'] else 'no'}, deadline {deadline}"
        )
        out += _moves(run)
        if run["trainingSeconds"]:
            out.append(
                f"          trained {_hours(run['trainingSeconds'])}, "
                f"{billed_words(run['billableSeconds'], run.get('trainingPlanSeconds'), run.get('instanceCount'))}, "
                f"lost work {_hours(run['lostWorkSeconds']) if run['lostWorkSeconds'] is not None else 'unknown'}; "
                f"{_cost_line(run)}"
            )
        out.append(
            f"          {run['stateTransitions']} state transitions, {run['historyEvents']} history events, "
            f"largest state {run['maxStateBytes'] / 1024:.1f} KiB"
        )
        out += _ends(run)
    left = summary["leftRunning"]
    out += ["", f"Left running: {len(left) or 'none'}"]
    out += [f"  {j['jobName']} ({j['jobId']}): {j['status']}, training {j['trainingStatus']}" for j in left]
    return "\n".join(out)


def _fleet_runs(summary: dict[str, Any]) -> list[str]:
    """One line per run of a fleet (`spotline explain NAME` or `--explain` tell each run's story)."""
    out = [f"  {'execution':<44} {'team':<18} {'uploaded':>9} {'status':<10} {'attempts':>8}  deadline"]
    for run in summary["executions"]:
        uploaded = offset(datetime.fromisoformat(run["uploadedAt"]), run["start"]).strip()
        deadline = "met" if run["deadlineMet"] else ("MISSED" if run["deadline"] else "none")
        out.append(
            f"  {run['name']:<44} {run['team']:<18} {uploaded:>9} {run['status']:<10} {run['attempts']:>8}  {deadline}"
        )
    return out


def _moves(run: dict[str, Any]) -> list[str]:
    """Each move Spotline made, as what it was (another type, a plan, another region, on-demand), when."""
    story = run.get("story")
    out = []
    for move in story.moves if story is not None else ():
        at = offset(datetime.fromisoformat(move.at), run["start"]).strip() if move.at else "?"
        out.append(f"          moved {at} to {move.to} (after attempt {move.after})")
    return out


def _ends(run: dict[str, Any]) -> list[str]:
    """When the training and the execution ended (deadlines are judged at the training's end),
    the faults the scenario injected, and what failed in delivering the execution's end."""
    start = run["start"]

    def at(text: str | None) -> str:
        return offset(datetime.fromisoformat(text), start).strip() if text else "-"

    training = (
        f"training {at(run['trainingEndedAt'])} ({run['trainingStatus']})"
        if run["trainingEndedAt"]
        else (f"training not ended ({run['trainingStatus']})" if run["trainingStatus"] else "no training")
    )
    out = [f"          ended: {training}, execution {at(run['executionEndedAt'])} ({run['status']})"]
    for fault in run["faults"]:
        raised = ", ".join(at(t) for t in fault["raisedAt"]) or "none"
        out.append(f"          faults in {fault['function']}: {len(fault['raisedAt'])} of {fault['count']} ({raised})")
    out += [f"          event delivery failed: {error}" for error in run["deliveryErrors"]]
    return out


EXECUTION_FIELDS = (
    "name",
    "team",
    "manifest",
    "status",
    "error",
    "attempts",
    "spotInterruptions",
    "clusterRepairs",
    "onDemandFallback",
    "deadline",
    "finishedAt",
    "deadlineMet",
    "trainingEndedAt",
    "executionEndedAt",
    "trainingSeconds",
    "billableSeconds",
    "lostWorkSeconds",
    "instanceType",
    "instanceTypes",
    "capacityTiers",
    "notifications",
    "costUsd",
    "costUnknown",
    "costByRegion",
    "onDemandCostUsd",
    "onDemandSeconds",
    "savingsPercent",
    "trainingPlanSeconds",
    "regions",
    "zones",
    "checkpointCopies",
    "billingSettled",
    "prices",
    "stateTransitions",
    "historyEvents",
    "maxStateBytes",
)
"""The keys of each execution in `spotline sandbox --json` (docs/getting-started.md lists them)."""

SCORING_FIELDS = (
    "kind",
    "instances",
    "peakInstances",
    "windowEnd",
    "windowMet",
    "recordsPerSecond",
    "sizing",
    "shards",
)
"""What a scoring run's `--json` entry adds (its training keys say nothing was trained)."""


def public_summary(
    summary: dict[str, Any], *, with_story: bool = False, wall_seconds: float | None = None
) -> dict[str, Any]:
    """The `--json` contract: the documented fields only (plus `explain`, the story, when asked).
    `wallSeconds` is the replay's own wall time: the one figure two replays do not share."""
    return {
        "scenario": summary["scenario"],
        "account": sorted({run["account"] for run in summary["executions"] if run.get("account")}),
        "executions": [
            {k: run[k] for k in EXECUTION_FIELDS}
            | ({k: run[k] for k in SCORING_FIELDS} if run.get("kind") == "ScoringJob" else {})
            | ({"explain": run["story"].to_dict()} if with_story and run.get("story") else {})
            for run in summary["executions"]
        ],
        "leftRunning": summary["leftRunning"],
        "fleet": summary["fleet"],
        **({"teamChanges": summary["teamChanges"]} if summary.get("teamChanges") else {}),
        **({"wallSeconds": round(wall_seconds, 1)} if wall_seconds is not None else {}),
    }


def render_stories(summary: dict[str, Any]) -> str:
    """`--explain`: the explain story of each execution, as `spotline explain` prints it, after the
    sandbox's own output. That output already shows each execution's timeline, next to its
    result, costs and ends, when the executions ran one by one; the story then leaves its copy
    out (the same lines, on the same clock) and tells only what the sandbox does not: what
    failed, the next step, the attempts, the links. A fleet's output is one line per run: there
    the story keeps its timeline, the only one printed."""
    shown = not summary.get("sharedQueue")
    note = "Explain (as `spotline explain` tells it, on the virtual clock"
    note += "; the timelines are the ones above)" if shown else ")"
    stories = [replace(run["story"], timeline=[]) if shown else run["story"] for run in summary["executions"]]
    return "\n\n".join([note, *(render_story(story) for story in stories)])


def draw(summary: dict[str, Any], directory: Path) -> list[Path]:
    """`--plot DIR`: one picture per execution, DIR/<execution name>.png; `--plot FILE.png`: the
    capacity each team used over time (for a fleet)."""
    from spotline_dev.explain.plot import plot_run  # noqa: PLC0415 (matplotlib only when asked)

    if directory.suffix == ".png":
        start = summary["executions"][0]["start"] if summary["executions"] else summary["virtualEnd"]
        return [
            plot_fleet(
                summary["executions"],
                summary["jobs"],
                directory,
                capacity=summary["capacity"],
                start=start,
                end=summary["virtualEnd"],
                title=f"{summary['scenario']}: instances held by each team",
            )
        ]
    directory.mkdir(parents=True, exist_ok=True)
    return [
        plot_run(
            run["history"],
            directory / f"{run['name']}.png",
            title=run["name"],
            capacity_gaps=summary.get("capacityGaps", ()),
        )
        for run in summary["executions"]
    ]


def main(
    scenario_path: Path | None, *, as_json: bool, verbose: bool, stories: bool = False, plots: Path | None = None
) -> int:
    """Run the scenario and print it; exits EXIT_NOT_SUCCEEDED when an execution did not succeed
    (a scenario that expects a failure shows it, and scripts can tell)."""
    scenario = load_scenario(scenario_path)
    if sys.stderr.isatty():  # a person waiting; scripts and tests get only the result
        runs = "the fleet" if scenario.shares_a_queue else f"{len(scenario.manifests)} manifest(s)"
        print(f"Replaying {scenario.name}: {runs} on a virtual clock (seconds per simulated day)...", file=sys.stderr)
    started = time.perf_counter()
    summary = run_scenario(scenario, verbose=verbose)
    wall = time.perf_counter() - started
    if as_json:
        print(json.dumps(public_summary(summary, with_story=stories, wall_seconds=wall), indent=2))
    else:
        print(render_text(summary, wall))
        if stories:
            print()
            print(render_stories(summary))
    if plots is not None:
        for path in draw(summary, plots):
            print(f"Plot: {path}", file=sys.stderr)
    failed = [run["name"] for run in summary["executions"] if run["status"] != "SUCCEEDED"]
    return EXIT_NOT_SUCCEEDED if failed else EXIT_OK
