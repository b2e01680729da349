"""`spotline sandbox`: the whole system in one process on a virtual clock.

For each manifest of a scenario it starts the local stack (moto + the Batch/SageMaker
stand-in + the real handlers + the real state machine), plays the team's account (bucket
with data, role, image; the team allowed in the team policy), uploads the manifest, delivers
the S3 event to Intake and replays the execution: hours of training pass in seconds. Each
manifest gets a fresh stack starting at the scenario's start, so executions do not share a
queue (the stand-in models capacity, not contention between jobs).
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, redirect_stdout
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from spotline.core.cost import cost_usd
from spotline.core.durations import format_duration
from spotline.core.manifest import validate_bytes
from spotline.core.model import to_rfc3339
from spotline_dev.account import prepare_account, team_allowance
from spotline_dev.exit_codes import EXIT_NOT_SUCCEEDED, EXIT_OK
from spotline_dev.explain import explain, timeline
from spotline_dev.explain import render_text as render_story
from spotline_dev.explain.history import job_of
from spotline_dev.explain.timeline import offset
from spotline_dev.local_aws import LocalStack, start_local_stack
from spotline_dev.scenario import FaultSpec, Scenario, ScenarioError, load_scenario
from spotline_dev.standin import ServiceJobView, SpotWeather, TrainingBehaviour
from spotline_dev.template import PROJECT_ROOT, powertools_environment

__all__ = ["FaultSpec", "Scenario", "ScenarioError", "load_scenario", "main", "run_scenario"]

QUIET = {"POWERTOOLS_LOG_LEVEL": "ERROR", "POWERTOOLS_METRICS_DISABLED": "true"}
ENDED = frozenset({"SUCCEEDED", "FAILED"})  # Batch service job statuses that are an end
SETTLE_SECONDS = 600.0  # after the last execution: how long stops already under way may take
SETTLE_STEP = 10.0


@contextmanager
def _powertools_environment(verbose: bool) -> Iterator[None]:
    """Powertools reads its settings at import, as in Lambda: set them before the handlers load."""
    wanted = {**powertools_environment(), **({} if verbose else QUIET)}
    saved = {k: os.environ.get(k) for k in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_scenario(scenario: Scenario, *, verbose: bool = False) -> dict[str, Any]:
    """Run every manifest of the scenario; returns the `--json` summary (plus timelines)."""
    with _powertools_environment(verbose):
        executions = [_run_manifest(scenario, manifest, verbose) for manifest in scenario.manifests]
    left = [job for run in executions for job in run["leftRunning"]]
    return {"scenario": scenario.name, "executions": executions, "leftRunning": left}


def weather_of(scenario: Scenario) -> SpotWeather:
    """The scenario's spot capacity: its gaps (offsets from its start), interruptions and start delays."""
    return SpotWeather(
        capacity_gaps=[
            (scenario.start + timedelta(seconds=a), scenario.start + timedelta(seconds=b))
            for a, b in scenario.capacity_gaps
        ],
        interruptions=list(scenario.interruptions),
        spot_start_delay=scenario.spot_start_delay,
        on_demand_start_delay=scenario.on_demand_start_delay,
    )


