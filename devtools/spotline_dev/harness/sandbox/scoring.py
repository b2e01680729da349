"""Scoring manifests (`kind: ScoringJob`) in the sandbox: a stack of their own, the team's entry
as the manifest needs it, the night's input written (scenario `transform.objects` objects of the
declared records, or of DEFAULT_RECORDS lines when the manifest declares none: Spotline then
counts them from the bytes, as in AWS), the model registered, the stand-in's Batch Transform at
the scenario's throughput (`transform:`; without it, the manifest's declared one), and the
manifest uploaded; with `dependsOn`, a Dataset Ready event for
each dataset at the scenario's start. The run's `--json` entry has the training runs' keys (with
nothing trained) and the scoring ones: kind, instances, windowEnd, finishedAt, windowMet,
recordsPerSecond, notifications."""

from __future__ import annotations

import io
import json
from contextlib import ExitStack, redirect_stdout
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from spotline.aws.common.clients import split_s3_uri
from spotline.core.scoring.scoring import ScoringSpec
from spotline.core.spec.catalog import family_of
from spotline.core.state import Scoring, ScoringOutcome
from spotline_dev.explain import explain, timeline
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.account import ensure_image, ensure_role, played_account
from spotline_dev.harness.sandbox.runs import QUIET, follow_run, max_state_bytes, settle
from spotline_dev.harness.sandbox.scenario import Scenario, TransformSpec
from spotline_dev.harness.standin.sagemaker.transform_jobs import TransformWeather

TEAM_TAG = "spotline:team"
DEFAULT_RECORDS_PER_SECOND = 1000.0
"""The stand-in's throughput without `transform:` for a manifest that declares none (one that
declares `throughput.recordsPerSecond` is scored at that rate: the model is as fast as it says)."""
DEFAULT_RECORDS = 1_000_000
"""The records the sandbox writes for a night whose manifest declares no `input.records`."""
RECORD = b"0123456789\n"  # one record of the night's input, a line (SplitType Line)
ROLE = "arn:aws:iam::{account}:role/{path}/{team}-scoring"
IMAGE = "{account}.dkr.ecr.{region}.amazonaws.com/{team}-model:sandbox"


def scoring_allowance(spec: ScoringSpec, account: str, region: str, role_path: str) -> dict[str, Any]:
    """The team's registry entry as the platform team would give it for this job."""
    model = spec.model
    uris = (spec.input_s3_uri, spec.output_s3_uri, *([model.artifact] if model.artifact else []))
    buckets = {f"s3://{split_s3_uri(uri)[0]}/" for uri in uris}
    return {
        "instanceFamilies": [family_of(spec.instance_type)],
        "maxInstances": spec.max_instances,
        "roles": [model.role_arn or ROLE.format(account=account, path=role_path, team=spec.team)],
        "s3Prefixes": sorted(buckets),
        "images": [model.image or IMAGE.format(account=account, region=region, team=spec.team)],
    }


def run_scoring(
    scenario: Scenario, manifest: Path, spec: ScoringSpec, body: bytes, verbose: bool
) -> tuple[dict[str, Any], list[Any]]:
    played = played_account([spec], scenario.account)
    transform = scenario.transform or TransformSpec(spec.records_per_second or DEFAULT_RECORDS_PER_SECOND)
    entry = scoring_allowance(spec, played.id, played.region, played.role_path)
    with ExitStack() as scope:
        stack = scope.enter_context(
            start_local_stack(
                scenario.start,
                environment={} if verbose else dict(QUIET),
                team_policy=scenario.team_policy or {"teams": {spec.team: entry}},
                account=played.id,
                region=played.region,
                parameters={"TrainingRolePath": played.role_path},
            )
        )
        if not verbose:
            scope.enter_context(redirect_stdout(io.StringIO()))
        stack.standin.transforms.weather = TransformWeather(
            transform.records_per_second,
            [(scenario.start.timestamp() + at, factor) for at, factor in transform.changes],
            transform.start_delay,
        )
        if transform.instance_quota is not None:
            stack.standin.transforms.instance_quota[spec.instance_type] = transform.instance_quota
        prepare_scoring(stack, spec, transform.objects, entry, missing=scenario.missing)
        key = f"manifests/{spec.team}/{manifest.name}"
        stack.client("s3").put_object(Bucket=stack.bucket, Key=key, Body=body)
        (started,) = stack.deliver_events()
        if started.get("status") == "registered":
            for dataset in spec.depends_on:
                detail = {"dataset": dataset, "location": spec.input_s3_uri, "producedAt": _rfc3339(scenario.start)}
                stack.put_dataset_event("Dataset Ready", detail)
            names = [n for result in stack.deliver_events() for n in result.get("scoringRuns", [])]
            machine = stack.state_machine_arn("ScoringRun")
            started = {"executionArn": f"{machine.replace(':stateMachine:', ':execution:')}:{names[-1]}"}
        delivery_errors: list[str] = []
        execution, history = follow_run(stack, started["executionArn"], delivery_errors)
        settle(stack)
        run = _summary(scenario, manifest, spec, execution, history)
        run |= {"virtualEndAt": stack.clock.now(), "deliveryErrors": delivery_errors + stack.delivery_errors}
        now = stack.clock.now().timestamp()
        run["leftRunning"] = [  # a transform job still scoring once its run has ended: nothing watches it
            {"execution": run["name"], "transformJob": job.name, "status": job.status(now)}
            for job in stack.standin.transforms.jobs.values()
            if job.status(now) in ("InProgress", "Stopping")
        ]
        run["account"] = played.describe()
        return run, []


