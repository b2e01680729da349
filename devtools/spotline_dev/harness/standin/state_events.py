"""The EventBridge events AWS sends for the stand-in's jobs, and the moments they happen at.

- AWS Batch, "Service job state change events": one `Batch Service Job State Change` from
  `aws.batch` each time a service job's status changes, none for the submission itself; the
  detail "resembles the response that's returned from a DescribeServiceJob", and "The `tags` and
  `serviceRequestPayload` fields are not included" (timestamps in epoch milliseconds, as there).
- SageMaker (EventBridge reference, "SageMaker Training Job State Change"): one from
  `aws.sagemaker` each time a training job's TrainingJobStatus or SecondaryStatus changes; the
  detail resembles DescribeTrainingJob plus the job's `Tags` as a {key: value} map. Its
  timestamps are epoch milliseconds (numbers in real events; the guide's example quotes them).
  A training job's tags are its CreateTrainingJob request's `Tags` (the service job's payload);
  Batch documents no propagation of the service job's own `tags` to it, so they are not added.
- AWS Batch, "Service job preemption events": a `Batch Service Job Preemption Started` when an
  attempt is preempted (detail: statusReason "PREEMPTION_IN_PROGRESS: ...", preemptedJobArn,
  status) and a `Batch Service Job Preemption Completed` once it has stopped (detail:
  preemptedJobArn, preemptionSummary, status, RUNNABLE again), each after the job's state change
  event of that moment. The job's return to RUNNABLE is also a `Batch Service Job State Change`.

Nothing is recorded as it happens: every status is a function of the jobs' timelines and of
time (`ServiceJobs.batch_status`, `SageMakerTrainingJobs.training_status`), so the changes of a
stretch of time are found afterwards, each detail described as of its own moment. A job only
changes at a few moments (its plan's segment starts and end, the Batch job's RUNNABLE, start of
an attempt and final moments); a cursor per job keeps the status last reported.

At one moment, a SageMaker event comes before the Batch one (Batch relays SageMaker's status),
except for a training job's creation, which follows the Batch job's move to SCHEDULED.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from spotline_dev.harness.standin.base.clock import EPS, dt, ms
from spotline_dev.harness.standin.base.http_answers import shape
from spotline_dev.harness.standin.base.records import ServiceJob, TrainingJob
from spotline_dev.harness.standin.batch.jobs import ServiceJobs
from spotline_dev.harness.standin.batch.preemption import IN_PROGRESS, preemption_summary
from spotline_dev.harness.standin.sagemaker.training_jobs import SageMakerTrainingJobs

BATCH_SOURCE = "aws.batch"
BATCH_DETAIL_TYPE = "Batch Service Job State Change"
SAGEMAKER_SOURCE = "aws.sagemaker"
SAGEMAKER_DETAIL_TYPE = "SageMaker Training Job State Change"
BATCH_LEFT_OUT = ("tags", "serviceRequestPayload")  # "not included in the event detail"
PREEMPTION_STARTED = "Batch Service Job Preemption Started"
PREEMPTION_COMPLETED = "Batch Service Job Preemption Completed"

_BATCH_FINAL = frozenset({"SUCCEEDED", "FAILED"})
_TRAINING_FINAL = frozenset({"Completed", "Failed", "Stopped"})
_SAGEMAKER_FIRST, _BATCH, _SAGEMAKER_CREATED = 0, 1, 2  # order of events at one moment

State = tuple[str, ...]  # (Batch status,) or (TrainingJobStatus, SecondaryStatus)
StateAt = Callable[[float], State]


@dataclass
class _Cursor:
    state: State | None  # the state last reported (None: nothing yet)
    since: float  # moments from here on (this one included) are still to be looked at
    done: bool = False


class StateEvents:
    """PutEvents entries for the changes of every service job and training job, walked lazily."""

    def __init__(self, service_jobs: ServiceJobs, trainings: SageMakerTrainingJobs) -> None:
        self.service_jobs, self.trainings = service_jobs, trainings
        self._batch: dict[str, _Cursor] = {}
        self._training: dict[str, _Cursor] = {}
        self._preemptions: dict[str, tuple[int, int]] = {}  # job id -> (started, completed) reported

    # --- when ---------------------------------------------------------------------------

    def next_change_after(self, after: float) -> float | None:
        """The earliest moment later than `after` (by more than EPS) at which a status changes,
        from what is known now (the stand-in has replayed up to its clock)."""
        best: float | None = None
        for sjob in self.service_jobs.jobs.values():
            if sjob.final_at_or_before(after):
                continue
            pending = sjob.next_attempt_at  # Batch starts an attempt (or fails the job) then
            if pending is not None and pending > after + EPS:
                best = pending if best is None else min(best, pending)
            best = _first_change(_batch_moments(sjob), after, best, partial(self._batch_state, sjob))
        for job in self.trainings.jobs.values():
            if job.plan.end > after + EPS:
                best = _first_change(_training_moments(job), after, best, partial(self._training_state, job))
        return best

    # --- what ---------------------------------------------------------------------------

    def events_until(self, now: float) -> list[dict[str, Any]]:
        """Every change not yet reported, up to `now`, in time order."""
        found: list[tuple[float, int, int, dict[str, Any]]] = []
        for order, sjob in enumerate(self.service_jobs.jobs.values()):
            cursor = self._batch.setdefault(sjob.job_id, _Cursor(("SUBMITTED",), sjob.created))
            for t, _ in self._walk(cursor, _batch_moments(sjob), now, partial(self._batch_state, sjob)):
                found.append((t, _BATCH, order, self._batch_event(sjob, t)))
            cursor.done = cursor.state is not None and cursor.state[0] in _BATCH_FINAL
            found.extend((t, _BATCH, order, event) for t, event in self._preemption_events(sjob, now))
        for order, job in enumerate(self.trainings.jobs.values()):
            cursor = self._training.setdefault(job.name.lower(), _Cursor(None, job.created))
            for t, first in self._walk(cursor, _training_moments(job), now, partial(self._training_state, job)):
                rank = _SAGEMAKER_CREATED if first else _SAGEMAKER_FIRST
                found.append((t, rank, order, self._training_event(job, t)))
            cursor.done = cursor.state is not None and cursor.state[0] in _TRAINING_FINAL
        found.sort(key=lambda item: item[:3])
        return [event for *_, event in found]

    @staticmethod
    def _walk(cursor: _Cursor, moments: Iterator[float], now: float, state_at: StateAt) -> Iterator[tuple[float, bool]]:
        """The moments (from the cursor on, up to `now`) whose state differs from the one last
        reported, each with whether it is the job's first report; moves the cursor to `now`."""
        if cursor.done:
            return
        for t in sorted({m for m in moments if cursor.since - EPS <= m <= now + EPS}):
            state = state_at(t)
            if state != cursor.state:
                first = cursor.state is None
                cursor.state = state
                yield t, first
        cursor.since = max(cursor.since, now)

    def _batch_state(self, sjob: ServiceJob, t: float) -> State:
        return (self.service_jobs.batch_status(sjob, t)[0],)

    def _training_state(self, job: TrainingJob, t: float) -> State:
        if t < job.created - EPS:
            return ("",)  # not created yet
        return self.trainings.training_status(job, t)

    def _batch_event(self, sjob: ServiceJob, t: float) -> dict[str, Any]:
        detail = {k: v for k, v in self.service_jobs.describe(sjob, t).items() if k not in BATCH_LEFT_OUT}
        return _entry(BATCH_SOURCE, BATCH_DETAIL_TYPE, detail, sjob.arn, t)

    def _preemption_events(self, sjob: ServiceJob, now: float) -> list[tuple[float, dict[str, Any]]]:
        """Preemption Started and Completed events not reported yet, up to `now`."""
        started, completed = self._preemptions.get(sjob.job_id, (0, 0))
        events: list[tuple[float, dict[str, Any]]] = []
        for p in sjob.preemptions[started:]:
            if p.at > now + EPS:
                break
            detail: dict[str, Any] = {
                "statusReason": IN_PROGRESS + p.reason,
                "preemptedJobArn": sjob.arn,
                "status": self.service_jobs.batch_status(sjob, p.at)[0],
            }
            events.append((p.at, _entry(BATCH_SOURCE, PREEMPTION_STARTED, detail, sjob.arn, p.at)))
            started += 1
        for p in sjob.preemptions[completed:started]:
            end = p.attempt.plan.end
            if end > now + EPS:
                break
            detail = {
                "preemptedJobArn": sjob.arn,
                "preemptionSummary": preemption_summary(sjob, end),
                "status": self.service_jobs.batch_status(sjob, end)[0],
            }
            events.append((end, _entry(BATCH_SOURCE, PREEMPTION_COMPLETED, detail, sjob.arn, end)))
            completed += 1
        self._preemptions[sjob.job_id] = (started, completed)
        return events

    def _training_event(self, job: TrainingJob, t: float) -> dict[str, Any]:
        detail = _millis(self.trainings.describe(job, t), shape("sagemaker", "DescribeTrainingJob", "output"))
        detail["Tags"] = {str(tag["Key"]): str(tag.get("Value", "")) for tag in job.request.get("Tags") or []}
        return _entry(SAGEMAKER_SOURCE, SAGEMAKER_DETAIL_TYPE, detail, job.arn, t)


