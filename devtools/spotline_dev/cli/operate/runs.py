"""Where a run stands, read from its execution: the newest state document in the history
(every state keeps the whole run under its keys: `$.manifest.job`, `$.training`, `$.status`,
`$.outcome`), so one GetExecutionHistory call in reverse order per run is enough, however long
the history. A long run continues in fresh executions (`$.continuedAs`); a run is shown by its
latest execution, and a name of an earlier one leads there. A scoring run (the stack's ScoringRun
state machine) keeps its night under `$.scoring` and `$.outcome`: its row says so (`kind`,
`scoring`), its instances stand for capacity and its window's end for the deadline.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from spotline.aws.billing.billing import bill_for_state
from spotline.core.billing.outcome import attempt_records, figures, switched_to_on_demand, unknown_until_billed
from spotline.core.common.naming import slug
from spotline.core.spec.model import to_rfc3339
from spotline.core.state import (
    ContinuedAs,
    ContinuedFrom,
    DatasetCheck,
    Outcome,
    ResourceCheck,
    RunStatus,
    Scoring,
    Training,
)
from spotline_dev.cli.operate.deployment import SURROUNDINGS, Deployment, OperateError
from spotline_dev.explain.history import (
    END_EVENTS,
    as_dict,
    job_in,
    load_document,
    parse_time,
    read_section,
    region_of,
)
from spotline_dev.explain.scoring import ScoringNight, scoring_night

INTAKE_PATIENCE_SECONDS = 300.0  # how long a follower waits for Intake to start an uploaded manifest's run
LATEST_EVENTS = 25  # a page of the reversed history: the newest state document is among them
DOCUMENT_KEYS = (
    ("executionSucceededEventDetails", "output"),
    ("stateExitedEventDetails", "output"),
    ("stateEnteredEventDetails", "input"),
    ("executionStartedEventDetails", "input"),
)
ENDED_STATE = {"SUCCEEDED": "succeeded", "FAILED": "failed", "TIMED_OUT": "timed out", "ABORTED": "stopped"}


@dataclass(frozen=True)
class Run:
    """One run as its latest execution tells it (the `runs` row, the `status` figures)."""

    name: str
    execution_arn: str
    status: str  # the execution's: RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED
    state: str  # the run's, in words: validating, queued, training, interrupted, succeeded, failed (Error), ...
    team: str | None
    job: str | None
    attempts: int
    capacity: str | None
    deadline: str | None
    started_at: str | None  # when the manifest arrived (the run's start, over continuations)
    ended_at: str | None
    elapsed_seconds: int
    cost_usd: float | None
    interruptions: int
    progress: float | None  # checkpointed fraction at the last check
    slack_seconds: int | None
    explanation: str | None  # the last check's, or the outcome's cause
    error: str | None = None
    cause: str | None = None
    training_job: str | None = None
    batch_job_id: str | None = None  # the latest attempt's service job
    batch_job_region: str | None = None  # where it runs (a peer region's queue); None: the stack's
    first_execution: str = ""  # the run's first execution (its jobs are named and tagged after it)
    continued_as: str | None = None
    links: dict[str, str] = field(default_factory=dict)
    kind: str = "TrainingJob"  # or ScoringJob
    cost_unknown: str | None = None  # why cost_usd is None for a run that trained (its bills not final or not read)
    scoring: ScoringNight | None = None  # a scoring run's night

    def to_dict(self) -> dict[str, Any]:
        plain = {_camel(k): v for k, v in asdict(self).items()}
        return plain | {"scoring": self.scoring.to_dict() if self.scoring else None}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# --- reading one execution ---------------------------------------------------------------------


def latest_document(sfn: Any, execution_arn: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the run's newest state, the end event's details or {}) from the reversed history. The
    newest document may be a narrow one (an execution's output); the newest with the job in it
    (`$.manifest`) fills in the rest."""
    request: dict[str, Any] = {
        "executionArn": execution_arn,
        "reverseOrder": True,
        "maxResults": LATEST_EVENTS,
        "includeExecutionData": True,
    }
    end: dict[str, Any] = {}
    newest: dict[str, Any] | None = None
    while True:
        page = sfn.get_execution_history(**request)
        # Newest first, as asked (moto's local Step Functions ignores reverseOrder and pages).
        for event in sorted(page["events"], key=lambda e: -int(e.get("id", 0))):
            kind = str(event.get("type", ""))
            if kind in END_EVENTS and not end:
                end = as_dict(event.get(f"execution{kind.removeprefix('Execution')}EventDetails"))
            for details_key, field_name in DOCUMENT_KEYS:
                document = load_document(as_dict(event.get(details_key)).get(field_name))
                if document is None:
                    continue
                newest = document if newest is None else newest
                if "manifest" in document or "scoring" in document or kind == "ExecutionStarted":
                    return {**document, **newest}, end
        if not page.get("nextToken"):
            return newest or {}, end
        request["nextToken"] = page["nextToken"]


