"""`spotline sandbox` for a fleet: every upload of the scenario goes to one local stack, so the
executions share one training queue (its capacity in instances) and one virtual clock.

The sandbox itself takes part in the clock (`VirtualClock.join`): it sleeps until each upload's
moment, uploads (a new object version, so a new execution), and once the last upload is done
sleeps until every execution has ended. Time moves only when every execution and the sandbox
wait, and executions take turns, so a replay repeats itself. Each execution's end is delivered
to the rules at its moment (StopExecutionJobs cleans up as the run ends, not after the fleet).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, redirect_stdout
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from spotline.core.manifest.manifest import validate_bytes
from spotline.core.spec.model import JobSpec, to_rfc3339
from spotline.core.state import ContinuedAs
from spotline.core.teams.team_ownership import shared_with_each_other
from spotline.core.training.service_jobs import job_name_prefix
from spotline_dev.harness.local.executions import ExecutionRecord
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.peers import every_job, every_ledger
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.sandbox.account import played_account, played_capacity, prepare_account, team_allowance
from spotline_dev.harness.sandbox.file_systems import check_zones, needs_vpc, play_file_systems
from spotline_dev.harness.sandbox.replicas import list_replica_file_systems, play_replicas, played_replicas
from spotline_dev.harness.sandbox.runs import (
    ENDED,
    QUIET,
    follow_run,
    left_running,
    notifications_of,
    peer_weathers,
    rfc3339_or_none,
    settle,
    summarize,
    weather_of,
)
from spotline_dev.harness.sandbox.scenario import Scenario, ScenarioError
from spotline_dev.harness.sandbox.team_changes import schedule_team_changes
from spotline_dev.harness.standin import ServiceJobView, TrainingBehaviour

DRIVER = "spotline-sandbox"  # the sandbox's own key on the clock
HORIZON_SECONDS = 90 * 86400.0  # the longest the sandbox waits for the last execution to end


@dataclass(frozen=True)
class Upload:
    """One upload of a fleet scenario: `body` is what is put at `key`, `moment` seconds in."""

    moment: float
    manifest: Path
    spec: JobSpec
    key: str
    body: bytes


def uploads_of(scenario: Scenario) -> list[Upload]:
    """Every upload of the scenario in time order (`manifests:` at the start, then `submissions:`).
    A manifest uploaded more than once is a new job each time, as a sweep submits trials or a team
    reruns a job: `metadata.name` `<name>-<n>` and a checkpoint prefix of its own (`.../upload-<n>/`).
    With one name, CheckNoLiveJob would refuse a run while the last is still queued (two runs of a
    job would share a checkpoint prefix), and with one prefix a run would resume from the last one's
    final checkpoint."""
    planned: list[tuple[float, Path, float | None]] = [(0.0, manifest, None) for manifest in scenario.manifests]
    planned += [(m, s.manifest, s.deadline_after) for s in scenario.submissions for m in s.moments()]
    planned.sort(key=lambda entry: entry[0])  # stable: at the same moment, in the scenario's order
    times_uploaded = {manifest: sum(1 for _, m, _ in planned if m == manifest) for _, manifest, _ in planned}
    uploads, occurrences = [], dict.fromkeys(times_uploaded, 0)
    for moment, manifest, deadline_after in planned:
        occurrences[manifest] += 1
        raw = yaml.safe_load(manifest.read_bytes())
        spec_raw = raw.get("spec") if isinstance(raw, dict) else None
        if isinstance(spec_raw, dict):
            if deadline_after is not None:
                deadline = scenario.start + timedelta(seconds=moment + deadline_after)
                spec_raw.setdefault("capacity", {})["deadline"] = to_rfc3339(deadline)
            if times_uploaded[manifest] > 1:
                _rerun(raw, spec_raw, occurrences[manifest])
        body = yaml.safe_dump(raw, sort_keys=False).encode()
        result = validate_bytes(body, now=scenario.start + timedelta(seconds=moment))
        if result.spec is None:
            problems = "; ".join(f"{e.path}: {e.message}" for e in result.errors)
            raise ScenarioError(f"{manifest}: not a valid manifest at {timedelta(seconds=moment)}: {problems}")
        key = f"manifests/{result.spec.team}/{manifest.name}"
        uploads.append(Upload(moment, manifest, result.spec, key, body))
    return uploads


def _rerun(raw: dict[str, Any], spec_raw: dict[str, Any], number: int) -> None:
    """Make the manifest the `number`-th run of a repeated job: its own name and checkpoint prefix."""
    metadata = raw.get("metadata")
    if isinstance(metadata, dict) and metadata.get("name"):
        metadata["name"] = f"{metadata['name']}-{number}"
    checkpoint = spec_raw.get("checkpoint")
    if isinstance(checkpoint, dict) and checkpoint.get("s3Uri"):
        checkpoint["s3Uri"] = f"{str(checkpoint['s3Uri']).rstrip('/')}/upload-{number}/"


def team_policy_for(scenario: Scenario, uploads: list[Upload]) -> dict[str, Any]:
    """The scenario's TeamPolicy, or one allowing each team what its manifests ask for; with
    `regions:`, each team's replicas there (as the platform team would declare them)."""
    policy = _allowances(scenario, uploads)
    if scenario.regions:
        home = played_account([u.spec for u in uploads], scenario.account).region
        for upload in uploads:
            entry = policy.get("teams", {}).get(upload.spec.team)
            if entry is not None and "replicas" not in (scenario.team_policy or {}).get("teams", {}).get(
                upload.spec.team, {}
            ):
                entry.setdefault("replicas", {}).update(played_replicas(upload.spec, home, scenario.regions))
                list_replica_file_systems(entry)
    if scenario.team_policy is None:  # teams whose manifests name the same resource share it
        policy = {"teams": shared_with_each_other(policy.get("teams", {}))}
    return policy


