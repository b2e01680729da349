"""`spotline sandbox`: the whole system in one process on a virtual clock.

For each manifest of a scenario it starts the local stack (moto + the Batch/SageMaker
stand-in + the real handlers + the real state machine), plays the team's account (bucket
with data, role, image; the team allowed in the team policy), uploads the manifest, delivers
the S3 event to Intake and replays the execution: hours of training pass in seconds. Each
manifest gets a fresh stack starting at the scenario's start, so executions do not share a
queue (the stand-in models capacity, not contention between jobs).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from spotline.core.cost import cost_usd
from spotline.core.durations import format_duration, parse_duration
from spotline.core.manifest import validate_bytes
from spotline.core.team_policy import TeamPolicy, TeamPolicyInvalid
from spotline_dev.account import prepare_account, team_allowance
from spotline_dev.explain import explain, timeline
from spotline_dev.explain import render_text as render_story
from spotline_dev.explain.history import job_of
from spotline_dev.local_aws import start_local_stack
from spotline_dev.standin import SpotWeather, TrainingBehaviour
from spotline_dev.template import PROJECT_ROOT, powertools_environment

DEFAULT_SCENARIO = PROJECT_ROOT / "examples" / "scenarios" / "default.yaml"
SAMPLE_MANIFESTS = PROJECT_ROOT / "examples" / "manifests"
QUIET = {"POWERTOOLS_LOG_LEVEL": "ERROR", "POWERTOOLS_METRICS_DISABLED": "true"}


class ScenarioError(ValueError):
    """A scenario file that cannot be run, with the field at fault."""


@dataclass(frozen=True)
class Scenario:
    name: str
    start: datetime
    manifests: list[Path]
    spot_start_delay: float = 300.0
    interruptions: list[float] = field(default_factory=list)
    capacity_gaps: list[tuple[float, float]] = field(default_factory=list)  # offsets from start, seconds
    on_demand_start_delay: float = 480.0
    duration: float | None = None  # None: each manifest's expectedDuration
    fail_after: float | None = None
    missing: list[str] = field(default_factory=list)  # manifest fields whose resources the account lacks
    team_policy: dict[str, Any] | None = None  # the stack's TeamPolicy; None: each team gets what it names


def _seconds(raw: Any, where: str) -> float:
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    try:
        return float(parse_duration(str(raw)))
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from None


def load_scenario(path: Path | None) -> Scenario:
    """Read a scenario file (see README "Scenarios"); None gives the default scenario."""
    path = path or DEFAULT_SCENARIO
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path}: a scenario is a mapping of fields")
    known = {"name", "start", "manifests", "spot", "onDemand", "training", "missing", "teamPolicy"}
    if unknown := sorted(set(raw) - known):
        raise ScenarioError(f"{path}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    spot, on_demand, training = raw.get("spot") or {}, raw.get("onDemand") or {}, raw.get("training") or {}
    start_raw = raw.get("start")
    try:
        start = (
            datetime.fromisoformat(str(start_raw).upper()) if start_raw else datetime.now(UTC).replace(microsecond=0)
        )
    except ValueError:
        raise ScenarioError(f"start: {start_raw!r} is not an RFC 3339 timestamp") from None
    if start.tzinfo is None:
        raise ScenarioError("start: needs an offset such as Z")
    manifests = (
        [(path.parent / m).resolve() for m in raw["manifests"]]
        if raw.get("manifests")
        else sorted(SAMPLE_MANIFESTS.glob("*.yaml"))
    )
    for manifest in manifests:
        if not manifest.is_file():
            raise ScenarioError(f"manifests: {manifest} does not exist")
    gaps = []
    for index, gap in enumerate(spot.get("capacityGaps") or []):
        where = f"spot.capacityGaps[{index}]"
        if not isinstance(gap, dict) or set(gap) != {"from", "to"}:
            raise ScenarioError(f"{where}: needs exactly 'from' and 'to'")
        begin, end = _seconds(gap["from"], f"{where}.from"), _seconds(gap["to"], f"{where}.to")
        if end <= begin:
            raise ScenarioError(f"{where}: 'to' must be after 'from'")
        gaps.append((begin, end))
    return Scenario(
        name=str(raw.get("name") or path.stem),
        start=start.astimezone(UTC),
        manifests=manifests,
        spot_start_delay=_seconds(spot.get("startDelay", 300), "spot.startDelay"),
        interruptions=sorted(_seconds(v, "spot.interruptions") for v in spot.get("interruptions") or []),
        capacity_gaps=gaps,
        on_demand_start_delay=_seconds(on_demand.get("startDelay", 480), "onDemand.startDelay"),
        duration=_seconds(training["duration"], "training.duration") if "duration" in training else None,
        fail_after=_seconds(training["failAfter"], "training.failAfter") if "failAfter" in training else None,
        missing=[str(m) for m in raw.get("missing") or []],
        team_policy=_team_policy(raw["teamPolicy"], path.parent) if "teamPolicy" in raw else None,
    )


def _team_policy(raw: Any, folder: Path) -> dict[str, Any]:
    """The scenario's `teamPolicy:` (the TeamPolicy JSON shape, inline or a JSON file relative to
    the scenario), checked as the stack would."""
    if isinstance(raw, str):
        try:
            raw = json.loads((folder / raw).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ScenarioError(f"teamPolicy: cannot read {raw}: {exc}") from None
    if not isinstance(raw, dict):
        raise ScenarioError("teamPolicy: must be a mapping in the TeamPolicy shape ({teams: {<team>: {...}}})")
    try:
        TeamPolicy.from_json(json.dumps(raw))
    except TeamPolicyInvalid as exc:
        raise ScenarioError("; ".join(f"teamPolicy.{e.path}: {e.message}" for e in exc.errors)) from None
    return raw


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
    return {"scenario": scenario.name, "executions": executions}


def _run_manifest(scenario: Scenario, manifest: Path, verbose: bool) -> dict[str, Any]:
    body = manifest.read_bytes()
    spec = validate_bytes(body, now=scenario.start).spec
    team = spec.team if spec else "sandbox"
    if scenario.team_policy is not None:
        policy = scenario.team_policy
    else:
        policy = {"teams": {spec.team: team_allowance(spec)}} if spec else {"teams": {}}
    weather = SpotWeather(
        capacity_gaps=[
            (scenario.start + timedelta(seconds=a), scenario.start + timedelta(seconds=b))
            for a, b in scenario.capacity_gaps
        ],
        interruptions=list(scenario.interruptions),
        spot_start_delay=scenario.spot_start_delay,
        on_demand_start_delay=scenario.on_demand_start_delay,
    )
    duration = scenario.duration or (spec.expected_duration_seconds if spec else None) or 3600.0

    def behaviour(_request: dict[str, Any]) -> TrainingBehaviour:
        return TrainingBehaviour(duration=duration, fail_after=scenario.fail_after)

    key = f"manifests/{team}/{manifest.name}"
    environment = {"TEAM_POLICY": json.dumps(policy), **({} if verbose else QUIET)}
    with start_local_stack(scenario.start, environment=environment, weather=weather, behaviour=behaviour) as stack:
        if spec:
            prepare_account(stack.client, spec, missing=scenario.missing)
        stack.client("s3").put_object(Bucket=stack.bucket, Key=key, Body=body)
        (started,) = stack.deliver_events()
        execution = stack.wait_for_execution(started["executionArn"], timeout=600)
        history = stack.history(started["executionArn"])
        jobs = stack.standin.jobs
        reports = {outcome: _read_json(stack, f"reports/{key}.{outcome}.json") for outcome in ("outcome", "rejected")}
        finished_clock = stack.clock.now()
    return summarize(
        scenario=scenario,
        manifest=manifest,
        execution=execution,
        history=history,
        jobs=jobs,
        reports=reports,
        duration=duration,
        finished_clock=finished_clock,
    )


def _read_json(stack: Any, key: str) -> dict[str, Any] | None:
    try:
        return json.loads(stack.client("s3").get_object(Bucket=stack.bucket, Key=key)["Body"].read())  # type: ignore[no-any-return]
    except Exception:
        return None


def summarize(
    *,
    scenario: Scenario,
    manifest: Path,
    execution: dict[str, Any],
    history: list[dict[str, Any]],
    jobs: list[Any],
    reports: dict[str, dict[str, Any] | None],
    duration: float,
    finished_clock: datetime,
) -> dict[str, Any]:
    report = reports.get("outcome") or {}
    figures = report.get("figures") or {}
    job = _job_from_history(history)
    instance, count = (job["instanceType"], job["instanceCount"]) if job else ("", 0)
    upload = 60.0
    return {
        "name": execution["name"],
        "manifest": str(manifest.relative_to(PROJECT_ROOT)) if manifest.is_relative_to(PROJECT_ROOT) else str(manifest),
        "status": execution["status"],
        "error": execution.get("error"),
        "cause": execution.get("cause"),
        "attempts": figures.get("attempts", len(jobs)),
        "spotInterruptions": sum(job.interruptions for job in jobs),
        "onDemandFallback": bool(figures.get("on_demand_fallback", False)),
        "deadline": figures.get("deadline") or job.get("deadline"),
        "finishedAt": figures.get("finished_at"),
        "deadlineMet": figures.get("deadline_met"),
        "trainingSeconds": int(sum(job.training_seconds for job in jobs)),
        "billableSeconds": int(sum(job.billable_seconds for job in jobs)),
        "lostWorkSeconds": int(sum(job.lost_work_seconds for job in jobs)),
        "costUsd": figures.get("cost_usd", 0.0),
        "onDemandCostUsd": cost_usd(instance, count, duration + upload) if job else 0.0,
        "stateTransitions": sum(1 for e in history if e["type"].endswith("StateEntered")),
        "historyEvents": len(history),
        "maxStateBytes": max_state_bytes(history),
        "timeline": timeline(history, scenario.start),
        "virtualEnd": finished_clock.isoformat().replace("+00:00", "Z"),
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
    return "\n".join(out)


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
    }


def render_stories(summary: dict[str, Any]) -> str:
    """`--explain`: the explain story of each execution, as `spotline explain` prints it."""
    note = (
        "Explain (as `spotline explain` tells it; started/stopped are the replay's wall-clock times, "
        "the timeline runs on the virtual clock)"
    )
    return "\n\n".join([note, *(render_story(run["story"]) for run in summary["executions"])])


def main(scenario_path: Path | None, *, as_json: bool, verbose: bool, stories: bool = False) -> int:
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
    return 0
