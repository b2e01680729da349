"""A scoring run (`kind: ScoringJob`) as `explain`, `runs` and `status` tell it: the night read from
the execution's newest state document (`$.scoring.plan`, `$.scoring.run`, `$.outcome`), pure.

Every figure is one the run's own steps stored (PlanScoringRun's sizing, AdvanceScoringRun's
shards, pace and projection, RecordScoringRun's outcome): nothing is recomputed here, so what on-call
reads is what the run decided on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from spotline.core.common.durations import format_duration
from spotline.core.scoring.scoring_plan import STARTUP_SECONDS
from spotline.core.state import Scoring, ScoringOutcome
from spotline_dev.explain.history import as_dict, parse_time, read_section

SCORING_NEXT_STEPS = {
    "ScoringManifestRejected": "Fix every error listed (each names its manifest field; `spotline validate` checks "
    "locally) and upload the manifest again; a registered job's next Dataset Ready event then starts its night.",
    "ScoringFailed": "A shard's transform job failed: read its FailureReason (the Transform job link, or "
    "`aws sagemaker describe-transform-job`), fix the model or the input, then upload the manifest again "
    "(or send the night's Dataset Ready event again).",
    "ScoringStepFailed": "A step of the run failed and its transform jobs were stopped: read the cause above, "
    "then upload the manifest again (or send the night's Dataset Ready event again).",
}


@dataclass(frozen=True)
class ScoringNight:
    """One night of a scoring job, as far as the run has got."""

    run_id: str | None
    job: str | None
    instance_type: str | None
    valid: bool
    window_opens: str | None
    window_end: str | None
    records: int | None
    objects: int | None
    instances: int | None  # the sized count
    peak_instances: int | None  # the most the run wanted at once (sized, or raised to keep pace)
    sized_records_per_second: float | None
    throughput_source: str | None  # declared | measured (the last nights') | probe (tonight's first shard)
    headroom_percent: int | None
    measured_records_per_second: float | None
    shards: int
    shards_scored: int
    shards_scoring: int
    failed_shards: list[int]
    probing: bool
    projected_end: str | None
    finished_at: str | None
    window_met: bool | None
    margin_seconds: int | None
    at_risk: str | None
    warning: str | None
    output: str | None
    report: str | None
    notifications: list[dict[str, str]] = field(default_factory=list)
    startups: int | None = None  # the transform jobs each sized instance runs in turn, each with its start-up
    ready_at: str | None = None  # when the night's data was ready (the upload, or the Dataset Ready event)
    dataset: str | None = None  # the dataset whose Dataset Ready event gave the night's input; None: the upload's

    def to_dict(self) -> dict[str, Any]:
        return {_camel(k): v for k, v in asdict(self).items()}

    def state_in_words(self) -> str:
        """Where a running night stands: planning, waiting for its window, scoring k of n shards."""
        if self.run_id is None:
            return "planning"
        if not self.shards_scored and not self.shards_scoring:
            return f"waiting for the window (opens {self.window_opens})"
        if self.probing:
            return f"measuring throughput on shard 0 ({self.shards} shards)"
        return f"scoring: {self.shards_scored} of {self.shards} shards scored, {self.shards_scoring} scoring"

    def window_note(self, now: datetime | None = None) -> str:
        """The window's end and how the night stands against it."""
        if not self.window_end:
            return "not planned"
        if self.window_met is not None:
            said = "met" if self.window_met else "MISSED"
            spare = (
                f", {format_duration(abs(self.margin_seconds))} {'to spare' if self.margin_seconds >= 0 else 'late'}"
                if self.margin_seconds is not None
                else ""
            )
            return f"{self.window_end}: {said} (finished {self.finished_at or 'never'}{spare})"
        if self.projected_end:
            projected, due = parse_time(self.projected_end), parse_time(self.window_end)
            left = (due - projected).total_seconds() if projected and due else 0.0
            margin = f"{format_duration(left)} before it closes" if left >= 0 else f"{format_duration(-left)} late"
            return f"{self.window_end}: projected to finish {self.projected_end} ({margin})"
        if now is not None and (due := parse_time(self.window_end)) and due <= now:
            return f"{self.window_end}: closed before the night finished"
        return f"{self.window_end}: not reached yet"

    def lines(self, now: datetime | None = None) -> list[str]:
        """The `Scoring` section of `explain`, and the figures `status` prints (the window as it
        stands `now`)."""
        out = [f"  Window      {self.window_note(now)}"]
        if self.ready_at:
            source = f"Dataset Ready for {self.dataset}" if self.dataset else "the upload: no dataset event"
            out.append(f"  Data ready  {self.ready_at} ({source})")
        if self.records is not None:
            out.append(f"  Records     {self.records:,} in {self.shards} shards of {self.objects} object(s)")
        if self.instances is not None and self.sized_records_per_second is not None:
            out.append(
                f"  Sized       {self.instances} {self.instance_type or ''} instance(s) at "
                f"{self.sized_records_per_second:,.0f} records/s each ({self.throughput_source}), "
                f"{self.headroom_percent}% headroom{self._startups()}; up to {self.peak_instances} at once"
            )
        measured = self.measured_records_per_second
        out.append(f"  Measured    {f'{measured:,.0f} records/s per instance' if measured else 'not yet'}")
        if self.failed_shards:
            out.append(f"  Failed      shard(s) {', '.join(str(i) for i in self.failed_shards)}")
        if self.warning:
            out.append(f"  Warning     {self.warning}")
        out += [f"  Notice      {n.get('type')} at {n.get('at')}" for n in self.notifications]
        if self.at_risk:
            out.append(f"  At risk     {self.at_risk}")
        if self.output:
            out.append(f"  Output      {self.output}")
        return out

    def _startups(self) -> str:
        """Sizing counts the start-up of every transform job an instance runs in turn."""
        if not self.startups:
            return ""
        jobs = f"{self.startups} transform job{'s' * (self.startups > 1)}"
        return f", each instance {jobs} in turn ({format_duration(STARTUP_SECONDS)} start-up each)"


