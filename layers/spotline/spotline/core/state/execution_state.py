"""What the execution state carries, and how big it may get (pure).

Step Functions fails a state input or output over 256 KiB with `States.DataLimitExceeded`,
which a Catch on `States.ALL` does not catch: the execution dies without a report and leaves its
training job running. So the state never carries anything whose size the manifest decides:

- the normalized spec stays in S3 (LoadManifest writes it once, `spotline.aws.manifest.spec_store`);
  the state has a reference to it (`$.manifest.specRef`) and `JobSummary` (`$.manifest.job`),
  the few fields on-call reads in the console and the Choice states need, each bounded;
- a rejected manifest keeps its first `MAX_ERRORS_IN_STATE` errors, each cut to a bounded
  length, and their count; the report beside the manifest has them all, in full;
- each earlier attempt is an `AttemptRecord` (`spotline.core.state.training`), not a copy of its
  last status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar

from spotline.core.common.errors import ManifestError, summarize
from spotline.core.spec.model import JobSpec, Strategy
from spotline.core.state.fields import MAX_REASON, StateRecord, clip, key
from spotline.core.state.moves import ContinuedFrom
from spotline.core.state.status import RunStatus

__all__ = [  # clip and MAX_REASON now live with the state's records, and are still found here
    "LEFT_BEHIND",
    "MAX_ERRORS_IN_STATE",
    "MAX_ERROR_MESSAGE",
    "MAX_ERROR_PATH",
    "MAX_EXECUTION_NAME",
    "MAX_OWNER",
    "MAX_REASON",
    "JobSummary",
    "clip",
    "continuation_input",
    "continuation_name",
    "job_summary_of",
    "rejection_for_state",
]

MAX_ERRORS_IN_STATE = 20
"""As many as the ManifestInvalid cause lists (`spotline.core.common.errors.summarize`)."""
MAX_ERROR_PATH = 300
MAX_ERROR_MESSAGE = 600
"""Paths and messages quote manifest keys and values, whose length the schema does not always bound."""
MAX_OWNER = 254
"""The longest e-mail address SMTP allows; metadata.owner has no maxLength in the schema."""

# --- the job in brief -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSummary(StateRecord):
    """`$.manifest.job`: what on-call reads first and the Choice states route on."""

    SECTION: ClassVar[str] = "$.manifest.job"
    team: str = key("team", "the team")
    name: str = key("name", "metadata.name")
    owner: str | None = key("owner", "metadata.owner (at most 254 characters)")
    strategy: Strategy = key("strategy", "`spot-with-fallback`, `spot-only` or `on-demand`")
    instance_type: str = key("instanceType", "the instance type asked for")
    instance_count: int = key("instanceCount", "how many instances")
    deadline: str | None = key("deadline", "capacity.deadline (RFC 3339), null without one")
    output_s3_uri: str = key("outputS3Uri", "where the model goes")
    depends_on_datasets: bool = key("dependsOnDatasets", "the run waits for spec.dependsOn's datasets first")
    dependency_timeout_seconds: int = key("dependencyTimeoutSeconds", "how long it waits for them at most")

    @classmethod
    def of(cls, spec: JobSpec) -> JobSummary:
        return cls(
            team=spec.team,
            name=spec.name,
            strategy=spec.strategy,
            instance_type=spec.instance_type,
            instance_count=spec.instance_count,
            deadline=spec.deadline,
            output_s3_uri=spec.output_s3_uri,
            owner=clip(spec.owner, MAX_OWNER) if spec.owner else None,
            depends_on_datasets=bool(spec.depends_on),
            dependency_timeout_seconds=spec.dependency_timeout_seconds,
        )

    @property
    def uses_spot(self) -> bool:
        return self.strategy != "on-demand"

    @property
    def deadline_at(self) -> datetime | None:
        return datetime.fromisoformat(self.deadline) if self.deadline else None


def job_summary_of(manifest: Mapping[str, Any] | None) -> JobSummary | None:
    """The summary LoadManifest left in `$.manifest`, or None for a rejected (or unread) manifest.
    Executions started before the spec moved out of the state carry the whole spec instead."""
    if not manifest:
        return None
    if manifest.get("job"):
        return JobSummary.from_state(manifest["job"])
    if manifest.get("spec"):
        return JobSummary.of(JobSpec.from_dict(manifest["spec"]))
    return None


# --- a rejected manifest ----------------------------------------------------------------------


def rejection_for_state(errors: list[ManifestError]) -> dict[str, Any]:
    """`errors` (the first MAX_ERRORS_IN_STATE, each bounded), `errorCount` and `summary` (the
    ManifestInvalid cause) for the state; the rejection report keeps every error in full."""
    bounded = [ManifestError(clip(e.path, MAX_ERROR_PATH), clip(e.message, MAX_ERROR_MESSAGE)) for e in errors]
    return {
        "errors": [e.to_dict() for e in bounded[:MAX_ERRORS_IN_STATE]],
        "errorCount": len(errors),
        "summary": summarize(bounded, limit=MAX_ERRORS_IN_STATE),
    }


# --- continuing in a fresh execution ----------------------------------------------------------

MAX_EXECUTION_NAME = 80
"""Step Functions' limit on an execution name."""
LEFT_BEHIND = ("wakeUp", "failure", "continuedAs", "continuationFailure")
"""Keys of one execution's own waits and errors, not carried into the next."""


def continuation_name(first_execution: str, number: int) -> str:
    """The `number`th execution continuing the run `first_execution` started: `<first>-c<n>`."""
    suffix = f"-c{number}"
    return first_execution[: MAX_EXECUTION_NAME - len(suffix)] + suffix


def continuation_input(state: Mapping[str, Any], *, execution: str) -> dict[str, Any]:
    """The state a fresh execution resumes the watch from (its input): the run as it stands,
    its check count started again, and `continuedFrom` saying where it came from (`execution`,
    the run's `first` execution and the continuation's `number`)."""
    carried = {k: v for k, v in state.items() if k not in LEFT_BEHIND}
    carried["status"] = replace(RunStatus.of_state(state), checks=0).to_state()
    carried["continuedFrom"] = ContinuedFrom.after(ContinuedFrom.in_state(state), execution).to_state()
    return carried
