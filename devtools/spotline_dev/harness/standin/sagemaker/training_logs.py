"""The CloudWatch Logs the stand-in's SageMaker training jobs write, so that reading a job's log
(`spotline logs NAME`) can be tested against the local stack.

SageMaker sends each instance's container output to the log group `/aws/sagemaker/TrainingJobs`,
one stream per instance, named `<TrainingJobName>/algo-<n>-<epoch seconds of the instance start>`
(SageMaker Developer Guide, "Log Amazon SageMaker AI events with Amazon CloudWatch": log group
`/aws/sagemaker/TrainingJobs`, stream `[training-job-name]/algo-[instance-number-in-cluster]-[epoch_timestamp]`).
A managed spot restart continues the same training job on new instances, so each restart opens
new streams (the same `algo-<n>`, a later epoch suffix); the stand-in does the same. A stream
appears when its instances start (the Downloading segment of the job's plan: no stream for a job
that never got capacity or failed before that). Every host logs its start, the step it resumes
from, spot interruptions, cluster repairs and the end; only algo-1 (rank 0, which saves them) logs checkpoints.

Lines are generated from the job's plan (training_timeline.Plan) and shown up to the clock: a job
in progress shows its log so far. Tokens are opaque to callers but simple here: a position (or
the last event returned) that stays valid as new lines are appended.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spotline_dev.harness.standin.base.clock import EPS, ObservedTime, ms
from spotline_dev.harness.standin.base.http_answers import ApiError
from spotline_dev.harness.standin.base.records import TrainingJob
from spotline_dev.harness.standin.base.timeline import REPAIR_SECONDS
from spotline_dev.harness.standin.sagemaker.training_jobs import SageMakerTrainingJobs

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
OPERATIONS = frozenset({"FilterLogEvents", "DescribeLogStreams", "GetLogEvents"})

_INVALID = "InvalidParameterException"
_START_FROM_TAIL_SINCE_MS = 1_704_067_200_000  # 2024-01-01: FilterLogEvents' startFromHead=false needs it
_GET_TOKEN = re.compile(r"^([fb])/(\d+)$")
_TERM = re.compile(r'"([^"]*)"|(\S+)')

EventKey = tuple[int, str, int]  # (timestamp ms, stream, line number): the order events are returned in


@dataclass(frozen=True)
class LogEvent:
    stream: str
    t: float
    line: int  # position in its stream
    message: str

    @property
    def key(self) -> EventKey:
        return ms(self.t), self.stream, self.line


@dataclass(frozen=True)
class LogStream:
    name: str
    created: float
    events: tuple[LogEvent, ...]


def planned_streams(job: TrainingJob) -> list[LogStream]:
    """Every stream the job's plan writes, with all its lines (including those still to come)."""
    plan = job.plan
    hosts = max(1, job.selected[1])
    instance = job.selected[0] or "ML instance"
    capacity = "spot" if job.spot else "on-demand"
    total = job.behaviour.total_steps
    streams: list[LogStream] = []
    for start, end, lost in _runs(job):
        resumed = _saved_step(job, start)
        training = next((s.start for s in plan.segments if s.status == "Training" and start <= s.start <= end), None)
        for host in range(1, hosts + 1):
            lines = [(start, f"Container started on {capacity} instance {instance} (host algo-{host} of {hosts})")]
            if training is not None and resumed is None:
                lines.append((training, "No checkpoint found: starting from step 0"))
            elif training is not None:
                lines.append((training, f"Resuming from checkpoint step {resumed}"))
            if host == 1:
                lines += [
                    (t, f"step {step}/{total}: checkpoint saved to {job.key}")
                    for t, step in plan.checkpoints
                    if start < t <= end + EPS
                ]
            for at, repaired in plan.repairs:
                if start < at <= end + EPS:
                    step = _saved_step(job, at)
                    lines.append((at, _repair(host, repaired, step)))
                    resume = "starting from step 0" if step is None else f"resuming from checkpoint step {step}"
                    if at + REPAIR_SECONDS <= end + EPS:
                        lines.append((at + REPAIR_SECONDS, f"Cluster repaired: {resume}"))
            if lost is not None:
                lines.append((end, _interruption(lost, _saved_step(job, end))))
            else:
                lines.append(_outcome(job))
            lines.sort(key=lambda line: line[0])  # stable: same-time lines keep their order
            name = f"{job.name}/algo-{host}-{int(start)}"
            events = tuple(LogEvent(name, t, i, message) for i, (t, message) in enumerate(lines))
            streams.append(LogStream(name, start, events))
    return streams


