"""The timeline: one line per meaningful change, as an on-call engineer reads the console.

`timeline_entries` turns the history into entries; `format_entry` and `timeline` write them as
`T+hh:mm` lines. States this module does not know (the workflow grows) get a line for each key
they added or changed, never a crash.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from spotline.core.capacity.policy import OUT_OF_REACH
from spotline.core.common.durations import format_duration
from spotline.core.state import (
    ContinuedAs,
    ContinuedFrom,
    Fallback,
    JobSummary,
    ManifestCheck,
    Outcome,
    ResourceCheck,
    RunStatus,
    Scoring,
    ScoringOutcome,
    ScoringRunState,
    StateRecord,
    Training,
)
from spotline.core.training.status import is_preemption, waits_for_capacity
from spotline_dev.explain.history import (
    KNOWN_KEYS,
    HistoryEvent,
    as_dict,
    error_text,
    load_document,
    manifest_in,
    parse_time,
    read_section,
    readable_cause,
    summarize,
)

KNOWN_STATES = frozenset(
    {
        "LoadManifest",
        "ValidateResources",
        "SubmitTrainingJob",
        "CheckTrainingStatus",
        "WaitForTrainingEvent",
        "StopSpotJob",
        "ContinueInNewExecution",
        "ResumeWatching",
        "RecordOutcome",
        "PlanScoringRun",
        "AdvanceScoringRun",
        "RecordScoringRun",
    }
)
READ_AS_RECORDS = frozenset(
    {
        "CheckTrainingStatus",
        "SubmitTrainingJob",
        "StopSpotJob",
        "PlanScoringRun",
        "AdvanceScoringRun",
        "RecordScoringRun",
    }
)
"""The states whose line comes from their section's record (`read_section`)."""
CHECKED_AT_STATES = frozenset({"RecordOutcome", "ContinueInNewExecution", "ResumeWatching"})
"""States whose line is dated by the last status check."""
TIME_FIELDS = ("checkedAt", "at", "updatedAt", "submittedAt", "readyAt", "receivedAt")


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime | None  # on the clock the handlers use (virtual in the sandbox)
    state: str
    text: str


def _describe(name: str, state: dict[str, Any]) -> str | None:
    """One line for a known state's exit, or None when it adds nothing new. A section of another
    shape (`read_section`: None) raises `_OtherShape`: the state's lines are then generic."""
    describers: dict[str, Callable[[dict[str, Any]], str | None]] = {
        "LoadManifest": _loaded,
        "ValidateResources": lambda s: _read(ResourceCheck, s).summary,
        "WaitForTrainingEvent": _woken,
        "ContinueInNewExecution": lambda s: f"the watch continues in execution {_read(ContinuedAs, s).execution_name}",
        "ResumeWatching": lambda s: f"continues the run from execution {_read(ContinuedFrom, s).execution}",
        "RecordOutcome": _recorded,
    }
    describer = describers.get(name)
    return describer(state) if describer else None


class _OtherShape(Exception):
    """A known state's section that is not what its record expects (an older or newer history)."""


def _read[R: StateRecord](record: type[R], state: dict[str, Any]) -> R:
    found = read_section(record, state)
    if found is None:
        raise _OtherShape(record.SECTION)
    return found


def _recorded(state: dict[str, Any]) -> str:
    outcome = _read(Outcome, state)
    return f"{outcome.name}: {readable_cause(outcome.cause)}"


def _scored(outcome: ScoringOutcome) -> str:
    window = "window met" if outcome.window_met else "window MISSED"
    measured = outcome.records_per_second
    pace = f", measured {measured:,.0f} records/s per instance" if measured else ""
    return f"{window}: finished {outcome.finished_at} for {outcome.window_end}{pace}"


def scoring_line(run: ScoringRunState) -> str:
    """One look at a scoring run: its shards, its instances, its pace, a WindowAtRisk."""
    shards = run.shards
    scored = sum(1 for s in shards if s.get("endedAt"))
    scoring = sum(1 for s in shards if s.get("job") and not s.get("endedAt") and not s.get("failed"))
    measured = run.measured_records_per_second
    parts = [f"{scored} of {len(shards)} shards scored, {scoring} scoring", f"{run.target} instance(s) wanted"]
    if run.probing:
        parts.append("measuring on the first shard")
    elif measured:
        parts.append(f"pace {measured:,.0f} records/s per instance")
    if run.at_risk:
        parts.append(f"-> WindowAtRisk: {run.at_risk}")
    return ", ".join(parts)


def _submitted(training: Training, state: dict[str, Any]) -> str:
    """`attempt 2 on spot (ml.g6.2xlarge)`: the type when the attempt moved to an alternative; `in
    us-west-2` for a run free to use several regions, with the checkpoint copy a move made."""
    moved = f" ({training.instance_type})" if training.instance_type else ""
    resources = read_section(ResourceCheck, state)
    allowed = resources.regions.allowed if resources is not None else []
    where = f" in {training.region}" if training.region and len(allowed or []) > 1 else ""
    copy = training.checkpoint_copy
    copied = (
        f" (checkpoint copied from {copy.source_region}: {copy.objects} objects, {copy.bytes:,} bytes)" if copy else ""
    )
    attempt = f"attempt {training.attempt} on {training.capacity}"
    return f"{attempt}{moved}{where}{copied}: Batch job {training.job_name}"


