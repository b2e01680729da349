"""A scoring run on SageMaker Batch Transform: its plan (the input's objects, the throughput it
sizes from, its shards' manifest files) and each step of keeping it on schedule (the shards'
transform jobs described, finished ones measured, more started when the rest would be late, one
WindowAtRisk notice when even `maxInstances` cannot make it). The decisions are
`spotline.core.scoring.scoring_plan`'s; this module reads and writes what they need.

The run's state is small and plain (`ScoringRun.to_dict`): the execution carries it from step to
step. Transform jobs are named after the run and the shard, so a step repeated after a crash finds
the job it started (ResourceInUse) and starts nothing twice. A shard the account's transform quota
refuses (ResourceLimitExceeded) waits for the next look, when running shards may have freed their
instances: the run paces with what it may run, and stops nothing for it. Each look says when the
next one is due (`nextCheckSeconds`, `spotline.core.scoring.scoring_plan.next_look_seconds`).
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from spotline.aws.common.clients import client, error_code, split_s3_uri
from spotline.core.scoring.scoring import ScoringSpec
from spotline.core.scoring.scoring_plan import (
    LOOK_SECONDS,
    InputObject,
    Pace,
    Shard,
    ShardRun,
    next_look_seconds,
    pace,
    size,
    split,
)
from spotline.core.spec.model import to_rfc3339

MAX_INPUT_OBJECTS = 100_000
"""The most objects a night's input may have (ListObjectsV2 pages of 1,000)."""
RECENT_NIGHTS = 7
"""The nights whose measured throughput sizes the next (their median)."""
CHECK_SECONDS = LOOK_SECONDS
"""The shortest time between two looks at a run's shards while they score."""


@dataclass(frozen=True, slots=True)
class ShardState:
    index: int
    size: int
    job: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    failed: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            k: v
            for k, v in (
                ("index", self.index),
                ("size", self.size),
                ("job", self.job),
                ("startedAt", self.started_at),
                ("endedAt", self.ended_at),
                ("failed", self.failed),
            )
            if v is not None
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ShardState:
        return cls(
            raw["index"], raw["size"], raw.get("job"), raw.get("startedAt"), raw.get("endedAt"), raw.get("failed")
        )