def scoring_night(state: dict[str, Any]) -> ScoringNight | None:
    """The night from a scoring execution's state document; None for any other execution. A
    `$.scoring` or `$.outcome` of another age (`read_section`: None) tells nothing of the night."""
    if "scoring" not in state:
        return None
    scoring, outcome = read_section(Scoring, state), read_section(ScoringOutcome, state)
    plan, run = (scoring.plan, scoring.run) if scoring is not None else (None, None)
    sizing = as_dict(run.sizing) if run is not None else {}
    shards = [as_dict(s) for s in run.shards] if run is not None else []
    ended = [s["endedAt"] for s in shards if s.get("endedAt")]
    finished = (outcome.finished_at if outcome else None) or (
        max(ended) if shards and len(ended) == len(shards) else None
    )
    return ScoringNight(
        run_id=run.run_id if run else None,
        job=plan.job if plan else None,
        instance_type=plan.instance_type if plan else None,
        valid=plan.valid is not False if plan else True,
        window_opens=run.start if run else None,
        window_end=run.due if run else None,
        records=run.records if run else None,
        objects=sizing.get("objects"),
        instances=sizing.get("instances"),
        peak_instances=run.target if run else None,
        sized_records_per_second=sizing.get("recordsPerSecond"),
        throughput_source=sizing.get("throughputSource"),
        headroom_percent=sizing.get("headroomPercent"),
        measured_records_per_second=run.measured_records_per_second if run else None,
        shards=len(shards),
        shards_scored=len(ended),
        shards_scoring=sum(1 for s in shards if s.get("job") and not s.get("endedAt") and not s.get("failed")),
        failed_shards=[int(s["index"]) for s in shards if s.get("failed")],
        probing=bool(run.probing) if run else False,
        projected_end=run.projected_end if run else None,
        finished_at=finished,
        window_met=outcome.window_met if outcome and isinstance(outcome.window_met, bool) else None,
        margin_seconds=outcome.margin_seconds if outcome else None,
        at_risk=run.at_risk if run else None,
        warning=sizing.get("warning"),
        output=run.output if run else None,
        report=outcome.report if outcome else None,
        notifications=[as_dict(n) for n in run.notifications] if run else [],
        startups=sizing.get("startupsPerInstance"),
        ready_at=state.get("readyAt"),
        dataset=as_dict(state.get("dataset")).get("name"),
    )


def scoring_headline(night: ScoringNight, status: str, running_state: str | None) -> str | None:
    """The story's first line for a scoring run that did not fail (a failure's is the same as training's)."""
    if status == "SUCCEEDED":
        return f"SUCCEEDED: {night.records or 0:,} records scored; window {night.window_note()}"
    if status == "RUNNING":
        return f"RUNNING, now in {running_state or 'a transition'}: {night.state_in_words()}"
    return None


def scoring_next_step(night: ScoringNight, status: str, failed_state: str | None, error: str | None) -> str | None:
    """What on-call does next; None where the training story's generic advice holds."""
    known = SCORING_NEXT_STEPS.get(failed_state or "") or SCORING_NEXT_STEPS.get(error or "")
    if known:
        return known
    if status == "SUCCEEDED" and night.window_met is False:
        return (
            "The window was missed: raise spec.resources.maxInstances, split the input into more objects, "
            "or move the window; ScoringWindowTrendAlarm watches the nights' margins."
        )
    if status == "SUCCEEDED":
        return "Nothing to do" + (f": the scores are in {night.output}" if night.output else "") + "."
    if status == "RUNNING":
        risk = " On-call was told the window is at risk (WindowAtRisk)." if night.at_risk else ""
        return f"Nothing to do yet: {night.state_in_words()}.{risk}"
    return None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)