def _runs(job: TrainingJob) -> list[tuple[float, float, float | None]]:
    """(instances start, end, work lost if a spot interruption ended it) for each time instances ran."""
    plan = job.plan
    runs: list[tuple[float, float, float | None]] = []
    for i, segment in enumerate(plan.segments):
        if segment.status != "Downloading":
            continue
        stop = next((s for s in plan.segments[i + 1 :] if s.status == "Interrupted"), None)
        if stop is None:
            runs.append((segment.start, plan.end, None))
        else:
            lost = next((lost for t, lost in plan.interruptions if abs(t - stop.start) <= EPS), 0.0)
            runs.append((segment.start, stop.start, lost))
    return runs


def _saved_step(job: TrainingJob, t: float) -> int | None:
    """The step the latest checkpoint up to `t` holds (None: nothing saved or restored)."""
    saved = [step for when, step in job.plan.checkpoints if when <= t + EPS]
    return saved[-1] if saved else job.restored_from_step


def _interruption(lost: float, step: int | None) -> str:
    since = "the start" if step is None else f"checkpoint step {step}"
    return f"Spot interruption notice: the instance is being reclaimed; {lost:.0f} s of work since {since} is lost"


def _repair(host: int, lost: float, step: int | None) -> str:
    """What a host logs when a GPU of the cluster fails (the first host's, in the stand-in)."""
    since = "the start" if step is None else f"checkpoint step {step}"
    where = "a GPU of this instance" if host == 1 else "a GPU of algo-1"
    return f"Training stopped: {where} failed; {lost:.0f} s of work since {since} is lost"


def _outcome(job: TrainingJob) -> tuple[float, str]:
    """The last line of a run that was not interrupted: how the job ended."""
    plan, total = job.plan, job.behaviour.total_steps
    if plan.status == "Completed":
        upload = next(s.start for s in plan.segments if s.status == "Uploading")
        return upload, f"Training completed: step {total}/{total}; uploading the model"
    if plan.status == "Failed":
        return plan.end, f"Training failed: {plan.failure_reason}"
    stopped = next((s.start for s in plan.segments if s.status == "Stopping"), plan.end)
    step = _saved_step(job, stopped)
    signal = "SIGTERM" if plan.stop_kind != "limit" else f"SIGTERM, {plan.final}"
    saved = "no checkpoint saved" if step is None else f"last checkpoint saved at step {step}"
    return stopped, f"stopped ({signal}): {saved}"