def run_of(described: dict[str, Any], document: dict[str, Any], end: dict[str, Any], now: datetime) -> Run:
    """The run from DescribeExecution (or a ListExecutions item), its newest state document and end."""
    started, ended, elapsed = _timing(described, document, now)
    night = scoring_night(document)
    if night is not None:
        return _scoring_run(described, document, night, started=started, ended=ended, elapsed=elapsed, end=end)
    status = str(described["status"])
    job = job_in(document)  # executions of any age: an older one's $.manifest too
    attempts = attempt_records(document)
    training, check = read_section(Training, document), read_section(RunStatus, document)
    outcome = read_section(Outcome, document)
    # An ended run that recorded no outcome (stopped, or failed before RecordOutcome): its bills,
    # read now (its cost unknown while a job has not ended); a run under way: its cost so far, from
    # each attempt's last check.
    ended_unrecorded = status != "RUNNING" and not (outcome and outcome.figures) and training is not None
    bill = bill_for_state(document, now) if ended_unrecorded else None
    counted = unknown_until_billed(
        figures(
            job,
            attempts,
            region=region_of(str(described["executionArn"])),
            bill=bill,
            switched=switched_to_on_demand(document),
        ),
        bill,
    )
    recorded = outcome.figures if outcome else {}
    error = end.get("error") or described.get("error")
    following = read_section(ContinuedAs, document)
    came_from = read_section(ContinuedFrom, document)  # None: the run's first execution
    return Run(
        name=str(described["name"]),
        execution_arn=str(described["executionArn"]),
        status=status,
        state=_state_in_words(status, document, error),
        team=job.team if job else _team_of_input(document),
        job=job.name if job else None,
        attempts=counted.attempts,
        capacity=training.capacity if training else None,
        deadline=job.deadline if job else None,
        started_at=to_rfc3339(started) if started else None,
        ended_at=to_rfc3339(ended) if ended else None,
        elapsed_seconds=max(0, elapsed),
        cost_usd=recorded.get("cost_usd", counted.cost_usd),
        cost_unknown=recorded.get("cost_unknown", counted.cost_unknown),
        interruptions=int(recorded.get("interruptions", counted.interruptions)),
        progress=float(check.progress.fraction) if check else None,
        slack_seconds=check.decision.slack_seconds if check else None,
        explanation=(outcome.cause if outcome else None) or (check.explanation if check else None),
        error=str(error) if error else None,
        cause=str(end.get("cause") or described.get("cause") or "") or None,
        training_job=check.training_job_name if check else None,  # $.training has no training job's name
        batch_job_id=training.job_id if training else None,
        batch_job_region=training.region if training and training.region else None,
        first_execution=came_from.first if came_from is not None else str(described["name"]),
        continued_as=following.execution_name if following is not None else None,
        links={k: str(v) for k, v in (check.links if check else {}).items()},  # $.outcome keeps no links
    )


def _timing(
    described: dict[str, Any], document: dict[str, Any], now: datetime
) -> tuple[datetime | None, datetime | None, int]:
    """When the run began (its manifest's arrival, over continuations), ended, and how long it took."""
    started = parse_time(document.get("receivedAt")) or parse_time(described.get("startDate"))
    ended = parse_time(described.get("stopDate"))
    return started, ended, int(((ended or now) - started).total_seconds()) if started else 0


def _scoring_run(
    described: dict[str, Any],
    document: dict[str, Any],
    night: ScoringNight,
    *,
    started: datetime | None,
    ended: datetime | None,
    elapsed: int,
    end: dict[str, Any],
) -> Run:
    """A scoring run's row: its instances for capacity, its window's end for the deadline, its
    shards' progress; no cost (Batch Transform's price is not in the catalog Spotline bills from)."""
    status = str(described["status"])
    error = end.get("error") or described.get("error")
    if status == "SUCCEEDED":
        state = "scored, window " + ("met" if night.window_met else "MISSED")
    elif status == "RUNNING":
        state = night.state_in_words()
    else:
        state = _state_in_words(status, document, error)
    planned = read_section(Scoring, document)
    plan = planned.plan if planned else None
    return Run(
        name=str(described["name"]),
        execution_arn=str(described["executionArn"]),
        status=status,
        state=state,
        team=_team_of_input(document),
        job=night.job,
        attempts=0,
        capacity=f"{night.peak_instances} instance(s)" if night.peak_instances else None,
        deadline=night.window_end,
        started_at=to_rfc3339(started) if started else None,
        ended_at=to_rfc3339(ended) if ended else None,
        elapsed_seconds=max(0, elapsed),
        cost_usd=None,
        interruptions=0,
        progress=night.shards_scored / night.shards if night.shards else None,
        slack_seconds=None,
        explanation=night.at_risk or (plan.summary if plan and not plan.valid else None),
        error=str(error) if error else None,
        cause=str(end.get("cause") or described.get("cause") or "") or None,
        first_execution=str(described["name"]),
        kind="ScoringJob",
        scoring=night,
    )


