"""`spotline logs`: the CloudWatch logs of a run's SageMaker training jobs, every attempt.

A run's training jobs are found on the job queue (every service job named after the run, every
SageMaker job of each Batch attempt, Batch's own retries included) and in the run's state (the
attempts Spotline submitted, for jobs Batch no longer lists). SageMaker writes each job's logs
to `/aws/sagemaker/TrainingJobs`, one stream per instance named `<job>/algo-<n>-<epoch>`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from spotline.aws.common import clients
from spotline.aws.common.clients import in_region
from spotline.aws.training.service_jobs import summaries
from spotline.core.regions.regions import arn_in_region
from spotline.core.spec.model import to_rfc3339
from spotline.core.state import Training
from spotline.core.training.service_jobs import CONTINUED_NAME, EXECUTION_TAG, job_name_prefix
from spotline.core.training.status import training_job_name_of
from spotline_dev.cli.operate.deployment import SURROUNDINGS, Deployment
from spotline_dev.cli.operate.runs import Run, describe_run, latest_document, wait_for_start
from spotline_dev.explain.history import parse_time, read_section

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
FOLLOW_INTERVAL_SECONDS = 10.0
MARGIN_SECONDS = 300  # how far back each read goes before what it has seen


@dataclass(frozen=True)
class LogLine:
    at: datetime
    training_job: str
    stream: str
    message: str
    event_id: str

    @property
    def host(self) -> str:
        """`algo-1` of the stream `<job>/algo-1-1764547200`."""
        return self.stream.partition("/")[2].rsplit("-", 1)[0] or self.stream

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": to_rfc3339(self.at),
            "trainingJob": self.training_job,
            "stream": self.stream,
            "message": self.message,
        }


def belongs_to(tags: dict[str, str], first_execution: str) -> bool:
    """Whether a job's `spotline:execution` tag names the run: its first execution or one it
    continued in (`<first>-c<n>`). The job name only narrows the listing; the tag decides."""
    tagged = tags.get(EXECUTION_TAG, "")
    continued = CONTINUED_NAME.fullmatch(tagged)
    return tagged == first_execution or bool(continued and continued.group(1) == first_execution)


def training_jobs(deployment: Deployment, run: Run) -> list[tuple[str, str | None]]:
    """Every SageMaker training job of the run, oldest first, with the region it ran in (None:
    the stack's own; a peer region's for an attempt placed on the namesake queue there)."""
    names: dict[str, tuple[float, str | None]] = {}
    pattern = f"{job_name_prefix(run.first_execution)}*"
    for region in (None, *deployment.peer_regions):
        with in_region(region):
            queue = arn_in_region(deployment.job_queue_arn, region)
            for summary in summaries(queue, filters=[{"name": "JOB_NAME", "values": [pattern]}]):
                described = clients.client("batch", region or deployment.region).describe_service_job(
                    jobId=summary["jobId"]
                )
                if not belongs_to(described.get("tags") or {}, run.first_execution):
                    continue
                for attempt in described.get("attempts") or []:
                    name = training_job_name_of({"latestAttempt": attempt})
                    if name:
                        began = float(attempt.get("startedAt") or described.get("createdAt") or 0)
                        names.setdefault(name, (began, region))
    document, _ = latest_document(deployment.client("stepfunctions"), run.execution_arn)
    training = read_section(Training, document)  # executions of any age (None: another shape)
    for attempt in training.previous_attempts if training else ():  # $.training itself names no training job
        if attempt.training_job_name:
            where = attempt.region
            names.setdefault(
                attempt.training_job_name, (float("inf"), None if where in (None, deployment.region) else str(where))
            )
    return [(name, region) for name, (_, region) in sorted(names.items(), key=lambda item: item[1][0])]


def _from_ms(run: Run) -> int | None:
    """Where to start reading: a little before the run began (the log group is the account's)."""
    started = parse_time(run.started_at)
    return int((started.timestamp() - MARGIN_SECONDS) * 1000) if started else None


def read_logs(
    deployment: Deployment, job: str, start_ms: int | None = None, region: str | None = None
) -> Iterator[LogLine]:
    """The job's log events (every stream), from `start_ms` (inclusive), page after page; in
    `region` for a job that ran in a peer region."""
    logs = clients.client("logs", region or deployment.region)
    request: dict[str, Any] = {"logGroupName": LOG_GROUP, "logStreamNamePrefix": f"{job}/"}
    if start_ms is not None:
        request["startTime"] = start_ms
    while True:
        try:
            page = logs.filter_log_events(**request)
        except logs.exceptions.ResourceNotFoundException:
            return  # no training job of this account has logged yet
        for event in page.get("events", []):
            yield LogLine(
                at=datetime.fromtimestamp(event["timestamp"] / 1000, UTC),
                training_job=job,
                stream=str(event["logStreamName"]),
                message=str(event["message"]).rstrip("\n"),
                event_id=str(event.get("eventId") or f"{event['logStreamName']}:{event['timestamp']}"),
            )
        token = page.get("nextToken")
        if not token or token == request.get("nextToken"):
            return
        request["nextToken"] = token


def run_logs(deployment: Deployment, run: Run) -> list[LogLine]:
    """Every line of the run's training jobs, in time order."""
    jobs, start = training_jobs(deployment, run), _from_ms(run)
    lines = (line for job, region in jobs for line in read_logs(deployment, job, start, region))
    return sorted(lines, key=lambda line: line.at)


def follow_logs(deployment: Deployment, name: str, show: Callable[[LogLine], None]) -> Run:
    """Show the lines as they come, new attempts included, until the run has ended (then one
    last read). Each read goes back MARGIN_SECONDS before the newest line seen: CloudWatch
    filters on the line's own time, and a line (another instance's, a batched upload) may
    arrive after later-stamped ones; event ids keep any line from showing twice."""
    wait_for_start(deployment, name, interval=FOLLOW_INTERVAL_SECONDS)
    seen: set[str] = set()
    since: dict[str, int] = {}
    while True:
        run = describe_run(deployment, name, SURROUNDINGS.now())
        ended = run.status != "RUNNING"
        fresh: list[LogLine] = []
        for job, region in training_jobs(deployment, run):
            start = since[job] - MARGIN_SECONDS * 1000 if job in since else _from_ms(run)
            for line in read_logs(deployment, job, start, region):
                if line.event_id not in seen:
                    seen.add(line.event_id)
                    fresh.append(line)
                    since[job] = max(since.get(job, 0), int(line.at.timestamp() * 1000))
        for line in sorted(fresh, key=lambda line: line.at):
            show(line)
        if ended:
            return run
        SURROUNDINGS.pause(FOLLOW_INTERVAL_SECONDS)
