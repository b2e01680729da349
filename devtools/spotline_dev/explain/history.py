"""Reading an execution: its Step Functions history, event by event, and the facts of the run.

The small readers take each state's JSON document apart (input, output, the error a Catch kept);
`read_section` reads a section of it as its record (spotline.core.state), or None for one of another
age; `walk_history` makes one pass over the events and collects the attempts, their status checks,
the switches to on-demand and the caught errors; `links_of` gathers the console links. `fetch`,
`execution_arn_for` and `execution_arn_in_stack` are the thin boto3 part for a deployed stack.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from spotline.core.common import links as console_links
from spotline.core.state import (
    ContinuedAs,
    ContinuedFrom,
    Fallback,
    JobSummary,
    ManifestCheck,
    Problem,
    RunStatus,
    StateError,
    StateRecord,
    Training,
)

HistoryEvent = Mapping[str, Any]
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
        "continuedFrom",
        "continuedAs",
        "wakeUp",
    }
)
LINK_LABELS = {"execution": "Execution", "trainingJob": "SageMaker job", "logs": "Logs", "batchJob": "Batch job"}
LEGACY_SPEC_FIELDS = {
    "team": "team",
    "name": "name",
    "owner": "owner",
    "strategy": "strategy",
    "instance_type": "instance_type",
    "instance_count": "instance_count",
    "deadline": "deadline",
    "output_s3_uri": "output_s3_uri",
}
"""`JobSummary`'s fields and where `$.manifest.spec` had them (executions started before the spec
moved out of the state carried all of it)."""
_ERROR_MESSAGE = re.compile(r'"errorMessage"\s*:\s*("(?:[^"\\]|\\.)*")')


# --- small readers --------------------------------------------------------------------------


def load_document(text: Any) -> dict[str, Any] | None:
    """A state's JSON document, or None when it is missing, truncated or not an object."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def read_section[R: StateRecord](record: type[R], state: Mapping[str, Any]) -> R | None:
    """The section `record` of the state document `state` (`$.training`, `$.status`, ...) as its
    record, or None when the section is absent or not what the record expects.

    A record's `from_state` is strict (`StateKeyMissing`, `StateError`): a handler must fail on a
    key a ResultSelector dropped. `explain` must not: it reads histories of any age (executions
    started before a key existed, a section a later release reshaped, a document cut short), so
    this is its one reader of the state's sections. It catches `StateError` only (a bug elsewhere
    still raises), and each caller says what it shows without the section, as it always did: an
    attempt not listed, "submitted, never checked", a generic timeline line, no mark on the plot.
    """
    try:
        return record.in_state(state)
    except StateError:
        return None


def parse_time(value: Any) -> datetime | None:
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


def as_dict(value: Any) -> dict[str, Any]:
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


def manifest_in(state: Mapping[str, Any]) -> ManifestCheck | None:
    """`$.manifest` as its record, for a history of any age; None before LoadManifest, or for a
    section that is not LoadManifest's verdict at all. An older execution's section (before
    `ManifestCheck`; those started before the spec moved out of the state kept the whole spec
    there, `spec` instead of `job` and `specRef`) is read as explain always showed it: its verdict,
    its errors, its report and its job (`job`, or `_older_job` of the spec)."""
    check = read_section(ManifestCheck, state)
    older = state.get("manifest")
    if check is not None or not isinstance(older, dict) or "valid" not in older:
        return check
    errors = [e for e in older.get("errors") or [] if isinstance(e, dict)]
    job = _read_part(JobSummary, older.get("job"))
    if job is None and isinstance(older.get("spec"), dict):
        job = _older_job(older["spec"])
    return ManifestCheck(
        valid=bool(older["valid"]),
        missing=bool(older.get("missing")),
        errors=tuple(Problem(path=str(e.get("path", "")), message=str(e.get("message", ""))) for e in errors),
        error_count=len(errors),
        summary=str(older.get("summary") or ""),
        report=older.get("report") if isinstance(older.get("report"), str) else None,
        job=job,
        spec_ref=None,
    )