def scoring_result_lines(run: dict[str, Any]) -> list[str]:
    """The run's result, as the sandbox prints it under its timeline."""
    result = f"{run['status']}" + (f" ({run['error']})" if run["error"] else "")
    sizing = run.get("sizing") or {}
    window = "met" if run["windowMet"] else ("MISSED" if run["windowMet"] is False else "not reached")
    ends = f"window {window} (ends {run['windowEnd']})"
    if not run["windowEnd"]:  # not planned: what the manifest asked for, and no finish to show
        lines = [f"  result: {result}; {_unplanned(run)}"]
    else:
        lines = [f"  result: {result}; {ends}, finished {run['finishedAt'] or '-'}"]
    if sizing:
        measured = run["recordsPerSecond"]
        lines.append(
            f"          {sizing['records']:,} records, sized {sizing['instances']} instance(s) at "
            f"{sizing['recordsPerSecond']:,.0f}/s ({sizing['throughputSource']}) with "
            f"{sizing.get('startupsPerInstance', 1)} start-up(s) each, up to {run['peakInstances']} "
            f"in {run['shards']} shards; measured {f'{measured:,.0f}/s' if measured else '-'} per instance"
        )
        if sizing.get("warning"):
            lines.append(f"          warning: {sizing['warning']}")
    lines += [f"          {n['type']} at {n['at']}" for n in run["notifications"]]
    lines.append(
        f"          {run['stateTransitions']} state transitions, {run['historyEvents']} history events, "
        f"largest state {run['maxStateBytes'] / 1024:.1f} KiB"
    )
    return lines


def _unplanned(run: dict[str, Any]) -> str:
    """A run refused before it was planned (or a manifest rejected): its deadline or window as the
    manifest declares it, never `none` for one it has."""
    if run.get("deadline"):
        return f"deadline {run['deadline']} not reached: the run was not planned"
    if run.get("window"):
        return f"window {run['window']} not reached: the night was not planned"
    return "no window: the night was not planned"