class TrainingLogs:
    """FilterLogEvents, DescribeLogStreams and GetLogEvents for the stand-in's training jobs."""

    def __init__(self, trainings: SageMakerTrainingJobs, clock: ObservedTime, *, account: str, region: str) -> None:
        self.trainings, self.clock = trainings, clock
        self.group_arn = f"arn:aws:logs:{region}:{account}:log-group:{LOG_GROUP}"

    def serves(self, body: dict[str, Any]) -> bool:
        """Whether the request reads the training jobs' log group and only streams of the stand-in's
        jobs (by name; a request for the whole group when the stand-in has jobs). Else moto answers."""
        if _group(body) != LOG_GROUP:
            return False
        jobs = [job.name for job in self.trainings.jobs.values()]
        named = body.get("logStreamNames") or ([body["logStreamName"]] if "logStreamName" in body else [])
        if named:
            return all(str(stream).partition("/")[0] in jobs for stream in named)
        prefix = body.get("logStreamNamePrefix")
        if prefix:
            return any(f"{job}/".startswith(prefix) or prefix.startswith(f"{job}/") for job in jobs)
        return bool(jobs)

    def streams(self) -> list[LogStream]:
        """Every stream as of now, holding the lines written by now, by name."""
        now = self.clock.now + EPS
        visible = (
            LogStream(s.name, s.created, tuple(e for e in s.events if e.t <= now))
            for job in self.trainings.jobs.values()
            for s in planned_streams(job)
            if s.created <= now
        )
        return sorted(visible, key=lambda s: s.name)

    # --- operations -------------------------------------------------------------------------

    def filter_log_events(self, body: dict[str, Any]) -> dict[str, Any]:
        _check_group(body)
        names, prefix = body.get("logStreamNames"), body.get("logStreamNamePrefix")
        # AWS: logs FilterLogEvents.logStreamNames: "If you specify a value for both logStreamNames and
        # logStreamNamePrefix ... the action returns an InvalidParameterException error."
        if names and prefix:
            raise ApiError(_INVALID, "logStreamNames and logStreamNamePrefix are mutually exclusive parameters.")
        limit = _limit(body, 10_000)
        matches = _matcher(body.get("filterPattern"))
        start, end = body.get("startTime"), body.get("endTime")  # both inclusive
        after: EventKey | None = None
        ascending = bool(body.get("startFromHead", True))
        if "nextToken" in body:  # the token's direction wins, as AWS documents
            after, ascending = _decode(body["nextToken"], _filter_position)
        # AWS: logs FilterLogEvents.startFromHead: "A request with startFromHead set to false and a startTime before
        # this date returns an InvalidParameterException"
        if not ascending and start is not None and start < _START_FROM_TAIL_SINCE_MS:
            raise ApiError(_INVALID, "startFromHead=false requires a startTime on or after 2024-01-01T00:00:00Z.")
        events = sorted(
            (
                event
                for stream in self.streams()
                if (prefix is None or stream.name.startswith(prefix)) and (not names or stream.name in names)
                for event in stream.events
                if (start is None or ms(event.t) >= start) and (end is None or ms(event.t) <= end)
                if after is None or (event.key > after if ascending else event.key < after)
                if matches(event.message)
            ),
            key=lambda event: event.key,
            reverse=not ascending,
        )
        page = events[:limit]
        answer: dict[str, Any] = {"events": [_filtered(e) for e in page], "searchedLogStreams": []}
        if len(events) > limit:
            answer["nextToken"] = _encode({"after": list(page[-1].key), "ascending": ascending})
        return answer

    def describe_log_streams(self, body: dict[str, Any]) -> dict[str, Any]:
        _check_group(body)
        order, prefix = body.get("orderBy", "LogStreamName"), body.get("logStreamNamePrefix")  # an OrderBy value
        # AWS: logs DescribeLogStreams.orderBy: "If you order the results by event time, you cannot specify the
        # logStreamNamePrefix parameter."
        if order == "LastEventTime" and prefix:
            raise ApiError(_INVALID, "Cannot order by LastEventTime with a logStreamNamePrefix.")
        limit = _limit(body, 50)
        streams = [s for s in self.streams() if prefix is None or s.name.startswith(prefix)]
        if order == "LastEventTime":
            streams.sort(key=lambda s: (ms(s.events[-1].t), s.name))
        if body.get("descending"):
            streams.reverse()
        offset = _offset(body.get("nextToken"))
        answer: dict[str, Any] = {"logStreams": [self._described(s) for s in streams[offset : offset + limit]]}
        if offset + limit < len(streams):
            answer["nextToken"] = _encode({"offset": offset + limit})
        return answer

    def get_log_events(self, body: dict[str, Any]) -> dict[str, Any]:
        """One stream's events, oldest first in each page; tokens are positions in the stream
        (`f/`: forward, `b/`: backward), returned unchanged at either end as AWS does."""
        _check_group(body)
        stream = next((s for s in self.streams() if s.name == body["logStreamName"]), None)
        # AWS: logs ResourceNotFoundException: "The specified resource does not exist."
        if stream is None:
            raise ApiError("ResourceNotFoundException", "The specified log stream does not exist.")
        start, end = body.get("startTime"), body.get("endTime")  # end exclusive here
        events = [e for e in stream.events if (start is None or ms(e.t) >= start) and (end is None or ms(e.t) < end)]
        limit = _limit(body, 10_000)
        if "nextToken" in body:
            found = _GET_TOKEN.match(str(body["nextToken"]))
            # AWS: logs InvalidParameterException: "A parameter is specified incorrectly."
            # Stand-in: a token this stand-in did not give (AWS's tokens are opaque; its wording for them is kept).
            if found is None:
                raise ApiError(_INVALID, "The specified nextToken is invalid.")
            forward, position = found[1] == "f", min(int(found[2]), len(events))
        else:
            forward = bool(body.get("startFromHead", False))
            position = 0 if forward else len(events)
        if forward:
            first, last = position, min(len(events), position + limit)
        else:
            first, last = max(0, position - limit), position
        return {
            "events": [
                {"timestamp": ms(e.t), "message": e.message, "ingestionTime": ms(e.t)} for e in events[first:last]
            ],
            "nextForwardToken": f"f/{last:056d}",
            "nextBackwardToken": f"b/{first:056d}",
        }

    def _described(self, stream: LogStream) -> dict[str, Any]:
        first, last = ms(stream.events[0].t), ms(stream.events[-1].t)
        return {
            "logStreamName": stream.name,
            "creationTime": ms(stream.created),
            "firstEventTimestamp": first,
            "lastEventTimestamp": last,
            "lastIngestionTime": last,
            "arn": f"{self.group_arn}:log-stream:{stream.name}",
            "storedBytes": 0,  # always 0 for log streams since 2019
        }