def _read_part[R: StateRecord](record: type[R], data: Any) -> R | None:
    """`data` as `record` (a part of a section), or None when it is absent or of another shape."""
    try:
        return None if data is None else record.from_state(data)
    except StateError:
        return None


def _older_job(spec: Mapping[str, Any]) -> JobSummary:
    """The job in brief from an older execution's inline spec (snake_case), each field as it was
    (None where that spec lacked it): explain shows what it has, it does not validate it."""
    fields: dict[str, Any] = {name: spec.get(old) for name, old in LEGACY_SPEC_FIELDS.items()}
    return JobSummary(
        **{**fields, "instance_count": spec.get("instance_count", 1)},
        depends_on_datasets=bool(spec.get("depends_on")),
        dependency_timeout_seconds=spec.get("dependency_timeout_seconds") or 0,
    )


def job_in(state: Mapping[str, Any]) -> JobSummary | None:
    """The job in brief LoadManifest left in `$.manifest` (`manifest_in`); None before it, or for a
    rejected manifest."""
    check = manifest_in(state)
    return check.job if check is not None else None


def error_text(error: Any, cause: Any) -> str:
    readable = readable_cause(cause)
    return f"{error}: {readable}" if readable else str(error)


def summarize(value: Any, limit: int = 160) -> str:
    """A short text for a value a state stored under a key this module does not know."""
    if isinstance(value, dict):
        if "Error" in value:
            return error_text(value["Error"], value.get("Cause"))
        for name in ("summary", "explanation", "reason", "message"):
            if isinstance(value.get(name), str) and value[name]:
                return str(value[name])
        text = ", ".join(f"{k}={summarize(v, limit)}" for k, v in value.items() if not isinstance(v, dict))
    elif isinstance(value, list):
        text = "[" + ", ".join(summarize(v, limit) for v in value) + "]"
    else:
        text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- the facts of a run: one pass over the history ------------------------------------------


@dataclass
class AttemptRecord:
    """One attempt as the history tells it: SubmitTrainingJob's `$.training`, every check of it
    (`$.status`), and StopSpotJob's `$.fallback` when Spotline stopped it to move the run."""

    training: Training
    statuses: list[RunStatus] = field(default_factory=list)
    stop: Fallback | None = None


@dataclass
class Walk:
    """What one pass over the history collects."""

    input: dict[str, Any] = field(default_factory=dict)
    last: dict[str, Any] = field(default_factory=dict)  # the latest state document seen
    attempts: list[AttemptRecord] = field(default_factory=list)
    switches: list[RunStatus] = field(default_factory=list)  # statuses with action switch-to-on-demand
    caught: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (state, key, {Error, Cause})
    fail_state: str | None = None
    last_state: str | None = None  # the state entered last
    end: dict[str, Any] = field(default_factory=dict)
    end_status: str | None = None  # SUCCEEDED, FAILED, TIMED_OUT, ABORTED from the history's last event
    started_at: datetime | None = None
    stopped_at: datetime | None = None


def walk_history(history: Iterable[HistoryEvent]) -> Walk:
    walk = Walk()
    caught_keys: set[str] = set()
    for event in history:
        kind = str(event.get("type", ""))
        if kind == "ExecutionStarted":
            walk.input = load_document(as_dict(event.get("executionStartedEventDetails")).get("input")) or {}
            walk.last = walk.input
            walk.started_at = parse_time(event.get("timestamp"))
        if kind in END_EVENTS:
            walk.end = as_dict(event.get(f"execution{kind.removeprefix('Execution')}EventDetails"))
            walk.end_status = END_EVENTS[kind]
            walk.stopped_at = parse_time(event.get("timestamp"))
        entered = event.get("stateEnteredEventDetails")
        if entered:
            walk.last_state = entered.get("name")
            if kind == "FailStateEntered":
                walk.fail_state = entered.get("name")
            walk.last = load_document(entered.get("input")) or walk.last
            continue
        exited = event.get("stateExitedEventDetails")
        if not exited:
            continue
        name = str(exited.get("name", "?"))
        state = load_document(exited.get("output"))
        if state is None:
            continue
        walk.last = state
        for key, value in state.items():
            if isinstance(value, dict) and "Error" in value and key not in caught_keys:
                caught_keys.add(key)
                walk.caught.append((name, key, value))
        _read_step(walk, name, state)
    return walk


