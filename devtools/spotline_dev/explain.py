"""`spotline explain`: the story of one execution, told from its Step Functions history.

`explain(history, describe_execution)` is pure: it reads what each state stored under its own
key ($.manifest, $.resources, $.training, $.status, $.fallback, $.outcome, $.failure, ...) and
the execution's end, and returns a `Story` (what happened, why, what to do next, the timeline,
the attempts, the console links). `fetch`, `execution_arn_for` and `state_machine_of_stack` are
the thin boto3 part for a deployed stack; the sandbox passes the histories of its local executions.

States and keys this module does not know (the workflow grows) are shown generically: a line
with the key the state added or changed, never a crash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from spotline.core import links as console_links
from spotline.core.durations import format_duration

HistoryEvent = Mapping[str, Any]
ENDED = ("FAILED", "TIMED_OUT", "ABORTED")
END_EVENTS = {
    "ExecutionSucceeded": "SUCCEEDED",
    "ExecutionFailed": "FAILED",
    "ExecutionTimedOut": "TIMED_OUT",
    "ExecutionAborted": "ABORTED",
}
KNOWN_KEYS = frozenset(
    {
        "bucket",
        "key",
        "versionId",
        "etag",
        "team",
        "receivedAt",
        "executionArn",
        "manifest",
        "resources",
        "training",
        "status",
        "fallback",
        "outcome",
        "failure",
    }
)
LINK_LABELS = {"execution": "Execution", "trainingJob": "SageMaker job", "logs": "Logs", "batchJob": "Batch job"}
NEXT_STEPS = {
    "ManifestInvalid": "Fix every error listed (each names its manifest field; `spotline validate` checks locally) "
    "and upload the manifest again.",
}
KNOWN_STATES = frozenset(
    {"LoadManifest", "ValidateResources", "SubmitTrainingJob", "CheckTrainingStatus", "StopSpotJob", "RecordOutcome"}
)
_ERROR_MESSAGE = re.compile(r'"errorMessage"\s*:\s*("(?:[^"\\]|\\.)*")')
TIME_FIELDS = ("checkedAt", "at", "updatedAt", "submittedAt", "readyAt", "receivedAt")


# --- small readers --------------------------------------------------------------------------


def _load(text: Any) -> dict[str, Any] | None:
    """A state's JSON document, or None when it is missing, truncated or not an object."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else None


def rfc3339(moment: datetime | None) -> str | None:
    """`2026-12-01T07:40:42Z` (UTC, whole seconds); None stays None."""
    if moment is None:
        return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def readable_cause(cause: Any) -> str:
    """A cause in one line: a Lambda error's JSON (even cut short) becomes its errorMessage."""
    text = str(cause or "")
    match = _ERROR_MESSAGE.search(text) if "errorMessage" in text else None
    if match is None:
        return text
    try:
        message = str(json.loads(match.group(1)))
    except ValueError:
        return text
    brace = text.find("{")
    return (text[:brace] if brace > 0 else "") + message  # keeps a prefix such as "Runtime.ExitError: "


def _error_text(error: Any, cause: Any) -> str:
    readable = readable_cause(cause)
    return f"{error}: {readable}" if readable else str(error)


def _summarize(value: Any, limit: int = 160) -> str:
    """A short text for a value a state stored under a key this module does not know."""
    if isinstance(value, dict):
        if "Error" in value:
            return _error_text(value["Error"], value.get("Cause"))
        for name in ("summary", "explanation", "reason", "message"):
            if isinstance(value.get(name), str) and value[name]:
                return str(value[name])
        text = ", ".join(f"{k}={_summarize(v, limit)}" for k, v in value.items() if not isinstance(v, dict))
    elif isinstance(value, list):
        text = "[" + ", ".join(_summarize(v, limit) for v in value) + "]"
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the timeline: one line per meaningful change, as an on-call engineer reads the console ------


@dataclass(frozen=True)
class TimelineEntry:
    at: datetime | None  # on the clock the handlers use (virtual in the sandbox)
    state: str
    text: str