def _allowances(scenario: Scenario, uploads: list[Upload]) -> dict[str, Any]:
    if scenario.team_policy is not None:
        return scenario.team_policy
    teams: dict[str, dict[str, Any]] = {}
    for upload in uploads:
        allowance = team_allowance(upload.spec)
        merged = teams.setdefault(upload.spec.team, allowance)
        if merged is allowance:
            continue
        for name in ("instanceFamilies", "roles", "s3Prefixes", "images"):
            merged[name] = sorted(set(merged[name]) | set(allowance[name]))
        for name in ("maxInstances", "maxPriority"):
            merged[name] = max(merged[name], allowance[name])
        merged["deepLearningContainers"] = merged["deepLearningContainers"] or allowance["deepLearningContainers"]
    return {"teams": teams}


def training_behaviour(scenario: Scenario, uploads: list[Upload]) -> Callable[[dict[str, Any]], TrainingBehaviour]:
    """Each training job trains for its manifest's expectedDuration (found by the job's tags), or
    the scenario's `training.duration`."""
    durations = {(u.spec.team, u.spec.name): u.spec.expected_duration_seconds for u in uploads}

    def behaviour(request: dict[str, Any]) -> TrainingBehaviour:
        tags = {tag["Key"]: tag["Value"] for tag in request.get("Tags") or []}
        declared = durations.get((tags.get("spotline:team", ""), tags.get("spotline:job", "")))
        return TrainingBehaviour(
            duration=scenario.duration or declared or 3600.0,
            fail_after=scenario.fail_after,
            hardware_faults=tuple(scenario.hardware_faults),
        )

    return behaviour


