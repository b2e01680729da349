"""Error types shared by the core, the handlers and the CLI."""

from __future__ import annotations

from dataclasses import dataclass

DOCUMENT = "(manifest)"
STACK_PATH = "(stack)"  # a problem of the stack's settings, not of a manifest field
"""Path used for problems with the document as a whole (size, encoding, syntax)."""


@dataclass(frozen=True, slots=True)
class ManifestError:
    """One problem in a manifest: the field path (`spec.inputs[0].s3Uri`) and what is wrong."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SpotlineError(Exception):
    """Base class. The class name is the error name Step Functions sees (Lambda `errorType`)."""


class ManifestInvalid(SpotlineError):
    def __init__(self, errors: list[ManifestError]) -> None:
        self.errors = errors
        super().__init__(summarize(errors))


class ManifestUnreadable(SpotlineError):
    """S3 refused to hand over a manifest that may well exist (403 AccessDenied: a bucket policy,
    an object's KMS key, the function's role). Not "missing": with s3:ListBucket granted, S3
    answers 404 for a missing object, so a 403 is a real denial for the platform team."""


class BillsNotRead(SpotlineError):
    """RecordOutcome could not read the run's bills (DescribeTrainingJob, DescribeServiceJob or the
    checkpoint's progress still failing past botocore's retries). The state machine tries again,
    then records the run once more with `$.billsNotRead` set: its cost is then unknown (None, with
    the reason), never $0.00 or the last status check's figure."""


def summarize(errors: list[ManifestError], limit: int = 20) -> str:
    """One human line per error, capped so a Step Functions cause stays readable."""
    lines = [str(e) for e in errors[:limit]]
    if len(errors) > limit:
        lines.append(f"... and {len(errors) - limit} more (see the report)")
    return f"{len(errors)} error(s): " + "; ".join(lines)
