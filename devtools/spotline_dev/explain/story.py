"""The story of one execution: the `Story` data model and `explain`, which builds it from the
facts `history` read (what happened, why, what to do next, the timeline, the attempts, the links).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from spotline.core.capacity.capacity_moves import WHAT, move_of
from spotline.core.common.durations import format_duration
from spotline.core.state import ContinuedAs, ManifestCheck, Outcome, ResourceCheck, RunStatus, Scoring
from spotline_dev.explain.history import (
    KNOWN_KEYS,
    AttemptRecord,
    HistoryEvent,
    Walk,
    as_dict,
    error_text,
    links_of,
    load_document,
    manifest_in,
    parse_time,
    read_section,
    readable_cause,
    rfc3339,
    walk_history,
)
from spotline_dev.explain.scoring import ScoringNight, scoring_headline, scoring_next_step, scoring_night
from spotline_dev.explain.timeline import offset, status_line, timeline_entries

ENDED = ("FAILED", "TIMED_OUT", "ABORTED")
MOVE_ACTIONS = (
    "move-to-another-type",
    "move-to-another-zone",
    "move-to-another-region",
    "switch-to-training-plan",
    "switch-to-on-demand",
    "return-to-spot",
)
"""The checks' actions that move a job (StopSpotJob stops its attempt, the next one runs elsewhere)."""
NEXT_STEPS = {
    "ManifestInvalid": "Fix every error listed (each names its manifest field; `spotline validate` checks locally) "
    "and upload the manifest again.",
    "ManifestNotFound": "The manifest version was deleted before Spotline read it: upload the manifest again if "
    "the run is still wanted; if nobody deleted it, find the lifecycle rule or script that did.",
}


# --- the story ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    number: int
    capacity: str
    training_job_name: str | None
    batch_job_id: str | None
    submitted_at: str | None
    ended_at: str | None
    state: str | None  # the last status seen: queued, starting, training, completed, failed, ...
    ending: str  # how it ended, in words
    interruptions: int
    links: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CapacityMove:
    """One move Spotline made: from attempt `after` to the next, `kind` (spot: another instance
    type; region; training-plan; on-demand), where to in words, when, and the check's reason."""

    after: int
    kind: str
    to: str
    at: str | None
    reason: str | None


@dataclass(frozen=True)
class Problem:
    path: str
    message: str


@dataclass(frozen=True)
class Failure:
    state: str | None  # the Fail state, or the state that was running when the execution ended
    error: str | None
    cause: str | None  # as the execution recorded it
    summary: str  # the cause in one readable line
    failed_step: str | None = None  # the Task whose error a Catch kept (e.g. $.failure for UnexpectedError)
    failed_step_error: str | None = None
    failed_step_cause: str | None = None
    problems: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class Story:
    """Everything `spotline explain` prints; `to_dict()` is the `--json` form."""

    execution_arn: str
    name: str
    status: str
    started_at: str | None
    stopped_at: str | None
    manifest: dict[str, str | None]
    team: str | None
    job: str | None
    owner: str | None
    strategy: str | None
    instance: str | None
    headline: str
    outcome: dict[str, str] | None
    failure: Failure | None
    next_step: str | None
    current_state: str | None
    timeline_start: str | None
    timeline: list[dict[str, str | None]]
    attempts: list[Attempt]
    spot_interruptions: int
    on_demand_fallback: bool
    fallback: str
    fallback_reason: str | None
    fallback_at: str | None
    deadline: str | None
    finished_at: str | None
    deadline_met: bool | None
    deadline_note: str
    figures: dict[str, Any]
    links: dict[str, str]
    reports: dict[str, str]
    other: dict[str, Any]
    kind: str = "TrainingJob"  # or ScoringJob: a scoring run's night is in `scoring`
    scoring: ScoringNight | None = None
    moves: list[CapacityMove] = field(default_factory=list)
    instance_count: int = 1  # the manifest's: "billed" is per instance

    def to_dict(self) -> dict[str, Any]:
        """camelCase keys, times RFC 3339, as the sandbox's `--json`."""
        return {**_camel(asdict(self) | {"other": {}}), "other": self.other}