@dataclass(frozen=True, slots=True)
class ScoringRun:
    run_id: str
    model: str
    input_s3_uri: str
    output_s3_uri: str  # this run's: <spec output>/<run id>/
    start: str
    due: str
    records: int
    sizing: dict[str, Any]
    shards: tuple[ShardState, ...]
    target: int
    probing: bool  # the first shard runs alone, to measure the throughput the fleet is sized from
    at_risk: str | None = None  # the WindowAtRisk notice sent, if any
    measured: float | None = None  # records per second per instance, from the finished shards
    notifications: tuple[dict[str, str], ...] = field(default_factory=tuple)
    jobs_key: str = ""  # in every transform job's name: the execution's (transform_jobs_key)
    projected_end: str | None = None  # when the last look projected the last shard to end
    next_check_seconds: int = CHECK_SECONDS  # when the next look is due (the Wait state's SecondsPath)

    @property
    def done(self) -> bool:
        return all(s.ended_at for s in self.shards) or any(s.failed for s in self.shards)

    def to_dict(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "model": self.model,
            "input": self.input_s3_uri,
            "output": self.output_s3_uri,
            "start": self.start,
            "due": self.due,
            "records": self.records,
            "sizing": self.sizing,
            "shards": [s.to_dict() for s in self.shards],
            "target": self.target,
            "probing": self.probing,
            "atRisk": self.at_risk,
            "measuredRecordsPerSecond": round(self.measured, 1) if self.measured else None,
            "notifications": list(self.notifications),
            "jobsKey": self.jobs_key,
            "projectedEnd": self.projected_end,
            "nextCheckSeconds": self.next_check_seconds,
            "done": self.done,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ScoringRun:
        return cls(
            raw["runId"],
            raw["model"],
            raw["input"],
            raw["output"],
            raw["start"],
            raw["due"],
            raw["records"],
            raw["sizing"],
            tuple(ShardState.from_dict(s) for s in raw["shards"]),
            raw["target"],
            raw["probing"],
            raw.get("atRisk"),
            raw.get("measuredRecordsPerSecond"),
            tuple(raw.get("notifications") or ()),
            str(raw.get("jobsKey") or ""),
            raw.get("projectedEnd"),
            int(raw.get("nextCheckSeconds") or CHECK_SECONDS),
        )


# --- reading the input ---------------------------------------------------------------------------


def input_objects(s3_uri: str) -> list[InputObject]:
    """The objects under the input prefix (folders left out), at most MAX_INPUT_OBJECTS + 1."""
    bucket, prefix = split_s3_uri(s3_uri)
    found: list[InputObject] = []
    for page in client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        found += [
            InputObject(o["Key"], int(o["Size"])) for o in page.get("Contents") or [] if not o["Key"].endswith("/")
        ]
        if len(found) > MAX_INPUT_OBJECTS:
            break
    return found


def bytes_per_record(s3_uri: str, objects: list[InputObject], sample: int = 1 << 20) -> float | None:
    """Measured on the first MiB of the largest object: its bytes over its lines (Line split)."""
    if not objects:
        return None
    bucket, _ = split_s3_uri(s3_uri)
    largest = max(objects, key=lambda o: o.size)
    body = client("s3").get_object(Bucket=bucket, Key=largest.key, Range=f"bytes=0-{sample - 1}")["Body"].read()
    lines = body.count(b"\n")
    return len(body) / lines if lines else None


# --- throughput, per job, model and instance type -----------------------------------------------


class ThroughputStore:
    """The throughput each night measured (DynamoDB: pk THROUGHPUT#<team>/<job>, sk <model>#<type>#<run>)."""

    def __init__(self, table: Any) -> None:
        self.table = table

    def recent(self, spec: ScoringSpec, model: str) -> float | None:
        """The median of the last RECENT_NIGHTS measurements of this job, model and type."""
        found = (
            self.table.query(
                KeyConditionExpression="pk = :pk AND begins_with(sk, :sk)",
                ExpressionAttributeValues={
                    ":pk": f"THROUGHPUT#{spec.team}/{spec.name}",
                    ":sk": f"{model}#{spec.instance_type}#",
                },
                ScanIndexForward=False,
                Limit=RECENT_NIGHTS,
                ConsistentRead=True,
            ).get("Items")
            or []
        )
        values = [float(item["recordsPerSecond"]) for item in found]
        return statistics.median(values) if values else None

    def record(self, spec: ScoringSpec, model: str, run_id: str, at: str, records_per_second: float) -> None:
        from decimal import Decimal  # noqa: PLC0415  (DynamoDB numbers)

        self.table.put_item(
            Item={
                "pk": f"THROUGHPUT#{spec.team}/{spec.name}",
                "sk": f"{model}#{spec.instance_type}#{at}#{run_id}",
                "recordsPerSecond": Decimal(str(round(records_per_second, 3))),
            }
        )


# --- planning ------------------------------------------------------------------------------------


def run_id_of(spec: ScoringSpec, ready_at: datetime) -> str:
    """The run's id: the job and the moment its data was ready (a redelivered event finds the same run)."""
    digest = hashlib.sha256(f"{spec.team}/{spec.name}@{ready_at.isoformat()}".encode()).hexdigest()
    return f"{ready_at.strftime('%Y%m%dT%H%M')}-{digest[:6]}"


def transform_jobs_key(execution_name: str) -> str:
    """What every transform job of an execution has in its name, so that the clean-up at the
    execution's end finds them by name alone (ListTransformJobs NameContains)."""
    return hashlib.sha256(execution_name.encode()).hexdigest()[:10]


def plan_run(
    spec: ScoringSpec,
    *,
    ready_at: datetime,
    now: datetime,
    recorded: float | None,
    input_s3_uri: str | None = None,
    execution_name: str = "",
) -> ScoringRun:
    """The run of the night whose data was ready at `ready_at`: sized from `recorded` (the last
    nights' throughput), else from the declared one while the first shard measures it."""
    start, due = spec.due(ready_at)
    start = max(start, now)
    source = input_s3_uri or spec.input_s3_uri
    objects = input_objects(source)
    total = sum(o.size for o in objects)
    records = spec.records or round(total / (bytes_per_record(source, objects) or 1.0))
    rate = recorded or spec.records_per_second or 1.0
    sizing = size(
        records=records,
        records_per_second=rate,
        throughput_source="measured" if recorded else "declared",
        start=start,
        due=due,
        max_instances=spec.max_instances,
        headroom_percent=spec.headroom_percent,
        objects=len(objects),
    )
    probe = recorded is None and len(objects) > 1  # one object: nothing to measure it on before the rest
    shards = _shards(objects, max(sizing.instances, min(spec.max_instances, sizing.needed)), probe=probe)
    run_id = run_id_of(spec, ready_at)
    output = f"{spec.output_s3_uri.rstrip('/')}/{run_id}/"
    write_shard_manifests(source, output, shards)
    return ScoringRun(
        run_id,
        str(spec.model.name),
        source,
        output,
        to_rfc3339(start),  # Step Functions reads it (TimestampPath): RFC 3339 with a Z
        to_rfc3339(due),
        records,
        sizing.to_dict(),
        tuple(ShardState(s.index, s.size) for s in shards),
        target=1 if probe else sizing.instances,
        probing=probe,
        jobs_key=transform_jobs_key(execution_name or run_id),
    )


def _shards(objects: list[InputObject], instances: int, *, probe: bool) -> list[Shard]:
    """The run's shards; with `probe`, the first is one object alone (the smallest), so that the
    throughput the fleet is sized from is measured in minutes, not a whole shard's time."""
    if not probe or len(objects) < 2:
        return split(objects, instances)
    smallest = min(objects, key=lambda o: (o.size, o.key))
    rest = split([o for o in objects if o is not smallest], instances)
    return [Shard(0, (smallest.key,), smallest.size), *(Shard(s.index + 1, s.keys, s.size) for s in rest)]


def write_shard_manifests(input_s3_uri: str, output_s3_uri: str, shards: list[Shard]) -> None:
    """Each shard's manifest file (S3DataType ManifestFile: a prefix, then keys relative to it),
    beside the run's output, where the model's role reads and writes already."""
    in_bucket, prefix = split_s3_uri(input_s3_uri)
    out_bucket, out_prefix = split_s3_uri(output_s3_uri)
    for shard in shards:
        body = [{"prefix": f"s3://{in_bucket}/{prefix}"}, *[k.removeprefix(prefix) for k in shard.keys]]
        client("s3").put_object(
            Bucket=out_bucket,
            Key=f"{out_prefix}_manifests/shard-{shard.index:03d}.json",
            Body=json.dumps(body).encode(),
        )


# --- keeping it on schedule ----------------------------------------------------------------------


def job_name(spec: ScoringSpec, run: ScoringRun, index: int) -> str:
    """`<job>-<execution key>-s<shard>`: at most 56 characters (TransformJobName allows 63)."""
    return f"{spec.name[:40]}-{run.jobs_key or run.run_id[-6:]}-s{index:03d}"


def advance(spec: ScoringSpec, run: ScoringRun, *, now: datetime, notify: Callable[[str, str], None]) -> ScoringRun:
    """One look at the run: its shards' jobs described, the pace worked out, shards started."""
    shards = tuple(_described(s) for s in run.shards)
    runs = _shard_runs(shards, now)
    due, records = datetime.fromisoformat(run.due), run.records

    def paced(records_per_second: float, target: int, max_instances: int = spec.max_instances) -> Pace:
        return pace(
            runs,
            records=records,
            records_per_second=records_per_second,
            target=target,
            max_instances=max_instances,
            now=now,
            due=due,
            look_seconds=CHECK_SECONDS,
        )

    decided = paced(float(run.sizing["recordsPerSecond"]), run.target)
    target, probing = decided.target, run.probing
    sizing = run.sizing
    if probing and decided.measured_records_per_second:
        # The probe shard has measured tonight's throughput: the fleet is sized from it now.
        resized = size(
            records=records,
            records_per_second=decided.measured_records_per_second,
            throughput_source="probe",
            start=now,
            due=due,
            max_instances=spec.max_instances,
            headroom_percent=spec.headroom_percent,
            objects=int(run.sizing["objects"]),
            shards=sum(1 for r in runs if r.ended_at is None),  # the run is split: what is left to score
        )
        sizing, probing = resized.to_dict(), False
        decided = paced(decided.measured_records_per_second, resized.instances)
        target = decided.target
    elif probing:
        decided = replace(decided, start=0 if any(r.started_at for r in runs) else 1)
    started, refused = list(shards), False
    for shard in [s for s in shards if s.job is None][: decided.start]:
        name = _start(spec, run, shard.index)
        if name is None:  # the account's transform quota is full: the rest waits for instances to free
            refused = True
            break
        started[shard.index] = replace(shard, job=name)
    rate = decided.measured_records_per_second or float(sizing["recordsPerSecond"])
    runs = _shard_runs(tuple(started), now)  # as the next look will find them (`paced` reads these now)
    if refused:
        # Paced with what the quota lets it run now: the projection and the risk say so.
        held = max(1, sum(1 for r in runs if r.started_at and not r.ended_at and not r.failed))
        capped = paced(rate, held, held)
        risk = capped.at_risk and (
            f"the account's quota of {spec.instance_type} for transform jobs holds the run to {held} "
            f"instance(s) for now (ResourceLimitExceeded): {capped.at_risk}"
        )
        decided = replace(decided, projected_end=capped.projected_end, at_risk=risk)
    notifications = list(run.notifications)
    at_risk = run.at_risk
    reason = decided.at_risk or (sizing.get("atRisk") if not probing else None)
    if reason and not at_risk and now < due:
        notify("WindowAtRisk", reason)
        at_risk = reason
        notifications.append({"at": to_rfc3339(now), "type": "WindowAtRisk"})
    return replace(
        run,
        shards=tuple(started),
        target=target,
        probing=probing,
        sizing=sizing,
        at_risk=at_risk,
        measured=decided.measured_records_per_second or run.measured,
        notifications=tuple(notifications),
        projected_end=to_rfc3339(decided.projected_end.replace(microsecond=0)) if decided.projected_end else None,
        next_check_seconds=next_look_seconds(
            runs, records=records, records_per_second=rate, now=now, due=due, projected_end=decided.projected_end
        ),
    )


def _shard_runs(shards: tuple[ShardState, ...], now: datetime) -> list[ShardRun]:
    """The shards as the pace reads them (a job submitted but not started yet: started now)."""
    return [
        ShardRun(
            s.index,
            s.size,
            datetime.fromisoformat(s.started_at) if s.started_at else (now if s.job else None),
            datetime.fromisoformat(s.ended_at) if s.ended_at else None,
            bool(s.failed),
        )
        for s in shards
    ]


def _start(spec: ScoringSpec, run: ScoringRun, index: int) -> str | None:
    """The shard's transform job started (or found started); None when the account's quota
    refuses it for now (ResourceLimitExceeded, CreateTransformJob's quota error)."""
    name = job_name(spec, run, index)
    out_bucket, out_prefix = split_s3_uri(run.output_s3_uri)
    request: dict[str, Any] = {
        "TransformJobName": name,
        "ModelName": run.model,
        "TransformInput": {
            "DataSource": {
                "S3DataSource": {
                    "S3DataType": "ManifestFile",
                    "S3Uri": f"s3://{out_bucket}/{out_prefix}_manifests/shard-{index:03d}.json",
                }
            },
            "ContentType": spec.content_type,
            "SplitType": spec.split_type,
            **({"CompressionType": spec.compression} if spec.compression else {}),
        },
        "TransformOutput": {
            "S3OutputPath": f"s3://{out_bucket}/{out_prefix}shard-{index:03d}/",
            **({"Accept": spec.accept} if spec.accept else {}),
            **({"AssembleWith": spec.assemble_with} if spec.assemble_with else {}),
        },
        "TransformResources": {"InstanceType": spec.instance_type, "InstanceCount": 1},
        "MaxConcurrentTransforms": spec.max_concurrent_transforms,
        "Tags": [{"Key": "spotline:team", "Value": spec.team}, {"Key": "spotline:job", "Value": spec.name}],
    }
    if spec.split_type != "None":
        request["BatchStrategy"] = "MultiRecord"
    if spec.max_payload_mb is not None:
        request["MaxPayloadInMB"] = spec.max_payload_mb
    if spec.environment:
        request["Environment"] = dict(spec.environment)
    try:
        client("sagemaker").create_transform_job(**request)
    except Exception as exc:
        code = error_code(exc)
        if code == "ResourceLimitExceeded":
            return None
        if code != "ResourceInUse":  # started by an earlier try of this step: the same job
            raise
    return name


def _described(shard: ShardState) -> ShardState:
    if shard.job is None or shard.ended_at or shard.failed:
        return shard
    described = client("sagemaker").describe_transform_job(TransformJobName=shard.job)
    status = described["TransformJobStatus"]
    started = described.get("TransformStartTime")
    ended = described.get("TransformEndTime")
    return replace(
        shard,
        started_at=started.isoformat() if started else None,
        ended_at=ended.isoformat() if ended and status == "Completed" else None,
        failed=f"{status}: {described.get('FailureReason') or ''}".strip(": ")
        if status in ("Failed", "Stopped")
        else None,
    )


def stop_transform_jobs(execution_name: str) -> list[str]:
    """Stop every transform job of the execution still in progress (idempotent): after an error
    in the run, or at the execution's end (stopped in the console, timed out)."""
    sagemaker, stopped = client("sagemaker"), []
    for name in transform_jobs_of(execution_name, "InProgress"):
        try:
            sagemaker.stop_transform_job(TransformJobName=name)
        except Exception as exc:
            if error_code(exc) not in ("ValidationException", "ResourceNotFound"):  # ended meanwhile
                raise
        stopped.append(name)
    return stopped


def transform_jobs_of(execution_name: str, status: str) -> list[str]:
    """The execution's transform jobs in `status` (ListTransformJobs NameContains its key)."""
    found, sagemaker = [], client("sagemaker")
    request: dict[str, Any] = {"NameContains": transform_jobs_key(execution_name), "StatusEquals": status}
    while True:
        page = sagemaker.list_transform_jobs(**request | {"MaxResults": 100})
        found += [str(job["TransformJobName"]) for job in page.get("TransformJobSummaries") or []]
        if not page.get("NextToken"):
            return found
        request["NextToken"] = page["NextToken"]