def _describe(name: str, state: dict[str, Any]) -> str | None:
    """One line for a known state's exit, or None when it adds nothing new."""
    describers: dict[str, Callable[[dict[str, Any]], str | None]] = {
        "LoadManifest": lambda s: (
            (
                f"manifest valid: {s['manifest']['spec']['team']}/{s['manifest']['spec']['name']}, "
                f"{s['manifest']['spec']['strategy']}, deadline {s['manifest']['spec']['deadline'] or 'none'}"
            )
            if s["manifest"]["valid"]
            else f"manifest rejected: {s['manifest']['summary']}"
        ),
        "ValidateResources": lambda s: s["resources"]["summary"],
        "SubmitTrainingJob": lambda s: (
            f"attempt {s['training']['attempt']} on {s['training']['capacity']}: {s['training']['trainingJobName']}"
        ),
        "StopSpotJob": lambda s: f"stopped the spot job: {s['fallback']['reason'].removeprefix('Spotline: ')}",
        "RecordOutcome": lambda s: f"{s['outcome']['name']}: {readable_cause(s['outcome']['cause'])}",
    }
    describer = describers.get(name)
    return describer(state) if describer else None


def _status_line(status: dict[str, Any]) -> str:
    progress = status.get("progress") or {}
    done = f"{progress.get('fraction', 0):.0%} done" if progress else ""
    parts = [status["state"], done]
    if status.get("interruptions"):
        parts.append(f"{status['interruptions']} interruption(s) in this job")
    if status["action"] != "keep-waiting":
        parts.append(f"-> {status['action']}: {status['explanation']}")
    return ", ".join(p for p in parts if p)


def _time_of(name: str, state: dict[str, Any]) -> datetime | None:
    stamp = {"SubmitTrainingJob": ("training", "submittedAt"), "StopSpotJob": ("fallback", "at")}.get(name)
    if stamp and state.get(stamp[0]):
        return datetime.fromisoformat(state[stamp[0]][stamp[1]])
    if name == "RecordOutcome" and (state.get("status") or {}).get("checkedAt"):
        return datetime.fromisoformat(state["status"]["checkedAt"])
    return datetime.fromisoformat(state["receivedAt"]) if state.get("receivedAt") else None


def _stamp(value: Any) -> datetime | None:
    """When a result says it happened: a known time field, else any `...At` field."""
    fields = _dict(value)
    names = [*(f for f in TIME_FIELDS if f in fields), *(f for f in fields if f.endswith("At"))]
    return next((t for t in (_time(fields[f]) for f in names) if t), None)


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
            text = f"failed with {_error_text(value['Error'], value.get('Cause'))} (kept in $.{key})"
        else:
            text = f"{key}: {_summarize(value)}"
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
        state = _load(raw)
        if state is None:
            continue
        try:
            if name == "CheckTrainingStatus":
                status = state["status"]
                key = (status["state"], status.get("interruptions"), status["action"], status.get("trainingJobName"))
                if str(key) != last_status:
                    at = datetime.fromisoformat(status["checkedAt"])
                    entries.append(TimelineEntry(at, name, _status_line(status)))
                    last_status = str(key)
                continue
            described = _describe(name, state)
            if described:
                entries.append(TimelineEntry(_time_of(name, state), name, described))
            if name in KNOWN_STATES:
                continue
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # a known state whose result changed shape: shown generically below
        entries.extend(_generic(name, _load(entered.get(name)), state))
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


@dataclass
class _AttemptRecord:
    training: dict[str, Any]
    statuses: list[dict[str, Any]] = field(default_factory=list)
    stop: dict[str, Any] | None = None


@dataclass
class _Walk:
    """What one pass over the history collects."""

    input: dict[str, Any] = field(default_factory=dict)
    last: dict[str, Any] = field(default_factory=dict)  # the latest state document seen
    attempts: list[_AttemptRecord] = field(default_factory=list)
    switches: list[dict[str, Any]] = field(default_factory=list)  # statuses with action switch-to-on-demand
    caught: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (state, key, {Error, Cause})
    fail_state: str | None = None
    last_state: str | None = None  # the state entered last
    end: dict[str, Any] = field(default_factory=dict)
    end_status: str | None = None  # SUCCEEDED, FAILED, TIMED_OUT, ABORTED from the history's last event
    started_at: datetime | None = None
    stopped_at: datetime | None = None


