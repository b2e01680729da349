"""ListTrainingJobs over the stand-in's training jobs (the ones Batch started), so that
`aws sagemaker list-training-jobs` against `spotline local` shows them: its filters, sort and pages,
as the SageMaker API reference describes them. The enum and range of each member are checked
before (stand_in: request_problems)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from spotline_dev.harness.standin.base.http_answers import ApiError
from spotline_dev.harness.standin.base.page_tokens import offset_of, token_for
from spotline_dev.harness.standin.base.records import TrainingJob

DEFAULT_PAGE = 10
"""Stand-in: the API reference gives MaxResults ("The maximum number of training jobs to return in
the response", 1 to 100) no default; SageMaker's list operations answer 10 at a time."""

Summary = dict[str, Any]
Describe = Callable[[TrainingJob], dict[str, Any]]


def list_training_jobs(jobs: Iterable[TrainingJob], body: dict[str, Any], describe: Describe) -> dict[str, Any]:
    """One page of TrainingJobSummary."""
    described = [describe(job) for job in jobs]
    # AWS: sagemaker ListTrainingJobs: "When StatusEquals and MaxResults are set at the same time, the
    # MaxResults number of training jobs are first retrieved ignoring the StatusEquals parameter and then
    # they are filtered by the StatusEquals parameter [...] (sorted according to the creation time, from
    # the most current to the oldest)."
    if body.get("StatusEquals") and body.get("MaxResults") and not body.get("NextToken"):
        newest = sorted(described, key=lambda d: d["CreationTime"], reverse=True)[: int(body["MaxResults"])]
        kept = [d for d in newest if _matches(d, body)]
        return {"TrainingJobSummaries": [_summary(d) for d in _sorted(kept, body)]}
    kept = _sorted([d for d in described if _matches(d, body)], body)
    offset = _offset(body.get("NextToken"))
    size = int(body.get("MaxResults") or DEFAULT_PAGE)
    page: dict[str, Any] = {"TrainingJobSummaries": [_summary(d) for d in kept[offset : offset + size]]}
    if offset + size < len(kept):
        # AWS: "If the response is truncated, SageMaker returns this token. To retrieve the next set of
        # training jobs, use it in the subsequent request."
        page["NextToken"] = token_for(offset + size)
    return page


def _matches(described: dict[str, Any], body: dict[str, Any]) -> bool:
    """The request's filters, as the API reference states each: "only training jobs created after
    the specified time", "modified before", "whose name contains the specified string", "with a
    specific status", "the training plan to filter training jobs by"."""
    created, modified = float(described["CreationTime"]), float(described["LastModifiedTime"])
    bounds = (
        ("CreationTimeAfter", created, 1),
        ("CreationTimeBefore", created, -1),
        ("LastModifiedTimeAfter", modified, 1),
        ("LastModifiedTimeBefore", modified, -1),
    )
    for member, value, side in bounds:
        if body.get(member) is not None and (value - _moment(body[member])) * side <= 0:
            return False
    if body.get("NameContains") and str(body["NameContains"]) not in described["TrainingJobName"]:
        return False
    if body.get("StatusEquals") and described["TrainingJobStatus"] != body["StatusEquals"]:
        return False
    plan = (described.get("ResourceConfig") or {}).get("TrainingPlanArn")
    if body.get("TrainingPlanArnEquals") and plan != body["TrainingPlanArnEquals"]:
        return False
    # No stand-in job keeps a warm pool (SageMaker keeps none on spot): a warm pool status matches none.
    return not body.get("WarmPoolStatusEquals")


def _sorted(described: list[dict[str, Any]], body: dict[str, Any]) -> list[dict[str, Any]]:
    # AWS: SortBy "The field to sort results by. The default is CreationTime."; SortOrder "The sort order
    # for results. The default is Ascending."
    key = {"Name": "TrainingJobName", "CreationTime": "CreationTime", "Status": "TrainingJobStatus"}
    field = key[str(body.get("SortBy") or "CreationTime")]
    return sorted(described, key=lambda d: d[field], reverse=body.get("SortOrder") == "Descending")


def _summary(described: dict[str, Any]) -> Summary:
    members = ("TrainingJobName", "TrainingJobArn", "CreationTime", "TrainingEndTime", "LastModifiedTime")
    summary = {key: described[key] for key in members if key in described}
    summary |= {"TrainingJobStatus": described["TrainingJobStatus"], "SecondaryStatus": described["SecondaryStatus"]}
    plan = (described.get("ResourceConfig") or {}).get("TrainingPlanArn")
    return summary | ({"TrainingPlanArn": plan} if plan else {})


def _moment(value: Any) -> float:
    """A timestamp member as the wire carries it (epoch seconds) or botocore's datetime."""
    return value.timestamp() if isinstance(value, datetime) else float(value)


def _offset(token: str | None) -> int:
    offset = offset_of(token)
    # Stand-in: NextToken is to be sent back as a previous page returned it; what SageMaker answers for
    # another value is not documented: ValidationException, its code for input it refuses.
    if offset is None:
        raise ApiError("ValidationException", "NextToken: not a token a previous ListTrainingJobs page returned")
    return offset