def prepare_scoring(stack: Any, spec: ScoringSpec, objects: int, entry: dict[str, Any], missing: list[str]) -> None:
    """The buckets, the night's input (its records spread over `objects` objects) and the model."""
    s3, model = stack.client("s3"), spec.model
    for uri in (spec.input_s3_uri, spec.output_s3_uri, *([model.artifact] if model.artifact else [])):
        bucket = split_s3_uri(uri)[0]
        if bucket not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
            s3.create_bucket(Bucket=bucket)
    if "spec.input.s3Uri" not in missing:
        bucket, prefix = split_s3_uri(spec.input_s3_uri)
        records = spec.records or DEFAULT_RECORDS
        for index in range(objects):
            key = f"{prefix}part-{index:04d}.csv"
            count = records // objects + (1 if index < records % objects else 0)
            if spec.records:  # declared: a small object stands for its share, which the stand-in scores
                s3.put_object(Bucket=bucket, Key=key, Body=RECORD * max(1, min(count, 1000) // 10))
                stack.standin.transform_records[(bucket, key)] = count
            else:  # Spotline counts the records from the bytes, and the stand-in scores the lines it reads
                s3.put_object(Bucket=bucket, Key=key, Body=RECORD * count)
    if model.role_arn and "spec.model.roleArn" not in missing:  # a model to register from its parts
        ensure_role(stack.client("iam"), model.role_arn, spec.team)
    if model.image and "spec.model.image" not in missing:
        ensure_image(stack.client("ecr"), model.image)
    if model.artifact and "spec.model.artifact" not in missing:
        bucket, key = split_s3_uri(model.artifact)
        s3.put_object(Bucket=bucket, Key=key, Body=b"the sandbox's model.tar.gz")
    if spec.model.name and "spec.model.name" not in missing:  # the team's model: tagged, under its tagged role
        ensure_role(stack.client("iam"), entry["roles"][0], spec.team)
        stack.client("sagemaker").create_model(
            ModelName=spec.model.name,
            ExecutionRoleArn=entry["roles"][0],
            PrimaryContainer={"Image": entry["images"][0]},
            Tags=[{"Key": TEAM_TAG, "Value": spec.team}],
        )


def _summary(
    scenario: Scenario, manifest: Path, spec: ScoringSpec, execution: dict[str, Any], history: list[dict[str, Any]]
) -> dict[str, Any]:
    state = _last_state(history)
    night = Scoring.in_state(state)
    run = night.run if night else None  # None: the plan refused the night
    outcome = ScoringOutcome.in_state(state)
    shards = run.shards if run else []
    ends = [s["endedAt"] for s in shards if s.get("endedAt")]
    finished = max(ends) if ends and len(ends) == len(shards) else None
    return {
        "kind": "ScoringJob",
        "name": execution["name"],
        "team": spec.team,
        "manifest": str(manifest.relative_to(PROJECT_ROOT)) if manifest.is_relative_to(PROJECT_ROOT) else str(manifest),
        "status": execution["status"],
        "error": execution.get("error"),
        "cause": execution.get("cause"),
        "instances": run.sizing.get("instances") if run else None,
        "peakInstances": run.target if run else None,
        "sizing": run.sizing if run else None,
        "windowEnd": run.due if run else None,
        "finishedAt": (outcome.finished_at if outcome else None) or (_rfc3339_text(finished) if finished else None),
        "windowMet": outcome.window_met if outcome else None,
        "recordsPerSecond": run.measured_records_per_second if run else None,
        "notifications": list(run.notifications) if run else [],
        "shards": len(shards),
        # The training runs' keys, with nothing trained: the fleet's figures and the text read them.
        "attempts": 0,
        "spotInterruptions": 0,
        "clusterRepairs": 0,
        "onDemandFallback": False,
        "deadline": run.due if run else (_rfc3339(spec.deadline) if spec.deadline else None),
        "window": _window_text(spec),  # for the text: a window the run was not planned in
        "deadlineMet": outcome.window_met if outcome else None,
        "trainingSeconds": 0,
        "billableSeconds": 0,
        "lostWorkSeconds": None,
        "instanceType": spec.instance_type,
        "instanceTypes": [],
        "instanceCount": 0,
        "capacityTiers": [],
        "costUsd": None,
        "costUnknown": None,  # no training job, no training cost (the `--json` contract has the key)
        "costByRegion": {},
        "onDemandCostUsd": None,
        "onDemandSeconds": None,
        "savingsPercent": None,
        "trainingPlanSeconds": 0,
        "regions": [],
        "zones": [],
        "checkpointCopies": {"count": 0, "bytes": 0, "seconds": 0.0, "usd": 0.0},
        "billingSettled": True,
        "prices": [],  # no training price: Batch Transform is not priced
        "stateTransitions": sum(1 for e in history if e["type"].endswith("StateEntered")),
        "historyEvents": len(history),
        "maxStateBytes": max_state_bytes(history),
        "timeline": timeline(history, scenario.start),
        "story": explain(history, execution),
        "start": scenario.start,
        "jobIds": [],
        "trainingStatus": None,
        "history": history,
        "ledger": None,
        "executionEndedAt": None,
        "trainingEndedAt": None,
        "faults": [],
        "teamChanges": [],
        "capacity": None,
    }


def _window_text(spec: ScoringSpec) -> str | None:
    window = spec.window
    return f"{window.start:%H:%M}-{window.end:%H:%M} {window.time_zone}" if window else None


def _last_state(history: list[dict[str, Any]]) -> dict[str, Any]:
    for event in reversed(history):
        for details in ("stateExitedEventDetails", "stateEnteredEventDetails"):
            if details in event and event[details].get("output" if details.startswith("stateExited") else "input"):
                raw = event[details].get("output") or event[details].get("input")
                return json.loads(raw)  # type: ignore[no-any-return]
    return {}


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rfc3339_text(text: str) -> str:
    return _rfc3339(datetime.fromisoformat(text))