@contextmanager
def fleet_stack(scenario: Scenario, uploads: list[Upload], *, verbose: bool = False) -> Iterator[LocalStack]:
    """One local stack for every upload of the scenario: its queue capacity, spot weather and team
    policy, each team's account prepared."""
    policy = team_policy_for(scenario, uploads)
    environment = {} if verbose else dict(QUIET)
    played = played_account([u.spec for u in uploads], scenario.account)
    in_vpc = needs_vpc([u.spec for u in uploads])
    check_zones(scenario.zones, played.region, in_vpc)
    with ExitStack() as scope:
        stack = scope.enter_context(
            start_local_stack(
                scenario.start,
                environment=environment,
                team_policy=policy,
                network=in_vpc,
                weather=weather_of(scenario),
                behaviour=training_behaviour(scenario, uploads),
                capacity=played_capacity([u.spec for u in uploads], scenario.capacity),
                account=played.id,
                region=played.region,
                parameters={"TrainingRolePath": played.role_path},
                peers=peer_weathers(scenario),
                prices=scenario.prices,
            )
        )
        if not verbose:
            scope.enter_context(redirect_stdout(io.StringIO()))  # as in the single-manifest sandbox
        for spec in {u.spec.name + u.spec.team: u.spec for u in uploads}.values():
            prepare_account(stack.client, spec, missing=scenario.missing)
            play_file_systems(stack, spec, scenario.missing)
            replicas = policy.get("teams", {}).get(spec.team, {}).get("replicas", {})
            play_replicas(stack, scenario, spec, replicas)
        yield stack


def run_fleet(scenario: Scenario, *, verbose: bool = False) -> dict[str, Any]:
    """Run every upload of the scenario in one stack; returns the sandbox summary."""
    uploads = uploads_of(scenario)
    with fleet_stack(scenario, uploads, verbose=verbose) as stack:
        if scenario.stop_execution_at is not None:
            stack.stop_executions_after(scenario.stop_execution_at)
        for fault in scenario.faults:
            stack.inject_fault(fault.function, count=fault.count, start=scenario.start + timedelta(seconds=fault.start))
        team_changes = schedule_team_changes(stack, scenario.start, scenario.team_changes)
        delivery_errors: list[str] = []
        started = _play(stack, scenario, uploads, delivery_errors)
        settle(stack)
        reports = _outcome_reports(stack)
        runs = [
            _summarize_run(stack, scenario, upload, arn, delivery_errors, reports=reports) for upload, arn in started
        ]
        jobs = every_job(stack)
        virtual_end = stack.clock.now()
        quotas = quota_capacity(stack)
    left = [left_running(_run_of(job, runs), job) for job in jobs if job.status not in ENDED]
    account = played_account([u.spec for u in uploads], scenario.account).describe()
    return {
        "scenario": scenario.name,
        "executions": [run | {"account": account} for run in runs],
        "leftRunning": left,
        "jobs": jobs,
        "virtualEnd": virtual_end,
        "capacity": stack.queue_capacities["TrainingJobQueue"],
        "sharedQueue": True,
        "quotas": quotas,
        "teamChanges": team_changes,
    }


def quota_capacity(stack: LocalStack) -> dict[str, dict[str, int]]:
    """Each quota share of the training queue (one per team, named after it) and its capacity
    limits per instance type, as Batch has it (ListQuotaShares)."""
    batch = stack.client("batch")  # not spotline.aws: its logger would be made before the handlers' settings
    page = batch.list_quota_shares(jobQueue=stack.physical["TrainingJobQueue"], maxResults=100)  # 20 at most
    return {
        share["quotaShareName"]: {limit["capacityUnit"]: limit["maxCapacity"] for limit in share["capacityLimits"]}
        for share in page.get("quotaShares", [])
        if share.get("state") == "ENABLED"
    }