def _walk(history: Iterable[HistoryEvent]) -> _Walk:
    walk = _Walk()
    caught_keys: set[str] = set()
    for event in history:
        kind = str(event.get("type", ""))
        if kind == "ExecutionStarted":
            walk.input = _load(_dict(event.get("executionStartedEventDetails")).get("input")) or {}
            walk.last = walk.input
            walk.started_at = _time(event.get("timestamp"))
        if kind in END_EVENTS:
            walk.end = _dict(event.get(f"execution{kind.removeprefix('Execution')}EventDetails"))
            walk.end_status = END_EVENTS[kind]
            walk.stopped_at = _time(event.get("timestamp"))
        entered = event.get("stateEnteredEventDetails")
        if entered:
            walk.last_state = entered.get("name")
            if kind == "FailStateEntered":
                walk.fail_state = entered.get("name")
            walk.last = _load(entered.get("input")) or walk.last
            continue
        exited = event.get("stateExitedEventDetails")
        if not exited:
            continue
        name = str(exited.get("name", "?"))
        state = _load(exited.get("output"))
        if state is None:
            continue
        walk.last = state
        for key, value in state.items():
            if isinstance(value, dict) and "Error" in value and key not in caught_keys:
                caught_keys.add(key)
                walk.caught.append((name, key, value))
        if name == "SubmitTrainingJob" and isinstance(state.get("training"), dict):
            walk.attempts.append(_AttemptRecord(state["training"]))
        elif name == "CheckTrainingStatus" and isinstance(state.get("status"), dict):
            status = state["status"]
            if walk.attempts:
                walk.attempts[-1].statuses.append(status)
            if status.get("action") == "switch-to-on-demand":
                walk.switches.append(status)
        elif name == "StopSpotJob" and isinstance(state.get("fallback"), dict) and walk.attempts:
            walk.attempts[-1].stop = state["fallback"]
    return walk


def _progress(status: dict[str, Any]) -> str:
    fraction = _dict(status.get("progress")).get("fraction")
    return f", {fraction:.0%} done" if isinstance(fraction, int | float) else ""


def _attempt(record: _AttemptRecord, *, last: bool, running: bool) -> Attempt:
    training = record.training
    status = record.statuses[-1] if record.statuses else {}
    state = status.get("state")
    reason_class, reason = status.get("reasonClass") or "unknown", status.get("reason") or "no reason given"
    ended_at = status.get("endedAt")
    if state == "completed":
        ending = "completed" + (f" at {ended_at}" if ended_at else "")
    elif state == "failed" and status.get("action") == "resubmit-on-spot":
        ending = f"ended by spot ({reason_class}): {reason}; resubmitted on spot from the checkpoint"
    elif state == "failed" and status.get("action") == "switch-to-on-demand":
        ending = f"ended by spot ({reason_class}): {reason}; continued on on-demand from the checkpoint"
    elif state == "failed" and status.get("finishReason") == "spot-exhausted":
        ending = f"ended by spot ({reason_class}): {reason}; no spot attempts left"
    elif state == "failed":
        ending = f"failed ({reason_class}): {reason}"
    elif record.stop is not None:
        ending = "stopped by Spotline to move to on-demand" + (
            f" at {record.stop['at']}" if record.stop.get("at") else ""
        )
    elif not status:
        ending = "submitted, no status check yet" if running and last else "submitted, never checked"
    elif running and last:
        ending = f"still running: {state}{_progress(status)}"
    else:
        ending = f"last seen {state}{_progress(status)} when the execution ended"
    links = {**_dict(training.get("links")), **_dict(status.get("links"))}
    return Attempt(
        number=int(training.get("attempt") or 0),
        capacity=str(training.get("capacity") or "?"),
        training_job_name=training.get("trainingJobName"),
        batch_job_id=training.get("jobId"),
        submitted_at=training.get("submittedAt"),
        ended_at=ended_at,
        state=state,
        ending=ending,
        interruptions=max((int(s.get("interruptions") or 0) for s in record.statuses), default=0),
        links={k: str(v) for k, v in links.items() if k != "execution"},
    )


def _problems(state: dict[str, Any]) -> list[Problem]:
    manifest, resources = _dict(state.get("manifest")), _dict(state.get("resources"))
    found: list[Any] = []
    if manifest and manifest.get("valid") is False:
        found = manifest.get("errors") or []
    elif resources and resources.get("valid") is False:
        found = resources.get("problems") or []
    return [Problem(str(p.get("path", "")), str(p.get("message", ""))) for p in found if isinstance(p, dict)]


def _failure(walk: _Walk, status: str, describe: Mapping[str, Any]) -> Failure | None:
    if status not in ENDED:
        return None
    error = walk.end.get("error") or describe.get("error")
    cause = walk.end.get("cause") or describe.get("cause")
    summary = readable_cause(cause) if cause else str(error or "no cause recorded")
    step = step_error = step_cause = None
    if walk.caught:  # the first error a Catch kept is where things went wrong
        step, _key, value = walk.caught[0]
        step_error = str(value.get("Error"))
        step_cause = _error_text(step_error, value.get("Cause")).removeprefix(f"{step_error}: ")
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


