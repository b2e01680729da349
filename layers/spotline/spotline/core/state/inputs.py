"""What an execution starts from (`$`, its input) and what a caught error leaves (`$.failure`) (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from spotline.core.state.fields import StateRecord, key


@dataclass(frozen=True, slots=True, kw_only=True)
class RunInput(StateRecord):
    """`$` as Intake starts a training run: the exact manifest version (the keys every later state keeps)."""

    SECTION: ClassVar[str] = "$"
    bucket: str = key("bucket", "the ingest bucket")
    manifest_key: str = key("key", "the manifest's key")
    version_id: str | None = key("versionId", "the exact manifest version")
    etag: str | None = key(
        "etag", "that version's ETag (a rejection report names it)", optional="an execution started by hand"
    )
    team: str | None = key(
        "team", "the team (from the key's prefix)", optional="an execution started by hand may name none"
    )
    received_at: str | None = key(
        "receivedAt", "when the upload's event came (RFC 3339)", optional="an execution started by hand"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringInput(StateRecord):
    """`$` as a scoring run starts: the manifest version, and the night's data."""

    SECTION: ClassVar[str] = "$"
    bucket: str = key("bucket", "the ingest bucket")
    manifest_key: str = key("key", "the scoring manifest's key")
    version_id: str | None = key("versionId", "its exact version")
    team: str | None = key("team", "the team")
    received_at: str = key("receivedAt", "when the manifest's upload (or the dataset's event) came")
    ready_at: str | None = key(
        "readyAt",
        "when the night's data was ready (RFC 3339; else `receivedAt`)",
        optional="a run started by hand from the manifest alone",
    )
    dataset: dict[str, Any] | None = key(
        "dataset",
        "the Dataset Ready event's dataset (`location`: where tonight's data is)",
        optional="a run started by hand from the manifest alone",
    )

    @property
    def ready(self) -> str:
        return self.ready_at or self.received_at

    @property
    def location(self) -> str | None:
        """Where the pipeline's Dataset Ready event says the night's data is (None: the registered input)."""
        value = (self.dataset or {}).get("location")
        return str(value) if value else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure(StateRecord):
    """`$.failure`: the error a Catch caught (Step Functions' own keys)."""

    SECTION: ClassVar[str] = "$.failure"
    error: str = key("Error", "the error's name")
    cause: str | None = key(
        "Cause", "its cause (a Lambda's: a JSON error message)", optional="Step Functions omits an empty cause"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CaughtError(Failure):
    """An error a Catch caught into a section of its own (not `$.failure`): Step Functions' keys as
    it wrote them (no `Cause` when it had none)."""

    cause: str | None = key("Cause", "its cause (a Lambda's: a JSON error message)", omit_none=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class DependencyTimeout(CaughtError):
    """`$.dependencyTimeout`: WaitForDatasets timed out (`States.Timeout`) before the datasets were ready."""

    SECTION: ClassVar[str] = "$.dependencyTimeout"


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanupFailure(CaughtError):
    """`$.cleanupFailure`: StopTrainingJobAfterError could not stop the run's training jobs."""

    SECTION: ClassVar[str] = "$.cleanupFailure"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnreadBills(CaughtError):
    """`$.billsNotRead`: RecordOutcome's tries to read the run's bills are spent (`BillsNotRead`)."""

    SECTION: ClassVar[str] = "$.billsNotRead"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnsettledBills(CaughtError):
    """`$.billingNotSettled`: RecordOutcome's tries to wait for the last bills are spent (`BillingNotSettled`)."""

    SECTION: ClassVar[str] = "$.billingNotSettled"
