"""What the steps before the first submission leave in the state (pure): `$.manifest`
(LoadManifest), `$.dependencies` (CheckDatasets, or DatasetGate's release of WaitForDatasets),
`$.resources` (ValidateResources) and `$.liveRuns` (CheckNoLiveJob)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from spotline.core.common.errors import ManifestError
from spotline.core.state.execution_state import JobSummary, rejection_for_state
from spotline.core.state.fields import StateRecord, key


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem(StateRecord):
    """One refusal, as a rejection lists it: the field and the reason (the items of
    `$.manifest.errors` and `$.liveRuns.problems` too)."""

    SECTION: ClassVar[str] = "$.resources.problems[]"
    path: str = key("path", "the manifest field (or `document`)")
    message: str = key("message", "why it is refused, and what to do")

    @classmethod
    def of(cls, error: ManifestError) -> Problem:
        return cls(path=error.path, message=error.message)

    def error(self) -> ManifestError:
        return ManifestError(self.path, self.message)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecRef(StateRecord):
    """Where LoadManifest stored the normalized spec (`spotline.aws.manifest.spec_store`)."""

    SECTION: ClassVar[str] = "$.manifest.specRef"
    bucket: str = key("bucket", "the ingest bucket")
    spec_key: str = key("key", "`specs/<execution>.json`")
    version_id: str | None = key("versionId", "its version")
    sha256: str = key("sha256", "its digest, checked on every read")


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestCheck(StateRecord):
    """`$.manifest`: LoadManifest's verdict on the exact manifest version."""

    SECTION: ClassVar[str] = "$.manifest"
    valid: bool = key("valid", "the manifest passed the schema and the semantic checks")
    missing: bool = key("missing", "the version was deleted before it was read (ManifestNotFound)")
    errors: tuple[Problem, ...] = key(
        "errors", "the first 20 errors, each bounded (the rejection report has all of them)", record=Problem, many=True
    )
    error_count: int = key("errorCount", "how many errors there were")
    summary: str = key("summary", "`valid`, or the ManifestInvalid cause")
    report: str | None = key("report", "the rejection report beside the manifest (s3://...); null when valid")
    job: JobSummary | None = key(
        "job", "the job in brief: team, name, strategy, type, count, deadline (null when rejected)", record=JobSummary
    )
    spec_ref: SpecRef | None = key(
        "specRef", "where the normalized spec is stored (null when rejected)", record=SpecRef
    )

    @classmethod
    def accepted(cls, job: JobSummary, spec_ref: SpecRef) -> ManifestCheck:
        return cls(
            valid=True,
            missing=False,
            errors=(),
            error_count=0,
            summary="valid",
            report=None,
            job=job,
            spec_ref=spec_ref,
        )

    @classmethod
    def rejected(
        cls, errors: list[ManifestError], *, report: str | None, missing: bool = False, summary: str | None = None
    ) -> ManifestCheck:
        """A rejection as the state keeps it (`rejection_for_state`: the first errors, each bounded)."""
        kept = rejection_for_state(errors)
        return cls(
            valid=False,
            missing=missing,
            errors=tuple(Problem.from_state(e) for e in kept["errors"]),
            error_count=int(kept["errorCount"]),
            summary=summary or str(kept["summary"]),
            report=report,
            job=None,
            spec_ref=None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class DatasetCheck(StateRecord):
    """`$.dependencies`: whether spec.dependsOn's datasets are ready (CheckDatasets), or the
    release DatasetGate sent WaitForDatasets once they were."""

    SECTION: ClassVar[str] = "$.dependencies"
    ready: bool = key("ready", "every dataset is ready")
    datasets: dict[str, dict[str, Any]] = key(
        "datasets", "the ready ones, by name: `{location, producedAt}` as the DatasetReady event gave them"
    )
    missing: list[str] = key("missing", "the ones still awaited")
    released_at: str | None = key("releasedAt", "when DatasetGate released the wait", omit_none=True)
    released_by: str | None = key("releasedBy", "the event that released it", omit_none=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExcludedRegion(StateRecord):
    """A region of capacity.regions the run may not use, and why."""

    SECTION: ClassVar[str] = "$.resources.regions.excluded[]"
    region: str = key("region", "the region")
    field: str = key("field", "the manifest field that failed there")
    reason: str = key("reason", "why")


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionPlanState(StateRecord):
    """`$.resources.regions`: the regions the run may use (home first)."""

    SECTION: ClassVar[str] = "$.resources.regions"
    home: str = key("home", "the stack's region")
    allowed: list[str] = key("allowed", "the regions the run may use, home first")
    excluded: tuple[ExcludedRegion, ...] = key(
        "excluded", "regions of capacity.regions left out, with the field and reason", record=ExcludedRegion, many=True
    )
    subnets: dict[str, list[str]] | None = key(
        "subnets", "per peer region, the subnets that reach the job's file systems", omit_none=True
    )
    zones: dict[str, dict[str, list[str]]] | None = key(
        "zones", "per peer region, a job of many instances' subnets by zone (one zone per attempt)", omit_none=True
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceCheck(StateRecord):
    """`$.resources`: ValidateResources' verdict on what the spec names."""

    SECTION: ClassVar[str] = "$.resources"
    valid: bool = key("valid", "every resource is there and allowed")
    problems: tuple[Problem, ...] = key("problems", "every problem, at once", record=Problem, many=True)
    summary: str = key("summary", "the ResourceValidationFailed cause, or where the run may go")
    regions: RegionPlanState = key("regions", "the regions the run may use", record=RegionPlanState)
    subnets: list[str] | None = key(
        "subnets", "the stack's subnets that reach every file system the job mounts (null when it mounts none)"
    )
    zones: dict[str, list[str]] | None = key(
        "zones",
        "a job of many instances in the stack's VPC: its subnets by zone, one zone per attempt (null otherwise)",
        optional="a run validated before zones has none",
    )

    def zones_in(self, region: str, home: str) -> dict[str, list[str]] | None:
        """A job of many instances' subnets by zone in `region` (None: no zone to pin)."""
        if region == home:
            return self.zones
        return (self.regions.zones or {}).get(region)

    def pinned_subnets(self, region: str, home: str) -> list[str] | None:
        """The subnets a job that mounts file systems must run in, in `region` (None: any)."""
        if region == home:
            return self.subnets
        return (self.regions.subnets or {}).get(region)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceJobRecord(StateRecord):
    """A Batch service job as the state names it (the items of `$.cleanup.stopped` and
    `$.capacityCleanup.stopped` too)."""

    SECTION: ClassVar[str] = "$.liveRuns.found[]"
    job_id: str = key("jobId", "its Batch service job")
    job_name: str = key("jobName", "its name")
    status: str = key("status", "Batch's status")
    training_job_name: str | None = key("trainingJobName", "its SageMaker training job, once there is one")
    execution: str | None = key("execution", "the execution that submitted it")


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveRunCheck(StateRecord):
    """`$.liveRuns`: whether another run of the same job is still live (CheckNoLiveJob)."""

    SECTION: ClassVar[str] = "$.liveRuns"
    clear: bool = key("clear", "no other run of this team's job is queued or running")
    problems: tuple[Problem, ...] = key(
        "problems", "the refusal, naming the other execution", record=Problem, many=True
    )
    summary: str = key("summary", "the ResourceValidationFailed cause, or `no other run ...`")
    found: tuple[ServiceJobRecord, ...] = key("found", "the live jobs", record=ServiceJobRecord, many=True)
