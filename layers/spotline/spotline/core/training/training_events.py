"""Batch and SageMaker state change events, as TrainingEventGate reads them (pure).

Two AWS services tell of a training job's changes on the default event bus (samples in
`events/`):

- AWS Batch, "Batch Service Job State Change": the detail resembles DescribeServiceJob without
  `tags` and `serviceRequestPayload`, so it names the service job (`jobId`) but not the
  execution; the gate reads the job's `spotline:execution` tag.
- SageMaker, "SageMaker Training Job State Change": the detail resembles DescribeTrainingJob and
  carries the training job's `Tags`, Spotline's `spotline:execution` among them.

An event forwarded from a peer region (the stack's rules send its Batch and SageMaker events to each
peer's default bus) keeps the region it happened in: EventBridge's event structure reference says
`region` "Identifies the AWS Region where the event originated". The job lives there, so the gate
reads it there: the region of the job's ARN (`detail.jobArn`, `detail.TrainingJobArn`), else the
event's `region`.

Only the few fields the wake-up needs are kept, each bounded: the event is a signal to look
again, never a source of truth (CheckTrainingStatus reads Batch and SageMaker itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spotline.core.regions.regions import region_of_arn
from spotline.core.state.execution_state import clip
from spotline.core.training.service_jobs import EXECUTION_TAG

BATCH_SOURCE = "aws.batch"
BATCH_DETAIL_TYPE = "Batch Service Job State Change"
SAGEMAKER_SOURCE = "aws.sagemaker"
SAGEMAKER_DETAIL_TYPE = "SageMaker Training Job State Change"
MAX_FIELD = 128


@dataclass(frozen=True, slots=True)
class TrainingChange:
    """One change of a Spotline training job: which job, to what, and whose execution (the
    `spotline:execution` tag) when the event says so."""

    source: str  # "batch" | "sagemaker"
    job: str  # the service job id (Batch) or the training job name (SageMaker)
    status: str
    secondary_status: str | None
    at: str | None  # the event's `time`
    execution: str | None
    region: str | None = None
    """The region the job lives in (its ARN's, else the event's `region`)."""

    @property
    def summary(self) -> str:
        """One line for the history and the logs: `Batch job <id>: RUNNABLE`."""
        what = "Batch service job" if self.source == "batch" else "SageMaker training job"
        status = self.status + (f" ({self.secondary_status})" if self.secondary_status else "")
        return f"{what} {self.job}: {status}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "job": self.job,
            "status": self.status,
            "secondaryStatus": self.secondary_status,
            "at": self.at,
            "summary": self.summary,
        }


def training_change_of(event: Any) -> TrainingChange | None:
    """The change an event tells of, or None when it is not a Batch or SageMaker training job
    state change with the fields the gate needs."""
    if not isinstance(event, Mapping) or not isinstance(event.get("detail"), Mapping):
        return None
    detail, kind, at = event["detail"], event.get("detail-type"), _text(event.get("time"))
    if event.get("source") == BATCH_SOURCE and kind == BATCH_DETAIL_TYPE:
        job, status = _text(detail.get("jobId")), _text(detail.get("status"))
        if job and status:
            return TrainingChange("batch", job, status, None, at, None, _region(event, detail.get("jobArn")))
        return None
    if event.get("source") == SAGEMAKER_SOURCE and kind == SAGEMAKER_DETAIL_TYPE:
        job, status = _text(detail.get("TrainingJobName")), _text(detail.get("TrainingJobStatus"))
        if job and status:
            execution = _tags(detail.get("Tags")).get(EXECUTION_TAG)
            secondary = _text(detail.get("SecondaryStatus"))
            region = _region(event, detail.get("TrainingJobArn"))
            return TrainingChange("sagemaker", job, status, secondary, at, execution, region)
    return None


def _region(event: Mapping[str, Any], arn: Any) -> str | None:
    """Where the job lives: its ARN's region, else the region the event originated in."""
    return (isinstance(arn, str) and region_of_arn(arn)) or _text(event.get("region"))


def _text(value: Any) -> str | None:
    return clip(value, MAX_FIELD) if isinstance(value, str) and value else None


def _tags(tags: Any) -> dict[str, str]:
    """Tags as a map (the event's form) or as a [{Key, Value}] list (the API's form)."""
    if isinstance(tags, Mapping):
        return {str(k): str(v) for k, v in tags.items()}
    if isinstance(tags, list):
        return {str(t.get("Key")): str(t.get("Value")) for t in tags if isinstance(t, Mapping)}
    return {}
