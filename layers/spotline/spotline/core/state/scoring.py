"""The scoring run's sections (statemachines/scoring_run.asl.json): `$.scoring` and `$.outcome` (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from spotline.core.state.fields import StateRecord, key


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringPlan(StateRecord):
    """`$.scoring.plan`: whether PlanScoringRun admitted the night, and its plan in words."""

    SECTION: ClassVar[str] = "$.scoring.plan"
    valid: bool = key("valid", "the night may run")
    problems: list[dict[str, str]] = key("problems", "why not (`path`, `message`: the first 20)")
    job: str | None = key("job", "the scoring job's name", omit_none=True)
    instance_type: str | None = key("instanceType", "its instance type", omit_none=True)
    summary: str = key("summary", "records, shards, instances and throughput; or the problems")
    start_at: str | None = key("startAt", "when the night starts (null: refused)")


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringRunState(StateRecord):
    """`$.scoring.run`: the night under way (`spotline.aws.scoring.scoring_runs.ScoringRun`'s state)."""

    SECTION: ClassVar[str] = "$.scoring.run"
    run_id: str = key("runId", "the night's id")
    model: str = key("model", "the SageMaker model scoring it")
    input: str = key("input", "the night's input prefix")
    output: str = key("output", "this run's output prefix")
    start: str = key("start", "when it started (RFC 3339)")
    due: str = key("due", "the window's end (RFC 3339)")
    records: int = key("records", "records to score")
    sizing: dict[str, Any] = key("sizing", "how the fleet was sized (`instances`, `recordsPerSecond`, ...)")
    shards: list[dict[str, Any]] = key("shards", "each shard (`index`, `size`, `job`, `startedAt`, `endedAt`)")
    target: int = key("target", "instances to run now")
    probing: bool = key("probing", "the first shard runs alone to measure the throughput")
    at_risk: str | None = key("atRisk", "the WindowAtRisk notice sent, if any")
    measured_records_per_second: float | None = key(
        "measuredRecordsPerSecond", "per instance, from the finished shards"
    )
    notifications: list[dict[str, str]] = key("notifications", "what on-call was told")
    jobs_key: str = key("jobsKey", "in every transform job's name: the execution's")
    projected_end: str | None = key("projectedEnd", "when the last look projected the last shard to end")
    next_check_seconds: int = key("nextCheckSeconds", "when the next look is due")
    done: bool = key("done", "every shard ended, or one failed")
    checked_at: str | None = key(
        "checkedAt", "the last look (RFC 3339; absent: PlanScoringRun's run, not looked at yet)", omit_none=True
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Scoring(StateRecord):
    """`$.scoring`: PlanScoringRun's and AdvanceScoringRun's answer."""

    SECTION: ClassVar[str] = "$.scoring"
    plan: ScoringPlan = key("plan", "the night's plan", record=ScoringPlan)
    run: ScoringRunState | None = key("run", "the night under way (null: refused)", record=ScoringRunState)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringOutcome(StateRecord):
    """`$.outcome` of a scoring run: RecordScoringRun's figures of the night."""

    SECTION: ClassVar[str] = "$.outcome"
    window_met: bool = key("windowMet", "every shard ended before the window's end")
    window_end: str = key("windowEnd", "the window's end (RFC 3339)")
    finished_at: str | None = key("finishedAt", "when the last shard ended")
    duration_seconds: int | None = key("durationSeconds", "from the start to the last shard's end")
    margin_seconds: int | None = key("marginSeconds", "the window's end minus that (negative: missed)")
    instances: int = key("instances", "the instances the plan sized")
    records_per_second: float | None = key("recordsPerSecond", "the measured throughput per instance")
    failed_shards: list[int] = key("failedShards", "the shards whose transform job failed")
    report: str = key("report", "the night's report beside the manifest")
    run_id: str | None = key("runId", "the night's run (in the answer only: `$.scoring.run` has it)", answer_only=True)
    peak_instances: int | None = key(
        "peakInstances", "the most instances at once (in the answer only)", answer_only=True
    )
    records: int | None = key("records", "the records scored (in the answer only)", answer_only=True)
    notifications: list[dict[str, str]] | None = key(
        "notifications", "what on-call was told (in the answer only: `$.scoring.run` has it)", answer_only=True
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TransformJobsStopped(StateRecord):
    """`$.cleanup` of a scoring run: the transform jobs RecordScoringRun stopped after a failed step."""

    SECTION: ClassVar[str] = "$.cleanup"
    stopped: list[str] = key("stopped", "the transform jobs it stopped")
    failed_shards: list[int] | None = key(
        "failedShards", "none: the night did not end (in the answer only)", answer_only=True
    )
    window_met: bool | None = key("windowMet", "false: the night did not end (in the answer only)", answer_only=True)