def _region(arn: str) -> str | None:
    parts = arn.split(":")
    return parts[3] if len(parts) > 3 and parts[3] else None


def _links(walk: _Walk, arn: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for record in walk.attempts:  # the latest attempt's links win
        found.update(_dict(record.training.get("links")))
        for status in record.statuses:
            found.update(_dict(status.get("links")))
    found.update(_dict(_dict(walk.last.get("outcome")).get("links")))
    region = _region(arn)
    if "execution" not in found and region and arn:
        found["execution"] = console_links.execution(region, arn)
    ordered = {k: str(found[k]) for k in LINK_LABELS if k in found}
    return {**ordered, **{k: str(v) for k, v in found.items() if k not in ordered}}


def explain(history: Iterable[HistoryEvent], describe_execution: Mapping[str, Any]) -> Story:
    """The story of one execution from its history (oldest first) and DescribeExecution."""
    events = list(history)
    walk = _walk(events)
    describe = describe_execution
    arn = str(describe.get("executionArn") or "")
    status = str(describe.get("status") or walk.end_status or "RUNNING")
    state = walk.last
    source = walk.input or _load(describe.get("input")) or {}
    manifest = _dict(state.get("manifest"))
    spec = _dict(manifest.get("spec"))
    outcome = _dict(state.get("outcome"))
    figures = _dict(outcome.get("figures"))
    running = status == "RUNNING"
    attempts = [
        _attempt(record, last=i == len(walk.attempts) - 1, running=running) for i, record in enumerate(walk.attempts)
    ]
    failure = _failure(walk, status, describe)

    # on-demand fallback: the switch the deadline policy (or exhausted spot) asked for
    first_capacity = attempts[0].capacity if attempts else None
    fallback_yes = bool(figures.get("on_demand_fallback")) or (
        first_capacity == "spot" and any(a.capacity == "on-demand" for a in attempts)
    )
    switch = walk.switches[-1] if walk.switches else {}
    stop = next((r.stop for r in walk.attempts if r.stop), None) or {}
    fallback_reason = switch.get("explanation") or (
        str(stop["reason"]).removeprefix("Spotline: ").removeprefix("moving to on-demand: ")
        if stop.get("reason")
        else None
    )
    fallback_at = stop.get("at") or switch.get("checkedAt")
    strategy = spec.get("strategy")
    if fallback_yes:
        fallback = f"yes, at {fallback_at}: {fallback_reason}" if fallback_at else f"yes: {fallback_reason}"
    elif strategy == "on-demand":
        fallback = "no: on-demand from the start (strategy on-demand)"
    elif not attempts:
        fallback = "no: no training job was submitted"
    elif strategy == "spot-only":
        fallback = "no: strategy spot-only never moves to on-demand"
    else:
        fallback = "no: stayed on spot"

    deadline = figures.get("deadline") or spec.get("deadline")
    finished_at = figures.get("finished_at")
    deadline_met = figures.get("deadline_met") if isinstance(figures.get("deadline_met"), bool) else None
    if not deadline:
        deadline_note = "none"
    elif deadline_met is True:
        deadline_note = f"{deadline}: met (training finished {finished_at})"
    elif deadline_met is False:
        deadline_note = f"{deadline}: MISSED (training finished {finished_at})"
    elif running:
        slack = _dict(_dict((walk.attempts[-1].statuses or [{}])[-1] if walk.attempts else {}).get("decision"))
        seconds = slack.get("slackSeconds")
        deadline_note = f"{deadline}: not reached yet" + (
            f" ({format_duration(seconds)} of slack over finishing on-demand)" if isinstance(seconds, int) else ""
        )
    else:
        deadline_note = f"{deadline}: not reached (" + (
            "the training did not complete)" if attempts else "no training ran)"
        )

    latest = walk.attempts[-1].statuses[-1] if walk.attempts and walk.attempts[-1].statuses else {}
    entries = timeline_entries(events)
    origin = _time(source.get("receivedAt")) or walk.started_at or _time(describe.get("startDate"))
    other = {k: v for k, v in state.items() if k not in KNOWN_KEYS}

    name = str(describe.get("name") or arn.rsplit(":", 1)[-1])
    headline = _headline(status=status, failure=failure, outcome=outcome, running_state=walk.last_state, latest=latest)
    next_step = _next_step(
        status=status,
        failure=failure,
        outcome=outcome,
        spec=spec,
        manifest=manifest,
        running_state=walk.last_state,
        latest=latest,
    )
    reports = {
        k: str(v)
        for k, v in (("outcome", outcome.get("report")), ("rejected", manifest.get("report")))
        if isinstance(v, str) and v
    }
    spot_interruptions = sum(a.interruptions for a in attempts)
    return Story(
        execution_arn=arn,
        name=name,
        status=status,
        started_at=rfc3339(_time(describe.get("startDate")) or walk.started_at),
        stopped_at=rfc3339(_time(describe.get("stopDate")) or walk.stopped_at),
        manifest={
            "bucket": source.get("bucket"),
            "key": source.get("key"),
            "versionId": source.get("versionId"),
        },
        team=spec.get("team") or source.get("team"),
        job=spec.get("name"),
        owner=spec.get("owner"),
        strategy=strategy,
        instance=(f"{spec['instance_type']} x{spec.get('instance_count', 1)}" if spec.get("instance_type") else None),
        headline=headline,
        outcome={"name": str(outcome.get("name")), "cause": str(outcome.get("cause"))} if outcome else None,
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
        links=_links(walk, arn),
        reports=reports,
        other=other,
    )


def _headline(
    *,
    status: str,
    failure: Failure | None,
    outcome: dict[str, Any],
    running_state: str | None,
    latest: dict[str, Any],
) -> str:
    if failure is not None:
        where = f" in {failure.state}" if failure.state else ""
        error = f" ({failure.error})" if failure.error and failure.error != failure.state else ""
        return f"{status}{where}{error}"
    if status == "SUCCEEDED":
        return f"SUCCEEDED: {outcome.get('cause') or 'the execution succeeded'}"
    if status == "RUNNING":
        now = f"; latest status: {_status_line(latest)}" if latest.get("state") and latest.get("action") else ""
        return f"RUNNING, now in {running_state or 'a transition'}{now}"
    return status


def _next_step(
    *,
    status: str,
    failure: Failure | None,
    outcome: dict[str, Any],
    spec: dict[str, Any],
    manifest: dict[str, Any],
    running_state: str | None,
    latest: dict[str, Any],
) -> str | None:
    if outcome.get("next_step"):
        return str(outcome["next_step"])
    if failure is not None:
        known = NEXT_STEPS.get(failure.state or "") or NEXT_STEPS.get(failure.error or "")
        if known:
            report = manifest.get("report")
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
        output = spec.get("output_s3_uri")
        return "Nothing to do" + (f": the model is in {output}." if output else ".")
    if status == "RUNNING":
        poll = latest.get("nextPollSeconds")
        when = f"; the next status check is in {format_duration(poll)}" if isinstance(poll, int | float) else ""
        return f"Nothing to do yet: it is in {running_state or 'a transition'}{when}."
    return None


# --- text -----------------------------------------------------------------------------------


def render_text(story: Story) -> str:
    """The story as on-call reads it: what happened and what to do first, the details after."""
    out = [f"== {story.name}: {story.headline}"]
    took = ""
    started, stopped = _time(story.started_at), _time(story.stopped_at)
    if started and stopped:
        took = f" ({format_duration((stopped - started).total_seconds())})"
    manifest = story.manifest
    where = f"s3://{manifest['bucket']}/{manifest['key']}" if manifest.get("key") else "unknown"
    version = f" (version {manifest['versionId']})" if manifest.get("versionId") else ""
    job = "/".join(p for p in (story.team, story.job) if p) or "unknown"
    owner = f"owner {story.owner}" if story.owner else None
    details = ", ".join(p for p in (story.strategy, story.instance, owner) if p)
    ran = f"started {story.started_at or '?'}" + (f", stopped {story.stopped_at}{took}" if story.stopped_at else "")
    out += [
        f"  Execution  {story.execution_arn}",
        f"  Status     {story.status}, {ran}",
        f"  Manifest   {where}{version}",
        f"  Job        {job}" + (f" ({details})" if details else ""),
        "",
    ]
    failure = story.failure
    if failure is not None:
        out += [
            "What failed",
            f"  State      {failure.state or 'unknown'}",
            f"  Error      {failure.error or 'none'}",
            f"  Cause      {failure.summary}",
        ]
        if failure.failed_step and not failure.summary.startswith(failure.failed_step):
            out.append(f"  Step       {failure.failed_step} failed with {failure.failed_step_error}")
        if len(failure.problems) > 1:
            out += [f"    - {p.path}: {p.message}" for p in failure.problems]
        out.append("")
    if story.next_step:
        out += ["Next step", f"  {story.next_step}"]

    start = _time(story.timeline_start)
    if story.timeline and start:
        out += ["", f"Timeline (T+hh:mm from {story.timeline_start}, when the manifest arrived)"]
        for item in story.timeline:
            entry = TimelineEntry(_time(item["at"]), str(item["state"]), str(item["text"]))
            out.append(f"  {format_entry(entry, start)}")

    out += ["", "Training"]
    if story.attempts:
        width = max(len(a.training_job_name or "-") for a in story.attempts)
        for a in story.attempts:
            out.append(f"  Attempt {a.number}  {a.capacity:<9} {(a.training_job_name or '-'):<{width}}  {a.ending}")
        out.append(f"  Spot interruptions  {story.spot_interruptions}")
        out.append(f"  On-demand fallback  {story.fallback}")
    else:
        out.append("  No training job recorded in the execution.")
    out.append(f"  Deadline            {story.deadline_note}")
    figures = story.figures
    if figures.get("training_seconds"):
        out.append(
            f"  Cost                ${figures.get('cost_usd', 0):.2f}: "
            f"{format_duration(figures['training_seconds'])} of training billed as "
            f"{format_duration(figures.get('billable_seconds', 0))} "
            f"({figures.get('spot_savings_percent', 0):.0f}% saved by spot)"
        )
    if story.other:
        out += ["", "Other results"]
        out += [f"  {key}: {_summarize(value)}" for key, value in story.other.items()]
    out += ["", "Links"]
    out += [f"  {LINK_LABELS.get(k, k):<14} {url}" for k, url in story.links.items()]
    out += [f"  {k.capitalize() + ' report':<14} {url}" for k, url in story.reports.items()]
    return "\n".join(out)


# --- fetching from a deployed stack (boto3) ---------------------------------------------------


class ExplainError(Exception):
    """The execution cannot be found or read; the message says why."""


def _client(service: str, region: str | None) -> Any:
    import boto3  # noqa: PLC0415 (only for the deployed-stack path)

    return boto3.client(service, region_name=region)  # type: ignore[call-overload]


def region_of(arn: str) -> str:
    """The region of a Step Functions ARN (`arn:aws:states:<region>:...`)."""
    parts = arn.split(":")
    if len(parts) < 7 or parts[0] != "arn" or parts[2] != "states" or not parts[3]:
        raise ValueError(f"{arn!r} is not a Step Functions ARN")
    return parts[3]


def execution_arn_for(name: str, state_machine_arn: str) -> str:
    """`arn:...:stateMachine:M` + name -> `arn:...:execution:M:name`."""
    parts = state_machine_arn.split(":")
    if len(parts) != 7 or parts[5] != "stateMachine":
        raise ValueError(
            f"{state_machine_arn!r} is not a state machine ARN (arn:aws:states:REGION:ACCOUNT:stateMachine:NAME)"
        )
    region_of(state_machine_arn)
    return ":".join([*parts[:5], "execution", parts[6], name])


def state_machine_of_stack(stack: str, region: str | None) -> str:
    """The `TrainingLifecycleArn` output of a CloudFormation stack."""
    described = _client("cloudformation", region).describe_stacks(StackName=stack)["Stacks"]
    for output in described[0].get("Outputs", []) if described else []:
        if output.get("OutputKey") == "TrainingLifecycleArn":
            return str(output["OutputValue"])
    raise ExplainError(f"stack {stack} has no TrainingLifecycleArn output (is it a Spotline stack?)")


def fetch(execution_arn: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """GetExecutionHistory (every page, oldest first) and DescribeExecution, region from the ARN."""
    sfn = _client("stepfunctions", region_of(execution_arn))
    described = sfn.describe_execution(executionArn=execution_arn)
    events: list[dict[str, Any]] = []
    for page in sfn.get_paginator("get_execution_history").paginate(
        executionArn=execution_arn, includeExecutionData=True, PaginationConfig={"PageSize": 1000}
    ):
        events.extend(page["events"])
    return events, dict(described)
