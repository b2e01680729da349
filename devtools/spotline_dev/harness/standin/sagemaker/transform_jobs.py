"""SageMaker Batch Transform jobs for the local stack: CreateTransformJob, DescribeTransformJob,
StopTransformJob and ListTransformJobs on the virtual clock, with the EventBridge events AWS
sends for them. How long a job takes is the scenario's (TransformWeather: records per second per
instance, changing over the night); what it reads and writes is the local S3's.

Rules, from the SageMaker API reference and developer guide:
- CreateTransformJob TransformJobName: "The name must be unique within an Amazon Web Services
  Region in an Amazon Web Services account." (ResourceInUse)
- ModelName: "must be the name of an existing Amazon SageMaker model within an Amazon Web Services
  Region in an Amazon Web Services account." (AWS documents no error text for a missing one; the
  stand-in answers ValidationException "Could not find model", as users report it.)
- TransformResources.InstanceCount: "The default value is 1, and the maximum is 100."
- MaxPayloadInMB: "The value of MaxPayloadInMB cannot be greater than 100 MB. If you specify the
  MaxConcurrentTransforms parameter, the value of (MaxConcurrentTransforms * MaxPayloadInMB) also
  cannot exceed 100 MB."
- BatchStrategy: "To enable the batch strategy, you must set the SplitType property to Line,
  RecordIO, or TFRecord."
- S3DataType ManifestFile: "S3Uri identifies an object that is a manifest file containing a list of
  object keys that you want SageMaker to use for batch transform" (its form: a JSON array, a
  {"prefix": ...} first, then keys relative to it).
- Instances: "Batch Transform partitions the Amazon S3 objects in the input by key and maps Amazon
  S3 objects to instances" (the stand-in: sorted keys in contiguous runs, one per instance).
- Output: "For every S3 object used as input for the transform job, batch transform stores the
  transformed data with an .out suffix in a corresponding subfolder in the location in the output
  prefix"; "Batch transform doesn't upload partially processed objects".
- Requests: CreateTransformJob and CreateModel are checked against botocore's model, as
  CreateTrainingJob's payload is (training_requests): ParamValidator (required members, types),
  then the constraints it does not enforce (http_answers.request_problems: "Map Entries: Maximum
  number of 16 items" for CreateTransformJob's Environment, name patterns, lengths, ranges).
- Quota: CreateTransformJob errors include ResourceLimitExceeded, "You have exceeded an SageMaker
  resource limit" (botocore's model); the account's quota "<instance type> for transform job usage"
  (Service Quotas, per region) counts the instances of its running transform jobs
  (`instance_quota`, DEFAULT_INSTANCE_QUOTA).
- StopTransformJob: "When you stop a batch transform job before it is completed, Amazon SageMaker
  doesn't store the job's output in Amazon S3." (Stopping, then Stopped.)
- TransformStartTime: "Indicates when the transform job starts on ML instances. You are billed for
  the time interval between this time and the value of TransformEndTime."
- EventBridge "SageMaker Transform Job State Change" (source aws.sagemaker): "Indicates a change in
  the status of a SageMaker batch transform job"; its detail is the job as DescribeTransformJob
  gives it, "If the value of TransformJobStatus is Failed, the event contains the FailureReason
  field".
Records: an object's, as `records_of` gives them (the sandbox's datasets), else its lines (SplitType
Line), else one record per object ("request payloads contain the entire contents of an input
object").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.validate import ParamValidator

from spotline_dev.harness.standin.base.clock import EPS, dt, ms
from spotline_dev.harness.standin.base.http_answers import ApiError, request_problems, shape

TRANSFORM_DETAIL_TYPE = "SageMaker Transform Job State Change"
SOURCE = "aws.sagemaker"
STOPPING_SECONDS = 30.0
DEFAULT_INSTANCE_QUOTA = 100
"""Instances of one type the account's transform jobs may run at once ("<type> for transform job
usage"). AWS publishes no default (each account's is in its Service Quotas console; new accounts
see 0 for some types); the stand-in's is 100, what AWS confirmed to users for ml.m5.2xlarge
(github.com/facebookresearch/dynabench/pull/461) and TransformResources.InstanceCount's own
maximum ("the maximum is 100"): one job never meets it, a scenario or test lowers it."""


@dataclass
class TransformWeather:
    """How fast the model scores on the stand-in (scenario `transform:`)."""

    records_per_second: float = 1000.0  # per instance
    changes: list[tuple[float, float]] = field(default_factory=list)  # (epoch seconds, factor) from then on
    start_delay: float = 360.0  # CreateTransformJob -> TransformStartTime (instances, the model's container)

    def factor_at(self, t: float) -> float:
        factor = 1.0
        for at, changed in sorted(self.changes):
            if at <= t + EPS:
                factor = changed
        return factor

    def seconds_for(self, records: float, start: float) -> float:
        """Seconds one instance takes from `start` to score `records`, the night's changes included."""
        t, left = start, records
        for at, _ in sorted(c for c in self.changes if c[0] > start + EPS):
            rate = self.records_per_second * self.factor_at(t)
            if left <= rate * (at - t):
                break
            left -= rate * (at - t)
            t = at
        return t - start + left / (self.records_per_second * self.factor_at(t))