def _camel(value: Any) -> Any:
    if isinstance(value, dict):
        return {_camel_key(str(k)): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# --- building it from the facts of the run --------------------------------------------------


def _progress(status: RunStatus) -> str:
    fraction = status.progress.fraction
    return f", {fraction:.0%} done" if isinstance(fraction, int | float) else ""


def _move(record: AttemptRecord) -> CapacityMove | None:
    """The move that ended this attempt (StopSpotJob's `$.fallback`), as the check that asked for it
    tells it; None for an attempt Spotline did not move."""
    stop = record.stop
    if stop is None:
        return None
    status = next((s for s in reversed(record.statuses) if s.action in MOVE_ACTIONS), None)
    stated = str(stop.reason or "").removeprefix("Spotline: moving to ")
    if status is not None:
        kind, _, where = move_of(status)
        reason = status.explanation or stated.partition(": ")[2] or None
    else:  # a history without the check: the stop's own words (cut at 256 characters)
        kind = str(stop.capacity or "on-demand")
        kind = kind if kind in WHAT else "on-demand"
        if kind == "spot" and record.training.capacity == "on-demand":
            kind = "back-to-spot"
        where, _, reason_text = stated.partition(": ")
        reason = reason_text or None
    to = where if kind in ("training-plan", "on-demand", "back-to-spot") else f"{WHAT[kind]} ({where})"
    return CapacityMove(
        after=int(record.training.attempt or 0),
        kind=kind,
        to=to,
        at=stop.at or (status.checked_at if status is not None else None),
        reason=reason,
    )


def _attempt(record: AttemptRecord, *, last: bool, running: bool, move: CapacityMove | None = None) -> Attempt:
    status = record.statuses[-1] if record.statuses else None
    if status is None:  # never checked
        return _unchecked(record, last=last, running=running, move=move)
    state = status.state
    reason_class, reason = status.reason_class or "unknown", status.reason or "no reason given"
    ended_at = status.ended_at
    if state == "completed":
        ending = "completed" + (f" at {ended_at}" if ended_at else "")
    elif state == "failed" and status.action == "resubmit-on-spot":
        ending = f"ended by spot ({reason_class}): {reason}; resubmitted on spot from the checkpoint"
    elif state == "failed" and status.action == "switch-to-on-demand":
        ending = f"ended by spot ({reason_class}): {reason}; continued on on-demand from the checkpoint"
    elif state == "failed" and status.finish_reason == "spot-exhausted":
        ending = f"ended by spot ({reason_class}): {reason}; no spot attempts left"
    elif state == "failed":
        ending = f"failed ({reason_class}): {reason}"
    elif move is not None:
        ending = _moved(record, move)
    elif running and last:
        ending = f"still running: {state}{_progress(status)}"
    else:
        ending = f"last seen {state}{_progress(status)} when the execution ended"
    return _told(record, ended_at=ended_at, state=state, ending=ending)


def _moved(record: AttemptRecord, move: CapacityMove) -> str:
    ended = record.stop is not None and record.stop.terminated is False  # nothing left to stop
    return ("had ended; Spotline moved the job" if ended else "stopped by Spotline to move") + (
        f" to {move.to}" + (f" at {move.at}" if move.at else "")
    )


def _unchecked(record: AttemptRecord, *, last: bool, running: bool, move: CapacityMove | None) -> Attempt:
    """An attempt no status check looked at (a check of another shape is not one)."""
    if move is not None:
        ending = _moved(record, move)
    else:
        ending = "submitted, no status check yet" if running and last else "submitted, never checked"
    return _told(record, ended_at=None, state=None, ending=ending)


def _told(record: AttemptRecord, *, ended_at: str | None, state: str | None, ending: str) -> Attempt:
    training = record.training
    latest = record.statuses[-1] if record.statuses else None
    links = {**as_dict(training.links), **(as_dict(latest.links) if latest is not None else {})}
    return Attempt(
        number=int(training.attempt or 0),
        capacity=str(training.capacity or "?"),
        training_job_name=next((s.training_job_name for s in reversed(record.statuses) if s.training_job_name), None),
        batch_job_id=training.job_id,
        submitted_at=training.submitted_at,
        ended_at=ended_at,
        state=state,
        ending=ending,
        interruptions=max((int(s.interruptions or 0) for s in record.statuses), default=0),
        links={k: str(v) for k, v in links.items() if k != "execution"},
    )


def _problems(state: dict[str, Any]) -> list[Problem]:
    """The refusal's problems: the manifest's, the resources', or the scoring plan's (none from a
    section of another shape)."""
    manifest, resources, scoring = manifest_in(state), read_section(ResourceCheck, state), read_section(Scoring, state)
    if manifest is not None and not manifest.valid:
        return [Problem(p.path, p.message) for p in manifest.errors]
    if resources is not None and not resources.valid:
        return [Problem(p.path, p.message) for p in resources.problems]
    if scoring is not None and not scoring.plan.valid:
        found = [p for p in scoring.plan.problems if isinstance(p, dict)]
        return [Problem(str(p.get("path", "")), str(p.get("message", ""))) for p in found]
    return []


def _failure(walk: Walk, status: str, describe: Mapping[str, Any]) -> Failure | None:
    if status not in ENDED:
        return None
    error = walk.end.get("error") or describe.get("error")
    cause = walk.end.get("cause") or describe.get("cause")
    summary = readable_cause(cause) if cause else str(error or "no cause recorded")
    step = step_error = step_cause = None
    if walk.caught:  # the first error a Catch kept is where things went wrong
        step, _key, value = walk.caught[0]
        step_error = str(value.get("Error"))
        step_cause = error_text(step_error, value.get("Cause")).removeprefix(f"{step_error}: ")
        if not cause or str(cause).startswith(step_error):  # the Fail state only echoes the caught error
            summary = f"{step} failed with {step_error}: {step_cause}"
    return Failure(
        state=walk.fail_state or walk.last_state,
        error=error,
        cause=cause,
        summary=summary,
        failed_step=step,
        failed_step_error=step_error,
        failed_step_cause=step_cause,
        problems=_problems(walk.last),
    )


def explain(history: Iterable[HistoryEvent], describe_execution: Mapping[str, Any]) -> Story:
    """The story of one execution from its history (oldest first) and DescribeExecution."""
    events = list(history)
    walk = walk_history(events)
    describe = describe_execution
    arn = str(describe.get("executionArn") or "")
    status = str(describe.get("status") or walk.end_status or "RUNNING")  # DescribeExecution's, not $.status
    state = walk.last
    source = walk.input or load_document(describe.get("input")) or {}
    manifest = manifest_in(state)
    job = manifest.job if manifest is not None else None
    outcome = read_section(Outcome, state)  # None: not recorded yet, a scoring run's, or of another shape
    figures = as_dict(outcome.figures if outcome is not None else None)
    running = status == "RUNNING"
    moved = [_move(record) for record in walk.attempts]
    moves = [m for m in moved if m is not None]
    attempts = [
        _attempt(record, last=i == len(walk.attempts) - 1, running=running, move=moved[i])
        for i, record in enumerate(walk.attempts)
    ]
    failure = _failure(walk, status, describe)

    # on-demand fallback: the switch the deadline policy (or exhausted spot) asked for
    first_capacity = attempts[0].capacity if attempts else None
    fallback_yes = bool(figures.get("on_demand_fallback")) or (
        first_capacity == "spot" and any(a.capacity == "on-demand" for a in attempts)
    )
    # the move to on-demand, not the first move (which may have been to another type, a plan or a region)
    switch = walk.switches[-1] if walk.switches else None
    to_on_demand = next((m for m in moves if m.kind == "on-demand"), None)
    fallback_reason = to_on_demand.reason if to_on_demand else (switch.explanation if switch else None)
    fallback_at = to_on_demand.at if to_on_demand else (switch.checked_at if switch else None)
    strategy = job.strategy if job is not None else None
    if fallback_yes:
        fallback = f"yes, at {fallback_at}: {fallback_reason}" if fallback_at else f"yes: {fallback_reason}"
    elif moves:
        fallback = "no: " + "; ".join(f"moved to {m.to} at {m.at}" for m in moves) + ", never to on-demand"
    elif strategy == "on-demand":
        fallback = "no: on-demand from the start (strategy on-demand)"
    elif not attempts:
        fallback = "no: no training job was submitted"
    elif strategy == "spot-only":
        fallback = "no: strategy spot-only never moves to on-demand"
    else:
        fallback = "no: stayed on spot"

    deadline = figures.get("deadline") or (job.deadline if job is not None else None)
    finished_at = figures.get("finished_at")
    deadline_met = figures.get("deadline_met") if isinstance(figures.get("deadline_met"), bool) else None
    latest = walk.attempts[-1].statuses[-1] if walk.attempts and walk.attempts[-1].statuses else None
    if not deadline:
        deadline_note = "none"
    elif deadline_met is True:
        deadline_note = f"{deadline}: met (training finished {finished_at})"
    elif deadline_met is False:
        deadline_note = f"{deadline}: MISSED (training finished {finished_at})"
    elif running:
        seconds = latest.decision.slack_seconds if latest is not None else None
        deadline_note = f"{deadline}: not reached yet" + (
            f" ({format_duration(seconds)} of slack over finishing on-demand)" if isinstance(seconds, int) else ""
        )
    else:
        deadline_note = f"{deadline}: not reached (" + (
            "the training did not complete)" if attempts else "no training ran)"
        )

    entries = timeline_entries(events)
    origin = parse_time(source.get("receivedAt")) or walk.started_at or parse_time(describe.get("startDate"))
    other = {k: v for k, v in state.items() if k not in KNOWN_KEYS}

    name = str(describe.get("name") or arn.rsplit(":", 1)[-1])
    headline = _headline(status=status, failure=failure, outcome=outcome, running_state=walk.last_state, latest=latest)
    next_step = _next_step(
        status=status,
        failure=failure,
        outcome=outcome,
        output=job.output_s3_uri if job is not None else None,
        manifest=manifest,
        running_state=walk.last_state,
        latest=latest,
    )
    continued = read_section(ContinuedAs, state)
    if status == "SUCCEEDED" and continued is not None:
        name_there = continued.execution_name
        headline = f"SUCCEEDED: the run continues in execution {name_there} (this one made its share of checks)"
        next_step = f"Follow the run there: spotline explain {name_there}"
    night = scoring_night(state)
    reported = outcome.report if outcome is not None else (night.report if night is not None else None)
    reports = {
        k: str(v)
        for k, v in (("outcome", reported), ("rejected", manifest.report if manifest is not None else None))
        if isinstance(v, str) and v
    }
    spot_interruptions = sum(a.interruptions for a in attempts)
    instance = f"{job.instance_type} x{job.instance_count}" if job is not None and job.instance_type else None
    team, job_name, owner = (job.team, job.name, job.owner) if job is not None else (None, None, None)
    instance_count = job.instance_count if job is not None else 1
    if night is not None:  # a scoring run: its night stands where training's attempts would
        headline = scoring_headline(night, status, walk.last_state) or headline
        failed = failure.state if failure else None
        next_step = scoring_next_step(night, status, failed, failure.error if failure else None) or next_step
        team, job_name, owner, instance_count, instance = None, night.job, None, 1, night.instance_type
        deadline, finished_at, deadline_met = night.window_end, night.finished_at, night.window_met
        deadline_note, fallback = night.window_note(), "no: Batch Transform runs on-demand only"
        other = {k: v for k, v in other.items() if k not in ("scoring", "readyAt", "dataset")}  # in the night
        figures = {}
    return Story(
        execution_arn=arn,
        name=name,
        status=status,
        started_at=rfc3339(parse_time(describe.get("startDate")) or walk.started_at),
        stopped_at=rfc3339(parse_time(describe.get("stopDate")) or walk.stopped_at),
        manifest={
            "bucket": source.get("bucket"),
            "key": source.get("key"),
            "versionId": source.get("versionId"),
        },
        team=team or source.get("team"),
        job=job_name,
        owner=owner,
        strategy=strategy,
        instance=instance,
        headline=headline,
        outcome={"name": outcome.name, "cause": outcome.cause} if outcome is not None else None,
        failure=failure,
        next_step=next_step,
        current_state=walk.last_state if running else None,
        timeline_start=rfc3339(origin),
        timeline=[
            {
                "at": rfc3339(e.at),
                "offset": (offset(e.at, origin).strip() or None) if origin else None,
                "state": e.state,
                "text": e.text,
            }
            for e in entries
        ],
        attempts=attempts,
        spot_interruptions=int(figures.get("interruptions", spot_interruptions)),
        on_demand_fallback=fallback_yes,
        fallback=fallback,
        fallback_reason=fallback_reason if fallback_yes else None,
        fallback_at=fallback_at if fallback_yes else None,
        deadline=deadline,
        finished_at=finished_at,
        deadline_met=deadline_met,
        deadline_note=deadline_note,
        figures=figures,
        links=links_of(walk, arn),
        reports=reports,
        other=other,
        kind="ScoringJob" if night is not None else "TrainingJob",
        scoring=night,
        moves=moves,
        instance_count=int(instance_count or 1),
    )


def _headline(
    *,
    status: str,
    failure: Failure | None,
    outcome: Outcome | None,
    running_state: str | None,
    latest: RunStatus | None,
) -> str:
    if failure is not None:
        where = f" in {failure.state}" if failure.state else ""
        error = f" ({failure.error})" if failure.error and failure.error != failure.state else ""
        return f"{status}{where}{error}"
    if status == "SUCCEEDED":
        return f"SUCCEEDED: {(outcome.cause if outcome is not None else None) or 'the execution succeeded'}"
    if status == "RUNNING":
        now = f"; latest status: {status_line(latest)}" if latest is not None and latest.state and latest.action else ""
        return f"RUNNING, now in {running_state or 'a transition'}{now}"
    return status


def _next_step(
    *,
    status: str,
    failure: Failure | None,
    outcome: Outcome | None,
    output: str | None,
    manifest: ManifestCheck | None,
    running_state: str | None,
    latest: RunStatus | None,
) -> str | None:
    if outcome is not None and outcome.next_step:
        return str(outcome.next_step)
    if failure is not None:
        known = NEXT_STEPS.get(failure.state or "") or NEXT_STEPS.get(failure.error or "")
        if known:
            report = manifest.report if manifest is not None else None
            return known + (f" The rejection report is at {report}." if report else "")
        if status == "TIMED_OUT":
            return (
                "The execution ran out of time in the state above; check that state in the console, "
                "then upload the manifest again."
            )
        if status == "ABORTED":
            return "Someone stopped the execution (see the cause); upload the manifest again to run it anew."
        return (
            "Read the cause above and the failing state's Comment in the state machine; "
            "open the execution in the console (link below)."
        )
    if status == "SUCCEEDED":
        return "Nothing to do" + (f": the model is in {output}." if output else ".")
    if status == "RUNNING":
        poll = latest.next_poll_seconds if latest is not None else None
        when = f"; the next status check is in {format_duration(poll)}" if isinstance(poll, int | float) else ""
        return f"Nothing to do yet: it is in {running_state or 'a transition'}{when}."
    return None