def _play(
    stack: LocalStack, scenario: Scenario, uploads: list[Upload], delivery_errors: list[str]
) -> list[tuple[Upload, str]]:
    """Upload each manifest at its moment, on the shared clock; returns each upload with the
    execution Intake started for it, once every execution has ended."""
    clock = stack.clock
    assert stack.executions is not None

    def deliver() -> None:
        stack.deliver_events(on_error=lambda rule, error: delivery_errors.append(f"{rule}: {error}"))

    def on_end(record: ExecutionRecord) -> None:
        clock.at(record.ended_at or clock.now(), deliver)

    stack.executions.on_end = on_end
    started: list[tuple[Upload, str]] = []
    clock.join(DRIVER)
    try:
        for upload in uploads:
            wait = (scenario.start + timedelta(seconds=upload.moment) - clock.now()).total_seconds()
            if wait > 0:
                clock.sleep(wait, key=DRIVER)
            stack.client("s3").put_object(Bucket=stack.bucket, Key=upload.key, Body=upload.body)
            results = stack.deliver_events(
                on_error=lambda rule, error: delivery_errors.append(f"{rule}: {error}"), sources=("aws.s3",)
            )
            arns = [r["executionArn"] for r in results if isinstance(r, dict) and r.get("executionArn")]
            if len(arns) != 1:
                raise RuntimeError(f"the upload of {upload.key} at {upload.moment}s started {arns or 'no execution'}")
            started.append((upload, arns[0]))
        clock.sleep(HORIZON_SECONDS, key=DRIVER, interrupted=lambda: clock.participants == 1)
    finally:
        clock.leave(DRIVER)
        stack.executions.on_end = None
    clock.advance(0)  # the deliveries due at the last end
    return started


def _summarize_run(
    stack: LocalStack,
    scenario: Scenario,
    upload: Upload,
    arn: str,
    delivery_errors: list[str],
    *,
    reports: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    execution, history = follow_run(stack, arn, delivery_errors, timeout=5)
    names = _chain(stack, arn)
    jobs = [job for job in every_job(stack) if any(job.job_name.startswith(job_name_prefix(n)) for n in names)]
    run = summarize(
        scenario=scenario,
        manifest=upload.manifest,
        execution=execution,
        history=history,
        jobs=jobs,
        reports={"outcome": reports.get(arn) or reports.get(execution["executionArn"])},
    )
    return run | {
        "team": upload.spec.team,
        "job": upload.spec.name,
        "uploadedAt": to_rfc3339(scenario.start + timedelta(seconds=upload.moment)),
        "instanceType": upload.spec.instance_type,
        "instanceCount": upload.spec.instance_count,
        "executionEndedAt": rfc3339_or_none(stack.execution(execution["executionArn"]).ended_at),
        "virtualEnd": rfc3339_or_none(stack.clock.now()),
        "faults": [],
        "deliveryErrors": [],
        "notifications": notifications_of(stack, run["name"]),
        "history": history,
        "jobIds": [job.job_id for job in jobs],
        "ledger": every_ledger(stack).get(names[0]),
    }


def _chain(stack: LocalStack, arn: str) -> list[str]:
    """The names of the executions a run went through, following `$.continuedAs`."""
    sfn, names = stack.client("stepfunctions"), []
    following: str | None = arn
    while following:
        arn = following
        described = sfn.describe_execution(executionArn=arn)
        names.append(described["name"])
        continued = ContinuedAs.in_state(json.loads(described.get("output") or "{}"))
        following = continued.execution_arn if continued is not None else None
    return names


def _outcome_reports(stack: LocalStack) -> dict[str, dict[str, Any]]:
    """Every run's outcome report, by the execution that wrote it: each version of
    `reports/<key>.outcome.json` (a manifest uploaded again writes the same key), newest first,
    read once for the whole fleet (a listing per run made a month's replay quadratic)."""
    s3 = stack.client("s3")
    reports: dict[str, dict[str, Any]] = {}
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=stack.bucket, Prefix="reports/"):
        for version in page.get("Versions", []):
            if not version["Key"].endswith(".outcome.json"):
                continue
            body = s3.get_object(Bucket=stack.bucket, Key=version["Key"], VersionId=version["VersionId"])["Body"]
            report = json.loads(body.read())
            reports.setdefault(str(report.get("execution")), report)
    return reports


def _run_of(job: ServiceJobView, runs: list[dict[str, Any]]) -> str:
    return next((run["name"] for run in runs if job.job_id in run["jobIds"]), "?")