def _group(body: dict[str, Any]) -> str | None:
    """The log group named by logGroupName or logGroupIdentifier (a name or an ARN)."""
    if body.get("logGroupName"):
        return str(body["logGroupName"])
    identifier = str(body.get("logGroupIdentifier") or "")
    return identifier.rpartition(":log-group:")[2].removesuffix(":*") or None


def _check_group(body: dict[str, Any]) -> None:
    # AWS: logs FilterLogEvents: "You must include one of these two parameters, but you can't include both."
    # Stand-in: GetLogEvents and DescribeLogStreams say the same; with neither, `serves` leaves the request to moto.
    if body.get("logGroupName") and body.get("logGroupIdentifier"):
        raise ApiError(_INVALID, "LogGroup name and LogGroup ARN are mutually exclusive parameters.")


def _limit(body: dict[str, Any], maximum: int) -> int:
    """The page size: `limit`, else the operation's default (its maximum). Its range (EventsLimit
    1..10000, DescribeLimit 1..50) is checked before the operation runs (stand_in.py, botocore)."""
    return int(body.get("limit", maximum))


def _matcher(pattern: str | None) -> Callable[[str], bool]:
    """Plain terms and quoted phrases, all of which must appear (case-sensitive), as in
    CloudWatch's unstructured patterns. Other syntax is refused rather than ignored."""
    text = (pattern or "").strip()
    if not text:
        return lambda _message: True
    terms: list[str] = []
    for found in _TERM.finditer(text):
        quoted, plain = found[1], found[2]
        # Stand-in: CloudWatch also accepts OR terms (?term), exclusions (-term), regular expressions
        # (%...%), JSON and space-delimited patterns; the stand-in refuses them rather than match them
        # wrongly (Spotline's reader sends no filterPattern).
        if plain is not None and (plain[0] in '?-{[%"' or '"' in plain):
            raise ApiError(
                _INVALID,
                f"The stand-in supports only plain terms and quoted phrases in filterPattern, not: {pattern}",
            )
        terms.append(str(plain if quoted is None else quoted))
    return lambda message: all(term in message for term in terms)


def _filtered(event: LogEvent) -> dict[str, Any]:
    timestamp = ms(event.t)
    return {
        "logStreamName": event.stream,
        "timestamp": timestamp,
        "message": event.message,
        "ingestionTime": timestamp,
        "eventId": f"{timestamp:020d}{_digits(event.stream):010d}{event.line:06d}",
    }


def _digits(text: str) -> int:
    return int.from_bytes(text.encode(), "big") % 10**10


def _encode(state: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode()


def _decode[T](token: Any, parse: Callable[[Any], T]) -> T:
    """A token `_encode` made, read by `parse`; anything else is refused as AWS does."""
    try:
        return parse(json.loads(base64.urlsafe_b64decode(str(token).encode())))
    except (ValueError, TypeError, KeyError) as error:  # binascii, JSON and Unicode errors are ValueErrors
        # AWS: logs InvalidParameterException: "A parameter is specified incorrectly."
        # Stand-in: a token this stand-in did not give (AWS's tokens are opaque; its wording for them is kept).
        raise ApiError(_INVALID, "The specified nextToken is invalid.") from error


def _filter_position(state: dict[str, Any]) -> tuple[EventKey, bool]:
    timestamp, stream, line = state["after"]
    return (int(timestamp), str(stream), int(line)), bool(state["ascending"])


def _offset(token: Any) -> int:
    return 0 if token is None else _decode(token, lambda state: max(0, int(state["offset"])))