def _read_step(walk: Walk, name: str, state: dict[str, Any]) -> None:
    """What a training step's result adds to the run's attempts (a section not read: nothing)."""
    if name == "SubmitTrainingJob":
        training = read_section(Training, state)
        if training is not None:
            walk.attempts.append(AttemptRecord(training))
    elif name == "CheckTrainingStatus":
        status = read_section(RunStatus, state)
        if status is None:
            return
        if walk.attempts:
            walk.attempts[-1].statuses.append(status)
        if status.action == "switch-to-on-demand":
            walk.switches.append(status)
    elif name == "StopSpotJob" and walk.attempts:
        walk.attempts[-1].stop = read_section(Fallback, state) or walk.attempts[-1].stop


def _region(arn: str) -> str | None:
    parts = arn.split(":")
    return parts[3] if len(parts) > 3 and parts[3] else None


def links_of(walk: Walk, arn: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for record in walk.attempts:  # the latest attempt's links win
        found.update(as_dict(record.training.links))
        for status in record.statuses:
            found.update(as_dict(status.links))
    region = _region(arn)
    if "execution" not in found and region and arn:
        found["execution"] = console_links.execution(region, arn)
    ordered = {k: str(found[k]) for k in LINK_LABELS if k in found}
    return {**ordered, **{k: str(v) for k, v in found.items() if k not in ordered}}


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


def execution_arn_in_stack(name: str, stack: str, region: str | None) -> str:
    """The ARN of execution `name` of a CloudFormation stack: on its training state machine
    (`TrainingLifecycleArn`), else on its scoring one (`ScoringRunArn`) where it exists there."""
    described = _client("cloudformation", region).describe_stacks(StackName=stack)["Stacks"]
    outputs = {
        o.get("OutputKey"): str(o.get("OutputValue")) for o in (described[0].get("Outputs", []) if described else [])
    }
    if "TrainingLifecycleArn" not in outputs:
        raise ExplainError(f"stack {stack} has no TrainingLifecycleArn output (is it a Spotline stack?)")
    arns = [
        execution_arn_for(name, outputs[key]) for key in ("TrainingLifecycleArn", "ScoringRunArn") if key in outputs
    ]
    sfn = _client("stepfunctions", region_of(arns[0]))
    for arn in arns:
        try:
            sfn.describe_execution(executionArn=arn)
            return arn
        except sfn.exceptions.ExecutionDoesNotExist:
            continue
    return arns[0]  # in neither: reading it says so


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


def fetch_run(execution_arn: str) -> list[dict[str, Any]]:
    """The whole run's history, oldest first: from the run's first execution (`continuedFrom.first`
    of a continuation's input) through every execution it continued in (`$.continuedAs`)."""
    events, described = fetch(execution_arn)
    came_from = read_section(ContinuedFrom, walk_history(events).input)  # None: a run's first execution
    first = came_from.first if came_from is not None else None
    if first:  # arn:aws:states:<region>:<account>:execution:<machine>:<name>
        execution_arn = ":".join([*execution_arn.split(":")[:7], str(first)])
        events, described = fetch(execution_arn)
    run: list[dict[str, Any]] = []
    seen: set[str] = set()
    while True:
        run += events
        seen.add(execution_arn)
        following = read_section(ContinuedAs, load_document(described.get("output")) or {})
        if following is None or following.execution_arn in seen:
            return run
        execution_arn = following.execution_arn
        events, described = fetch(execution_arn)