def _woken(state: dict[str, Any]) -> str | None:
    """What woke the wait; nothing for a timed check (its CheckTrainingStatus line follows)."""
    woken = as_dict(state.get("wakeUp")).get("wokenBy")
    return f"woken by {as_dict(woken).get('summary')}" if woken else None


def _loaded(state: dict[str, Any]) -> str:
    manifest = manifest_in(state)
    if manifest is None:
        raise _OtherShape(ManifestCheck.SECTION)
    if not manifest.valid:
        return f"manifest rejected: {manifest.summary}"
    job = manifest.job
    if job is None:
        raise _OtherShape(JobSummary.SECTION)
    return f"manifest valid: {job.team}/{job.name}, {job.strategy}, deadline {job.deadline or 'none'}"


def status_line(status: RunStatus) -> str:
    progress = status.progress
    parts = [status.state, f"{progress.fraction:.0%} done"]
    if status.instance_type and _capacity_of(status) == "on-demand " and progress.speeds:
        parts.append(f"on {status.instance_type}")  # the type SageMaker selected from the job's list
    if status.interruptions:
        parts.append(f"{status.interruptions} interruption(s) in this job")
    if status.preemptions:
        parts.append(f"{status.preemptions} preemption(s) by Batch in this job")
    if status.state == "queued" and is_preemption(str(status.reason or "")):
        parts.append(str(status.reason))
    waiting = status.capacity_short or waits_for_capacity(status.state, str(status.reason or ""))
    if waiting and not status.finished:
        parts.append(f"waiting for {_capacity_of(status)}capacity")
    slack = status.decision.slack_seconds
    if slack is not None and not status.finished and _capacity_of(status) != "on-demand ":
        # on spot, the time the job may still wait before it must move (at 0 it moves); an
        # on-demand attempt never moves back, so its slack decides nothing
        parts.append(f"slack {format_duration(slack)}")
    escalation = status.decision.escalation
    if escalation:
        parts.append(f"-> raise-priority: {escalation.reason}")
    if status.deadline_at_risk and status.deadline_at_risk.at == status.checked_at:
        parts.append(f"-> DeadlineAtRisk: {status.deadline_at_risk.cause}")
    if status.action != "keep-waiting":
        parts.append(f"-> {status.action}: {status.explanation}")
    elif out_of_reach(status):
        parts.append(f"-> stays on spot: {status.decision.reason}")
    return ", ".join(p for p in parts if p)


ATTEMPT_CAPACITY = re.compile(r"-a[0-9]+-(spot|od|tp)(?:[0-9a-f]{32})?$")
TIER_WORDS = {"spot": "spot ", "od": "on-demand ", "tp": "training-plan "}
"""Spotline's payload name `<job>-a<n>-<spot|od|tp>`, as Batch names the training job after it
(AWSBatch<payload name><32-hex attempt id>)."""


def _capacity_of(status: RunStatus) -> str:
    """'spot ', 'on-demand ' or 'training-plan ' from the attempt's training job name (-a<n>-spot,
    -a<n>-od, -a<n>-tp), else ''."""
    match = ATTEMPT_CAPACITY.search(str(status.training_job_name or ""))
    return "" if match is None else TIER_WORDS[match.group(1)]


def out_of_reach(status: RunStatus) -> bool:
    """The policy found the deadline out of reach even for on-demand, so the job stays on spot."""
    return str(status.decision.reason or "").startswith(OUT_OF_REACH)


def _time_of(name: str, state: dict[str, Any]) -> datetime | None:
    if name == "WaitForTrainingEvent" and state.get("wakeUp"):
        return datetime.fromisoformat(state["wakeUp"]["wokenAt"])
    status = read_section(RunStatus, state) if name in CHECKED_AT_STATES else None
    if status is not None and status.checked_at:
        return datetime.fromisoformat(status.checked_at)
    scoring = read_section(Scoring, state) if name in ("PlanScoringRun", "RecordScoringRun") else None
    run = scoring.run if scoring is not None else None
    if name == "PlanScoringRun" and run is not None:
        return datetime.fromisoformat(run.start)
    if name == "RecordScoringRun" and run is not None and run.checked_at:
        return datetime.fromisoformat(run.checked_at)
    return datetime.fromisoformat(state["receivedAt"]) if state.get("receivedAt") else None


def _stamp(value: Any) -> datetime | None:
    """When a result says it happened: a known time field, else any `...At` field."""
    fields = as_dict(value)
    names = [*(f for f in TIME_FIELDS if f in fields), *(f for f in fields if f.endswith("At"))]
    return next((t for t in (parse_time(fields[f]) for f in names) if t), None)