def _run_manifest(scenario: Scenario, manifest: Path, verbose: bool) -> dict[str, Any]:
    body = manifest.read_bytes()
    spec = validate_bytes(body, now=scenario.start).spec
    team = spec.team if spec else "sandbox"
    if scenario.team_policy is not None:
        policy = scenario.team_policy
    else:
        policy = {"teams": {spec.team: team_allowance(spec)}} if spec else {"teams": {}}
    weather = weather_of(scenario)
    duration = scenario.duration or (spec.expected_duration_seconds if spec else None) or 3600.0

    def behaviour(_request: dict[str, Any]) -> TrainingBehaviour:
        return TrainingBehaviour(duration=duration, fail_after=scenario.fail_after)

    key = f"manifests/{team}/{manifest.name}"
    environment = {"TEAM_POLICY": json.dumps(policy), **({} if verbose else QUIET)}
    with ExitStack() as scope:
        stack = scope.enter_context(
            start_local_stack(scenario.start, environment=environment, weather=weather, behaviour=behaviour)
        )
        if not verbose:
            # The handlers are loaded (their loggers hold the real stdout); what they print from now
            # on, such as EMF from Powertools' single_metric (which POWERTOOLS_METRICS_DISABLED does
            # not silence), would mix with the sandbox's own output.
            scope.enter_context(redirect_stdout(io.StringIO()))
        if spec:
            prepare_account(stack.client, spec, missing=scenario.missing)
        if scenario.stop_execution_at is not None:
            stack.stop_executions_after(scenario.stop_execution_at)
        faults = [
            stack.inject_fault(f.function, count=f.count, start=scenario.start + timedelta(seconds=f.start))
            for f in scenario.faults
        ]
        stack.client("s3").put_object(Bucket=stack.bucket, Key=key, Body=body)
        (started,) = stack.deliver_events()
        delivery_errors: list[str] = []
        execution, history = follow_run(stack, started["executionArn"], delivery_errors)
        ended_at = stack.execution(execution["executionArn"]).ended_at
        _settle(stack)
        jobs = stack.standin.jobs
        reports = {outcome: _read_json(stack, f"reports/{key}.{outcome}.json") for outcome in ("outcome", "rejected")}
        run = summarize(
            scenario=scenario,
            manifest=manifest,
            execution=execution,
            history=history,
            jobs=jobs,
            reports=reports,
            duration=duration,
        )
        run |= {
            "executionEndedAt": _rfc3339(ended_at),
            "virtualEnd": _rfc3339(stack.clock.now()),
            "faults": [
                {"function": f.logical_id, "count": f.count, "raisedAt": [_rfc3339(t) for t in f.raised_at]}
                for f in faults
            ],
            "deliveryErrors": delivery_errors + stack.delivery_errors,
            "history": history,
        }
    run["leftRunning"] = [_left_running(run["name"], job) for job in jobs if job.status not in ENDED]
    return run


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
        following = json.loads(execution.get("output") or "{}").get("continuedAs")
        if execution["status"] != "SUCCEEDED" or not following:
            return execution, history
        arn = following["executionArn"]


def _settle(stack: LocalStack) -> None:
    """Let stops already under way finish (SageMaker takes a little while to stop a training job),
    so that a job told to stop is not reported as left running."""
    waited = 0.0
    while waited < SETTLE_SECONDS and any(job.training_status == "Stopping" for job in stack.standin.jobs):
        stack.clock.advance(SETTLE_STEP)
        waited += SETTLE_STEP


def _left_running(execution: str, job: ServiceJobView) -> dict[str, Any]:
    return {
        "execution": execution,
        "jobId": job.job_id,
        "jobName": job.job_name,
        "status": job.status,
        "trainingJobName": job.training_job_name,
        "trainingStatus": job.training_status,
    }


def _rfc3339(moment: datetime | None) -> str | None:
    return to_rfc3339(moment) if moment else None


def _read_json(stack: Any, key: str) -> dict[str, Any] | None:
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
        "trainingEndedAt": _rfc3339(last.ended_at if last else None),
        "trainingStatus": last.status if last else None,
        "finishedAt": _rfc3339(completed),
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
    duration: float,
) -> dict[str, Any]:
    report = reports.get("outcome") or {}
    figures = report.get("figures") or {}
    job = _job_from_history(history)
    instance, count = (job["instanceType"], job["instanceCount"]) if job else ("", 0)
    upload = 60.0
    deadline = figures.get("deadline") or job.get("deadline")
    # Without a report (stopped, or failed before RecordOutcome): what was billed so far.
    billed = cost_usd(instance, count, sum(j.billable_seconds for j in jobs)) if job else 0.0
    return {
        "name": execution["name"],
        "manifest": str(manifest.relative_to(PROJECT_ROOT)) if manifest.is_relative_to(PROJECT_ROOT) else str(manifest),
        "status": execution["status"],
        "error": execution.get("error"),
        "cause": execution.get("cause"),
        "attempts": figures.get("attempts", len(jobs)),
        "spotInterruptions": sum(job.interruptions for job in jobs),
        "onDemandFallback": bool(figures.get("on_demand_fallback", False)),
        "deadline": deadline,
        **training_end(jobs, deadline),
        "trainingSeconds": int(sum(job.training_seconds for job in jobs)),
        "billableSeconds": int(sum(job.billable_seconds for job in jobs)),
        "lostWorkSeconds": int(sum(job.lost_work_seconds for job in jobs)),
        "costUsd": figures.get("cost_usd", billed),
        "onDemandCostUsd": cost_usd(instance, count, duration + upload) if job else 0.0,
        "stateTransitions": sum(1 for e in history if e["type"].endswith("StateEntered")),
        "historyEvents": len(history),
        "maxStateBytes": max_state_bytes(history),
        "timeline": timeline(history, scenario.start),
        "start": scenario.start,
        "story": explain(history, execution),
    }