def _entry(source: str, detail_type: str, detail: dict[str, Any], arn: str, t: float) -> dict[str, Any]:
    return {
        "Source": source,
        "DetailType": detail_type,
        "Detail": json.dumps(detail),
        "Resources": [arn],
        "Time": dt(t),
    }


def _batch_moments(sjob: ServiceJob) -> Iterator[float]:
    """Every moment the Batch status may change at: RUNNABLE, each attempt's start, segment
    starts (STARTING, RUNNING) and end, and the job's final moment."""
    yield sjob.runnable_at
    for attempt in sjob.attempts:
        yield from _training_moments(attempt)
    if sjob.final_status is not None:
        yield sjob.final_at


def _training_moments(job: TrainingJob) -> Iterator[float]:
    yield job.created
    for segment in job.plan.segments:
        yield segment.start
    yield job.plan.end


def _first_change(moments: Iterator[float], after: float, best: float | None, state_at: StateAt) -> float | None:
    """The earlier of `best` and the first moment after `after` whose state differs from the
    state at `after` (states hold between moments)."""
    ahead = sorted({m for m in moments if m > after + EPS and (best is None or m < best)})
    if not ahead:
        return best
    previous = state_at(after)
    for t in ahead:
        if state_at(t) != previous:
            return t
    return best


def _millis(value: Any, model: Any) -> Any:
    """The API's timestamps (epoch seconds) as the events carry them: epoch milliseconds."""
    kind = model.type_name
    if kind == "structure" and isinstance(value, dict):
        return {k: _millis(v, model.members[k]) if k in model.members else v for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [_millis(item, model.member) for item in value]
    if kind == "timestamp" and isinstance(value, int | float):
        return ms(value)
    return value