def _state_in_words(status: str, document: dict[str, Any], error: Any) -> str:
    if status != "RUNNING":
        if status == "SUCCEEDED" and read_section(ContinuedAs, document) is not None:
            return "continued"
        return ENDED_STATE.get(status, status.lower()) + (f" ({error})" if error and status == "FAILED" else "")
    if read_section(Training, document) is not None:
        check = read_section(RunStatus, document)
        return check.state if check else "submitted"
    dependencies = read_section(DatasetCheck, document)
    if dependencies is not None and not dependencies.ready and read_section(ResourceCheck, document) is None:
        return "waiting for datasets"
    return "validating"


def _team_of_input(document: dict[str, Any]) -> str | None:
    team = document.get("team")
    return str(team) if team else None


# --- finding runs ------------------------------------------------------------------------------


def describe_run(deployment: Deployment, name: str, now: datetime) -> Run:
    """The run of execution `name`, followed to the execution it continues in, if any."""
    sfn = deployment.client("stepfunctions")
    seen: set[str] = set()
    while True:
        described = find_execution(deployment, name)
        arn = str(described["executionArn"])
        document, end = latest_document(sfn, arn)
        run = run_of(described, document, end, now)
        if not run.continued_as or run.continued_as in seen:
            return run
        seen.add(name)
        name = run.continued_as


def find_execution(deployment: Deployment, name: str) -> dict[str, Any]:
    """DescribeExecution of `name` on the stack's training state machine, else its scoring one."""
    sfn = deployment.client("stepfunctions")
    for machine in deployment.state_machines:
        try:
            return dict(sfn.describe_execution(executionArn=deployment.execution_arn(name, machine)))
        except sfn.exceptions.ExecutionDoesNotExist:
            continue
        except sfn.exceptions.InvalidArn:
            raise OperateError(f"{name!r} is not an execution name (submit and runs print them)", usage=True) from None
    raise OperateError(f"no execution {name} in stack {deployment.stack} ({deployment.region})", not_found=True)


def list_runs(
    deployment: Deployment,
    now: datetime,
    *,
    team: str | None = None,
    status: str | None = None,
    since: datetime | None = None,
    limit: int = 50,
) -> list[Run]:
    """The newest runs first (at most `limit`), one row per run: an execution a run continued
    from is left out (its continuation stands for the run)."""
    sfn = deployment.client("stepfunctions")
    prefix = f"{slug(team, 24) or 'team'}-" if team else None
    runs: list[Run] = []
    listings = [_executions(sfn, machine, status, since) for machine in deployment.state_machines]
    for listed in heapq.merge(*listings, key=_newest_first):
        if prefix and not listed["name"].startswith(prefix):
            continue  # execution names begin with the team's slug (core.common.naming.execution_name)
        document, end = latest_document(sfn, listed["executionArn"])
        run = run_of(listed, document, end, now)
        if run.continued_as or (team and run.team != team):
            continue
        runs.append(run)
        if len(runs) >= limit:
            break
    return runs


def _newest_first(item: dict[str, Any]) -> tuple[int, float]:
    """ListExecutions' order (running first, newest start first; then newest stop first), to merge
    the state machines' lists."""
    stopped, started = parse_time(item.get("stopDate")), parse_time(item.get("startDate"))
    if stopped is not None:
        return 1, -stopped.timestamp()
    return 0, -started.timestamp() if started else 0.0


def _executions(sfn: Any, machine: str, status: str | None, since: datetime | None) -> Iterator[dict[str, Any]]:
    """ListExecutions, page after page, those started since `since`. Step Functions sorts running
    executions by start (or redrive) date and the others by stop date, newest first: an ended
    execution that stopped before `since` also started before it, and so did every ended one after it."""
    request: dict[str, Any] = {"stateMachineArn": machine, "maxResults": 100}
    if status:
        request["statusFilter"] = status
    while True:
        page = sfn.list_executions(**request)
        for item in page["executions"]:
            started, stopped = parse_time(item.get("startDate")), parse_time(item.get("stopDate"))
            if since and stopped and stopped < since:
                return
            if since and started and started < since:
                continue  # started before, still running or stopped after: not a run since then
            yield item
        if not page.get("nextToken"):
            return
        request["nextToken"] = page["nextToken"]


def wait_for_start(deployment: Deployment, name: str, *, interval: float) -> None:
    """Wait until execution `name` exists: a manifest just uploaded starts it a moment later."""
    waited = 0.0
    while True:
        try:
            find_execution(deployment, name)
            return
        except OperateError as missing:
            if not missing.not_found:
                raise
            if waited >= INTAKE_PATIENCE_SECONDS:
                raise OperateError(
                    f"execution {name} has not started after {waited:.0f}s: check the stack's events "
                    "dead-letter queue (EventsDeadLetterQueueUrl output) and Intake's logs",
                    not_found=True,
                ) from None
        SURROUNDINGS.pause(interval)
        waited += interval
