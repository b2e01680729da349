"""The scoring run's steps against AWS, shared by its Lambdas (PlanScoringRun, AdvanceScoringRun,
RecordScoringRun): the manifest version read and validated as a scoring job, the team's allowance
and model checked, the throughput of past nights, the on-call notice, and a night's metrics,
throughput record and report. The decisions are `spotline.core.scoring.scoring_plan`'s and
`spotline.core.scoring.scoring_policy`'s; the run itself is `spotline.aws.scoring.scoring_runs`'."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from spotline.aws.billing.reporting import try_publish_alert
from spotline.aws.common.clients import resource
from spotline.aws.common.observability import add_team_dimension, metrics
from spotline.aws.manifest.manifest_store import read_manifest
from spotline.aws.manifest.reports import write_report
from spotline.aws.scoring.scoring_models import model_facts, model_parts_problems, named_model_problems
from spotline.aws.scoring.scoring_runs import ScoringRun, ThroughputStore
from spotline.aws.teams.team_registry import admission_policy
from spotline.core.common.errors import ManifestError
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.scoring.scoring import ScoringSpec
from spotline.core.scoring.scoring_policy import scoring_team_errors
from spotline.core.spec.model import to_rfc3339
from spotline.core.teams.team_policy import TeamPolicyInvalid

THROUGHPUT_TABLE = "SCORING_THROUGHPUT_TABLE"
ALERT_TOPIC = "ALERT_TOPIC_ARN"
MARGIN_METRIC = "ScoringWindowMarginSeconds"


def scoring_spec_of(source: dict[str, Any]) -> tuple[ScoringSpec | None, list[ManifestError]]:
    """The scoring job of the manifest version `source` names, validated as of its upload (a
    later step reads the same version and gets the same spec)."""
    data = read_manifest(source["bucket"], source["key"], source.get("versionId"))
    received = datetime.fromisoformat(str(source["receivedAt"]).replace("Z", "+00:00"))
    result = validate_bytes(data, now=received, expected_team=source.get("team"))
    if result.scoring is not None:
        return result.scoring, []
    return None, result.errors or [ManifestError("kind", "is TrainingJob: the training lifecycle runs it")]


def scoring_spec_for_step(source: dict[str, Any]) -> ScoringSpec:
    """The run's scoring job, for a step after PlanScoringRun validated it (the same version)."""
    spec, problems = scoring_spec_of(source)
    if spec is None:
        raise ValueError(f"the manifest version no longer reads as a scoring job: {problems[0]}")
    return spec


def admission_problems(spec: ScoringSpec) -> list[ManifestError]:
    """What the team's registry entry and the model refuse of the job (read fresh, as training's):
    a named model's role and image; a model to register, its parts as they are in the account."""
    try:
        allowance = admission_policy(spec.team).allowance(spec.team)
    except TeamPolicyInvalid as exc:
        return list(exc.errors)
    if spec.model.name is None:
        problems = scoring_team_errors(spec, allowance, None)
        return problems or model_parts_problems(spec)
    problems = scoring_team_errors(spec, allowance, model_facts(spec.model.name))
    return problems or named_model_problems(spec)


def throughput_store() -> ThroughputStore | None:
    name = os.environ.get(THROUGHPUT_TABLE)
    return ThroughputStore(resource("dynamodb").Table(name)) if name else None


def notify(spec: ScoringSpec, run_id: str, kind: str, cause: str) -> None:
    """On-call's message for a scoring run (WindowAtRisk, ScoringFailed), best effort."""
    topic = os.environ.get(ALERT_TOPIC)
    if not topic:
        return
    try_publish_alert(
        topic,
        kind=kind,
        team=spec.team,
        job=spec.name,
        owner=spec.owner,
        what=f"Scoring run {run_id} of {spec.team}/{spec.name}: {kind}",
        cause=cause,
        next_step=(
            "raise spec.resources.maxInstances, or split the input into more objects, or move the window"
            if kind == "WindowAtRisk"
            else "read the failed transform job's FailureReason, fix it and drop the manifest again"
        ),
        links_={},
    )


def night_figures(run: ScoringRun) -> dict[str, Any]:
    """The night as the report and the metrics give it."""
    start, due = datetime.fromisoformat(run.start), datetime.fromisoformat(run.due)
    ends = [datetime.fromisoformat(s.ended_at) for s in run.shards if s.ended_at]
    finished = max(ends) if ends and len(ends) == len(run.shards) else None
    return {
        "runId": run.run_id,
        "instances": run.sizing["instances"],
        "peakInstances": run.target,
        "records": run.records,
        "recordsPerSecond": run.measured,
        "windowEnd": to_rfc3339(due),
        "finishedAt": to_rfc3339(finished.replace(microsecond=0)) if finished else None,
        "windowMet": finished is not None and finished <= due,
        "durationSeconds": round((finished - start).total_seconds()) if finished else None,
        "marginSeconds": round((due - finished).total_seconds()) if finished else None,
        "failedShards": [s.index for s in run.shards if s.failed],
        "notifications": list(run.notifications),
    }


def record_night(spec: ScoringSpec, run: ScoringRun, source: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The night's metrics, its measured throughput for the next nights, and its report."""
    figures = night_figures(run)
    add_team_dimension(spec.team)
    metrics.add_dimension(name="job", value=spec.name)
    metrics.add_metric(name="ScoringRuns", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="ScoringWindowsMissed", unit=MetricUnit.Count, value=0 if figures["windowMet"] else 1)
    metrics.add_metric(name="ScoringRecords", unit=MetricUnit.Count, value=run.records)
    if figures["durationSeconds"] is not None:
        metrics.add_metric(name="ScoringDurationSeconds", unit=MetricUnit.Seconds, value=figures["durationSeconds"])
        metrics.add_metric(name=MARGIN_METRIC, unit=MetricUnit.Seconds, value=figures["marginSeconds"])
        # The stack-wide margin (service dimension only) the trend alarm watches: its daily minimum
        # is the night's smallest margin across jobs (ScoringWindowTrendAlarm).
        with single_metric(name=MARGIN_METRIC, unit=MetricUnit.Seconds, value=figures["marginSeconds"]):
            pass
    if run.measured:
        metrics.add_metric(name="ScoringRecordsPerSecond", unit=MetricUnit.Count, value=run.measured)
        store = throughput_store()
        if store is not None and not figures["failedShards"]:
            store.record(spec, run.model, run.run_id, run.start, run.measured)
    report = {
        "outcome": "scored" if not figures["failedShards"] else "failed",
        "kind": "ScoringJob",
        "manifest": {k: source.get(k) for k in ("bucket", "key", "versionId")},
        "recordedAt": to_rfc3339(now),
        "sizing": run.sizing,
        **figures,
    }
    location = write_report(source["bucket"], f"reports/{source['key']}.{run.run_id}.scoring.json", report)
    return {**figures, "report": location}