@dataclass
class TransformJob:
    name: str
    arn: str
    request: dict[str, Any]
    created: float
    started: float  # TransformStartTime
    end: float  # when it completes (or fails) if not stopped
    objects: list[tuple[str, str, int]]  # (bucket, key, records)
    failure: str | None = None
    stopped_at: float | None = None
    reported: str = ""  # the status of the last event
    written: bool = False  # its outputs, once it has completed

    def status(self, now: float) -> str:
        if self.stopped_at is not None and self.stopped_at <= now + EPS:
            return "Stopped" if now + EPS >= self.stopped_at + STOPPING_SECONDS else "Stopping"
        if now + EPS < self.end:
            return "InProgress"
        return "Failed" if self.failure else "Completed"

    def ended_at(self) -> float:
        return self.stopped_at + STOPPING_SECONDS if self.stopped_at is not None else self.end


class TransformJobs:
    def __init__(
        self,
        weather: TransformWeather,
        *,
        account: str,
        region: str,
        models: Callable[[], set[str]],
        read: Callable[[str, str], bytes | None],
        write: Callable[[str, str, bytes], None],
        records_of: Callable[[str, str], int | None] = lambda _b, _k: None,
        listed: Callable[[str, str], list[str]] = lambda _b, _p: [],
    ) -> None:
        self.weather, self.account, self.region = weather, account, region
        self._models, self._read, self._write, self._records_of, self._listed = models, read, write, records_of, listed
        self.jobs: dict[str, TransformJob] = {}
        self.instance_quota: dict[str, int] = {}  # instance type -> quota, where not DEFAULT_INSTANCE_QUOTA

    # --- operations ----------------------------------------------------------------------------

    def model_refusal(self, body: dict[str, Any]) -> ApiError | None:
        """CreateModel's refusals moto does not make (moto replaces a model of the same name and
        never reads the artifact); None: moto creates the model."""
        refused = model_problems("CreateModel", body)
        if refused:
            # Stand-in: what botocore's model refuses (model_problems), answered as create() answers it.
            return ApiError("ValidationException", refused)
        name = str(body.get("ModelName"))
        # AWS: sagemaker CreateModelInput.ModelName: "The name of the new model."
        # Stand-in: a second model of one name is refused; AWS documents no error for it, users
        # report ValidationException 'Cannot create already existing model "<arn>".'
        if name in self._models():
            return ApiError(
                "ValidationException", f'Cannot create already existing model "{self._arn("model", name)}".'
            )
        # AWS: sagemaker ContainerDefinition.ModelDataUrl: "The S3 path where the model artifacts, which
        # result from model training, are stored. This path must point to a single gzip compressed tar
        # archive (.tar.gz suffix)."
        # Stand-in: a path with no object is refused as users report it: ValidationException 'Could not
        # find model data at s3://...'.
        for container in [body.get("PrimaryContainer") or {}, *(body.get("Containers") or [])]:
            url = str(container.get("ModelDataUrl") or "")
            if url.startswith("s3://"):
                bucket, _, key = url.removeprefix("s3://").partition("/")
                if self._read(bucket, key) is None:
                    return ApiError("ValidationException", f"Could not find model data at {url}.")
        return None

    def create(self, body: dict[str, Any], now: float) -> dict[str, Any]:
        refused = model_problems("CreateTransformJob", body)
        if refused:
            # Stand-in: what botocore's model refuses (model_problems); SageMaker answers ValidationException,
            # "The input fails to satisfy the constraints specified by an AWS service" (Common Errors).
            raise ApiError("ValidationException", refused)
        name = str(body["TransformJobName"])
        # AWS: sagemaker CreateTransformJobRequest.TransformJobName: "The name must be unique within an Amazon
        # Web Services Region in an Amazon Web Services account."
        if name in self.jobs:
            raise ApiError("ResourceInUse", f"Transform job {name} already exists")
        # AWS: sagemaker CreateTransformJobRequest.ModelName: "ModelName must be the name of an existing Amazon
        # SageMaker model within an Amazon Web Services Region in an Amazon Web Services account."
        # Stand-in: AWS documents no error text for it; users report ValidationException "Could not find model".
        if body["ModelName"] not in self._models():
            raise ApiError("ValidationException", f'Could not find model "{self._arn("model", body["ModelName"])}".')
        resources, data = body["TransformResources"], body["TransformInput"]
        # AWS: sagemaker TransformResources.InstanceCount: "The default value is 1 , and the maximum is 100 ."
        if int(resources["InstanceCount"]) > 100:
            raise ApiError("ValidationException", "TransformResources.InstanceCount: the maximum is 100")
        payload, concurrent = body.get("MaxPayloadInMB"), body.get("MaxConcurrentTransforms")
        # AWS: sagemaker CreateTransformJobRequest.MaxPayloadInMB: "The value of MaxPayloadInMB cannot be
        # greater than 100 MB. If you specify the MaxConcurrentTransforms parameter, the value of
        # (MaxConcurrentTransforms * MaxPayloadInMB) also cannot exceed 100 MB."
        if payload is not None and (payload > 100 or (concurrent and payload * concurrent > 100)):
            raise ApiError(
                "ValidationException",
                "MaxPayloadInMB cannot be greater than 100 MB, nor MaxConcurrentTransforms * MaxPayloadInMB",
            )
        # AWS: sagemaker CreateTransformJobRequest.BatchStrategy: "To enable the batch strategy, you must set
        # the SplitType property to Line , RecordIO , or TFRecord ."
        if body.get("BatchStrategy") and data.get("SplitType", "None") == "None":
            raise ApiError(
                "ValidationException",
                "To enable the batch strategy, you must set the SplitType to Line, RecordIO or TFRecord",
            )
        self._check_quota(str(resources["InstanceType"]), int(resources["InstanceCount"]), now)
        objects, failure = self._inputs(data)
        instances = int(resources["InstanceCount"])
        started = now + self.weather.start_delay
        end = started + self._seconds(objects, instances, started) if failure is None else started
        job = TransformJob(name, self._arn("transform-job", name.lower()), body, now, started, end, objects, failure)
        self.jobs[name] = job
        return {"TransformJobArn": job.arn}

    def describe(self, name: str, now: float) -> dict[str, Any]:
        self.settle(now)
        return self._described(self._job(name), now)

    def stop(self, name: str, now: float) -> dict[str, Any]:
        job = self._job(name)
        if job.status(now) == "InProgress":
            job.stopped_at = now
        return {}

    def list_jobs(self, body: dict[str, Any], now: float) -> dict[str, Any]:
        self.settle(now)
        wanted, contains = body.get("StatusEquals"), body.get("NameContains")
        summaries = [
            {
                "TransformJobName": job.name,
                "TransformJobArn": job.arn,
                "CreationTime": job.created,
                "TransformJobStatus": job.status(now),
                **({"TransformEndTime": job.ended_at()} if job.ended_at() <= now + EPS else {}),
            }
            for job in sorted(self.jobs.values(), key=lambda j: -j.created)
            if (wanted is None or job.status(now) == wanted) and (contains is None or contains in job.name)
        ]
        return {"TransformJobSummaries": summaries[: int(body.get("MaxResults", 10))]}

    # --- time ----------------------------------------------------------------------------------

    def next_change_after(self, now: float) -> float | None:
        moments = [m for job in self.jobs.values() for m in (job.started, job.ended_at()) if m > now + EPS]
        return min(moments, default=None)

    def events_until(self, now: float) -> list[dict[str, Any]]:
        """A state change event for each job whose status changed since the last call; a
        completed job's outputs are written as it completes."""
        events = []
        for job in sorted(self.jobs.values(), key=lambda j: j.created):
            status = job.status(now)
            if status == job.reported:
                continue
            self.settle(now)
            job.reported = status
            if status == "InProgress":
                continue  # its creation: no change of status to report
            at = job.ended_at() if status != "Stopping" else float(job.stopped_at or now)
            events.append(
                {
                    "Source": SOURCE,
                    "DetailType": TRANSFORM_DETAIL_TYPE,
                    "Detail": json.dumps(self._detail(job, at)),
                    "Resources": [job.arn],
                    "Time": dt(at),
                }
            )
        return events

    def settle(self, now: float) -> None:
        """The outputs of every job completed by `now`, written once."""
        for job in self.jobs.values():
            if not job.written and job.status(now) == "Completed":
                self._outputs(job)
                job.written = True

    # --- parts ---------------------------------------------------------------------------------

    def _check_quota(self, instance_type: str, count: int, now: float) -> None:
        """ResourceLimitExceeded when the type's running transform jobs and this one together
        would hold more instances than the account's quota for it."""
        quota = self.instance_quota.get(instance_type, DEFAULT_INSTANCE_QUOTA)
        used = sum(
            int(job.request["TransformResources"]["InstanceCount"])
            for job in self.jobs.values()
            if job.request["TransformResources"]["InstanceType"] == instance_type
            and job.status(now) in ("InProgress", "Stopping")
        )
        if used + count > quota:
            # AWS: sagemaker ResourceLimitExceeded: "You have exceeded an SageMaker resource limit."
            # Stand-in: CreateTransformJob's errors in botocore's model include ResourceLimitExceeded; the
            # quota is the account's "<type> for transform job usage" (Service Quotas). SageMaker's message
            # for an account quota, as users report it for this quota
            # ("The account-level service limit 'ml.m5.large for transform job usage' is 0 Instances") and
            # in full for training ("... is 2 Instances, with current utilization of 3 Instances and a
            # request delta of 1 Instances. Please contact AWS support to request an increase for this
            # limit.", github.com/aws/amazon-sagemaker-examples/issues/1543).
            raise ApiError(
                "ResourceLimitExceeded",
                f"The account-level service limit '{instance_type} for transform job usage' is {quota} Instances, "
                f"with current utilization of {used} Instances and a request delta of {count} Instances. "
                "Please contact AWS support to request an increase for this limit.",
            )

    def _job(self, name: str) -> TransformJob:
        job = self.jobs.get(name)
        # AWS: sagemaker DescribeTransformJob: "Returns information about a transform job."
        # Stand-in: its one error is ResourceNotFound, "Resource being access is not found."
        if job is None:
            raise ApiError("ResourceNotFound", f"Could not find requested job with name {name}")
        return job

    def _arn(self, kind: str, name: str) -> str:
        return f"arn:aws:sagemaker:{self.region}:{self.account}:{kind}/{name}"

    def _inputs(self, data: dict[str, Any]) -> tuple[list[tuple[str, str, int]], str | None]:
        source = data["DataSource"]["S3DataSource"]
        bucket, _, key = str(source["S3Uri"]).removeprefix("s3://").partition("/")
        if source["S3DataType"] == "ManifestFile":
            body = self._read(bucket, key)
            if body is None:
                return [], f"ClientError: the manifest file {source['S3Uri']} could not be read"
            entries = json.loads(body)
            prefix_bucket, _, prefix = str(entries[0]["prefix"]).removeprefix("s3://").partition("/")
            keys = [(prefix_bucket, prefix + str(k)) for k in entries[1:]]
        else:
            keys = [(bucket, k) for k in self._listed(bucket, key)]
        if not keys:
            return [], f"ClientError: no objects under {source['S3Uri']}"
        split = data.get("SplitType", "None")
        objects = []
        for where, name in sorted(keys):
            records = self._records_of(where, name)
            if records is None:
                content = self._read(where, name)
                if content is None:
                    return [], f"ClientError: s3://{where}/{name} could not be read"
                records = max(1, content.count(b"\n")) if split == "Line" else 1
            objects.append((where, name, records))
        return objects, None

    def _seconds(self, objects: Sequence[tuple[str, str, int]], instances: int, started: float) -> float:
        """The slowest instance's time: sorted keys in contiguous runs, one run per instance."""
        runs = max(1, min(instances, len(objects)))
        size, extra = divmod(len(objects), runs)
        longest, at = 0.0, 0
        for index in range(runs):
            count = size + (1 if index < extra else 0)
            records = sum(o[2] for o in objects[at : at + count])
            at += count
            longest = max(longest, self.weather.seconds_for(records, started))
        return longest

    def _outputs(self, job: TransformJob) -> None:
        output = str(job.request["TransformOutput"]["S3OutputPath"]).removeprefix("s3://")
        bucket, _, prefix = output.partition("/")
        for _where, key, records in job.objects:
            name = key.rsplit("/", 1)[-1]
            self._write(bucket, f"{prefix.rstrip('/')}/{name}.out".lstrip("/"), b"0.5\n" * min(records, 3))

    def _described(self, job: TransformJob, now: float) -> dict[str, Any]:
        status = job.status(now)
        request = job.request
        described: dict[str, Any] = {
            "TransformJobName": job.name,
            "TransformJobArn": job.arn,
            "TransformJobStatus": status,
            "ModelName": request["ModelName"],
            "TransformInput": request["TransformInput"],
            "TransformOutput": request["TransformOutput"],
            "TransformResources": request["TransformResources"],
            "CreationTime": job.created,
        }
        for name in ("MaxConcurrentTransforms", "MaxPayloadInMB", "BatchStrategy", "Environment", "DataProcessing"):
            if name in request:
                described[name] = request[name]
        if now + EPS >= job.started and job.failure is None:
            described["TransformStartTime"] = job.started
        if status in ("Completed", "Failed", "Stopped"):
            described["TransformEndTime"] = job.ended_at()
        if status == "Failed":
            described["FailureReason"] = job.failure
        return described

    def _detail(self, job: TransformJob, at: float) -> dict[str, Any]:
        described = self._described(job, at + EPS)
        for name in ("CreationTime", "TransformStartTime", "TransformEndTime"):
            if name in described:
                described[name] = ms(described[name])
        return described


def model_problems(operation: str, body: dict[str, Any]) -> str | None:
    """What SageMaker refuses in a request by its API model, as training_requests checks a
    CreateTrainingJob payload: botocore's ParamValidator, then the constraints it leaves out."""
    model = shape("sagemaker", operation, "input")
    report = ParamValidator().validate(body, model)
    if report.has_errors():
        lines = report.generate_report().splitlines()
        # Stand-in: botocore's own messages for what SageMaker validates against the same model.
        return "; ".join(line.strip() for line in lines[1:] or lines)
    refused = request_problems(body, model)
    # Stand-in: the model's other constraints (the API reference's "Length Constraints", "Pattern",
    # "Map Entries", "Valid Range"), which SageMaker checks and moto (CreateModel) does not.
    return "; ".join(refused[:5]) if refused else None