def _job_from_history(history: list[dict[str, Any]]) -> dict[str, Any]:
    """The job summary LoadManifest left in the state ({} when the manifest was rejected)."""
    for event in history:
        details = event.get("stateExitedEventDetails")
        if details and details["name"] == "LoadManifest":
            return job_of(json.loads(details["output"]).get("manifest"))
    return {}


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


# --- printing ---------------------------------------------------------------------------------


def _hours(seconds: float) -> str:
    return format_duration(seconds)


def render_text(summary: dict[str, Any], wall_seconds: float) -> str:
    out = [
        f"Scenario {summary['scenario']}: {len(summary['executions'])} execution(s), replayed in {wall_seconds:.1f}s"
    ]
    for run in summary["executions"]:
        out += ["", f"== {run['name']}  ({run['manifest']})", *("  " + line for line in run["timeline"])]
        result = f"{run['status']}" + (f" ({run['error']})" if run["error"] else "")
        if run["deadlineMet"] is not None:
            deadline = "met" if run["deadlineMet"] else "MISSED"
        else:
            deadline = "not reached" if run["deadline"] else "none"
        out.append(
            f"  result: {result}; attempts {run['attempts']}, spot interruptions {run['spotInterruptions']}, "
            f"on-demand fallback {'yes' if run['onDemandFallback'] else 'no'}, deadline {deadline}"
        )
        if run["trainingSeconds"]:
            saved = (1 - run["costUsd"] / run["onDemandCostUsd"]) * 100 if run["onDemandCostUsd"] else 0.0
            out.append(
                f"          trained {_hours(run['trainingSeconds'])}, billed {_hours(run['billableSeconds'])}, "
                f"lost work {_hours(run['lostWorkSeconds'])}; cost ${run['costUsd']:.2f} vs "
                f"${run['onDemandCostUsd']:.2f} all on-demand ({saved:.0f}% saved)"
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


def public_summary(summary: dict[str, Any], *, with_story: bool = False) -> dict[str, Any]:
    """The `--json` contract: the documented fields only (plus `explain`, the story, when asked)."""
    fields = (
        "name",
        "manifest",
        "status",
        "error",
        "attempts",
        "spotInterruptions",
        "onDemandFallback",
        "deadline",
        "finishedAt",
        "deadlineMet",
        "trainingEndedAt",
        "executionEndedAt",
        "trainingSeconds",
        "billableSeconds",
        "lostWorkSeconds",
        "costUsd",
        "onDemandCostUsd",
        "stateTransitions",
        "historyEvents",
        "maxStateBytes",
    )
    return {
        "scenario": summary["scenario"],
        "executions": [
            {k: run[k] for k in fields} | ({"explain": run["story"].to_dict()} if with_story else {})
            for run in summary["executions"]
        ],
        "leftRunning": summary["leftRunning"],
    }


def render_stories(summary: dict[str, Any]) -> str:
    """`--explain`: the explain story of each execution, as `spotline explain` prints it."""
    note = "Explain (as `spotline explain` tells it, on the virtual clock)"
    return "\n\n".join([note, *(render_story(run["story"]) for run in summary["executions"])])


def draw(summary: dict[str, Any], directory: Path) -> list[Path]:
    """`--plot DIR`: one picture per execution, DIR/<execution name>.png."""
    from spotline_dev.explain.plot import plot_run  # noqa: PLC0415 (matplotlib only when asked)

    directory.mkdir(parents=True, exist_ok=True)
    return [
        plot_run(run["history"], directory / f"{run['name']}.png", title=run["name"]) for run in summary["executions"]
    ]


def main(
    scenario_path: Path | None, *, as_json: bool, verbose: bool, stories: bool = False, plots: Path | None = None
) -> int:
    """Run the scenario and print it; exits EXIT_NOT_SUCCEEDED when an execution did not succeed
    (a scenario that expects a failure shows it, and scripts can tell)."""
    scenario = load_scenario(scenario_path)
    started = time.perf_counter()
    summary = run_scenario(scenario, verbose=verbose)
    wall = time.perf_counter() - started
    if as_json:
        print(json.dumps(public_summary(summary, with_story=stories), indent=2))
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