def _generic(name: str, before: dict[str, Any] | None, after: dict[str, Any]) -> list[TimelineEntry]:
    """Lines for a state this module does not know: each key it added or changed."""
    entries = []
    for key, value in after.items():
        if before is not None and before.get(key) == value:
            continue
        if before is None and key in KNOWN_KEYS:
            continue  # no input to compare with: only the keys that are not the known steps'
        stamp = _stamp(value)
        if isinstance(value, dict) and "Error" in value:
            text = f"failed with {error_text(value['Error'], value.get('Cause'))} (kept in $.{key})"
        else:
            text = f"{key}: {summarize(value)}"
        entries.append(TimelineEntry(stamp, name, text))
    return entries


def timeline_entries(history: Iterable[HistoryEvent]) -> list[TimelineEntry]:
    """The meaningful changes of an execution, oldest first."""
    entries: list[TimelineEntry] = []
    last_status = ""
    entered: dict[str, Any] = {}  # state name -> its raw input, for states this module does not know
    for event in history:
        if event.get("stateEnteredEventDetails"):
            details = event["stateEnteredEventDetails"]
            entered[str(details.get("name", "?"))] = details.get("input")
            continue
        details = event.get("stateExitedEventDetails")
        if not details:
            continue
        name, raw = str(details.get("name", "?")), details.get("output")
        if name not in KNOWN_STATES and raw == entered.get(name):
            continue  # a Choice, Wait or Pass state that changed nothing
        state = load_document(raw)
        if state is None:
            continue
        try:
            status = read_section(RunStatus, state) if name == "CheckTrainingStatus" else None
            if status is not None:
                key = (
                    status.state,
                    status.interruptions,
                    status.preemptions,
                    status.action,
                    status.training_job_name,
                    bool(status.decision.escalation),
                    out_of_reach(status),
                    status.instance_type,
                    bool(status.deadline_at_risk),
                )
                if str(key) != last_status:
                    at = datetime.fromisoformat(status.checked_at)
                    entries.append(TimelineEntry(at, name, status_line(status)))
                    last_status = str(key)
                continue
            training = read_section(Training, state) if name == "SubmitTrainingJob" else None
            if training is not None:
                at = datetime.fromisoformat(training.submitted_at)
                entries.append(TimelineEntry(at, name, _submitted(training, state)))
                continue
            stop = read_section(Fallback, state) if name == "StopSpotJob" else None
            if stop is not None:
                stopped = read_section(Training, state)  # the attempt it stopped: spot, or on-demand back to spot
                tier = stopped.capacity if stopped is not None else "spot"
                text = f"stopped the {tier} job: {stop.reason.removeprefix('Spotline: ')}"
                entries.append(TimelineEntry(datetime.fromisoformat(stop.at), name, text))
                continue
            scoring = read_section(Scoring, state) if name in READ_AS_RECORDS else None
            run = scoring.run if scoring is not None else None
            if name == "AdvanceScoringRun" and run is not None and run.checked_at:
                scoring_key = (
                    sum(1 for s in run.shards if s.get("job")),
                    sum(1 for s in run.shards if s.get("endedAt")),
                    run.target,
                    bool(run.at_risk),
                )
                if str(scoring_key) != last_status:
                    entries.append(TimelineEntry(datetime.fromisoformat(run.checked_at), name, scoring_line(run)))
                    last_status = str(scoring_key)
                continue
            if name == "PlanScoringRun" and scoring is not None:
                if scoring.plan.summary:
                    entries.append(TimelineEntry(_time_of(name, state), name, scoring.plan.summary))
                continue
            scored = read_section(ScoringOutcome, state) if name == "RecordScoringRun" else None
            if scored is not None:
                entries.append(TimelineEntry(_time_of(name, state), name, _scored(scored)))
                continue
            if name not in READ_AS_RECORDS:  # theirs, when their section was not read: generic lines below
                described = _describe(name, state)
                if described:
                    entries.append(TimelineEntry(_time_of(name, state), name, described))
                if name in KNOWN_STATES:
                    continue
        except (_OtherShape, KeyError, TypeError, ValueError, AttributeError):
            pass  # a known state whose result changed shape: shown generically below
        entries.extend(_generic(name, load_document(entered.get(name)), state))
    return entries


def offset(at: datetime | None, start: datetime) -> str:
    """`T+07:40` from `start`; blank (same width) when the time is unknown."""
    if at is None:
        return " " * 7
    minutes = int((at - start).total_seconds() // 60)
    sign, minutes = ("+", minutes) if minutes >= 0 else ("-", -minutes)
    return f"T{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def format_entry(entry: TimelineEntry, start: datetime) -> str:
    """`T+07:40  StopSpotJob          stopped the spot job: ...` (offset from `start`)."""
    return f"{offset(entry.at, start)}  {entry.state:<20} {entry.text}"


def timeline(history: Iterable[HistoryEvent], start: datetime) -> list[str]:
    """The timeline as text lines, offsets from `start`."""
    return [format_entry(entry, start) for entry in timeline_entries(history)]
