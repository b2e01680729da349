"""ListServiceJobs over the stand-in's service jobs: the status filter, `filters` (API reference:
"Only one filter can be used at a time. When the filter is used, jobStatus is ignored with the
exception that SHARE_IDENTIFIER or QUOTA_SHARE_NAME and jobStatus can be used together"; newest
first), pages, and the summaries' capacityUsage (the payload's instances of its instance type).
The jobStatus value itself is checked before (stand_in: request_problems, the ServiceJobStatus enum)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from spotline_dev.harness.standin.base.clock import EPS, ms
from spotline_dev.harness.standin.base.http_answers import ApiError
from spotline_dev.harness.standin.base.page_tokens import offset_of, token_for
from spotline_dev.harness.standin.base.records import ServiceJob

# The filter names ListServiceJobs documents (its `filters` member; "Filter names are case sensitive").
FILTER_NAMES = ("JOB_NAME", "BEFORE_CREATED_AT", "AFTER_CREATED_AT", "SHARE_IDENTIFIER", "QUOTA_SHARE_NAME")
_CREATED = {"BEFORE_CREATED_AT", "AFTER_CREATED_AT"}
_WITH_STATUS = {"SHARE_IDENTIFIER", "QUOTA_SHARE_NAME"}  # the filters jobStatus still applies with

StatusOf = Callable[["ServiceJob", float], tuple[str, str | None]]
TimesOf = Callable[["ServiceJob", float], dict[str, int]]


def capacity_usage(job: ServiceJob) -> list[dict[str, Any]]:
    return [{"capacityUnit": job.instance_type, "quantity": float(job.instances)}]


def list_page(
    jobs: list[ServiceJob], body: dict[str, Any], now: float, status_of: StatusOf, times_of: TimesOf
) -> dict[str, Any]:
    """One page of ServiceJobSummary for `jobs` (already narrowed to the request's queue)."""
    filters = _checked_filters(body.get("filters") or [])
    size = _page_size(body.get("maxResults"))
    offset = _decode_token(body.get("nextToken"))
    names = {f.get("name") for f in filters}
    status_filter = (
        body.get("jobStatus") or "RUNNING"
    )  # "If you don't specify a status, only RUNNING jobs are returned."
    summaries = []
    for job in sorted(jobs, key=lambda j: (-j.created, j.job_id)):
        status, reason = status_of(job, now)
        if (not filters or names <= _WITH_STATUS) and status != status_filter:
            continue
        if not all(_filter_matches(f, job) for f in filters):
            continue
        summary: dict[str, Any] = {
            "jobId": job.job_id,
            "jobName": job.name,
            "jobArn": job.arn,
            "serviceJobType": "SAGEMAKER_TRAINING",
            "status": status,
            **times_of(job, now),
        }
        if job.terminated_at is not None and job.terminated_at <= now + EPS:  # "only present when the value is true"
            summary["isTerminated"] = True
        if reason is not None:
            summary["statusReason"] = reason
        for name in ("shareIdentifier", "quotaShareName"):
            if job.request.get(name):
                summary[name] = job.request[name]
        if job.quota_share is not None:  # quota management counts capacity per instance type
            summary["capacityUsage"] = capacity_usage(job)
        if job.attempts:
            summary["latestAttempt"] = {
                "serviceResourceId": {"name": "TrainingJobArn", "value": job.attempts[-1].batch_arn}
            }
        summaries.append(summary)
    page: dict[str, Any] = {"jobSummaryList": summaries[offset : offset + size]}
    if offset + size < len(summaries):
        page["nextToken"] = token_for(offset + size)
    return page


def _checked_filters(filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's filters, refused where ListServiceJobs documents a limit on them."""
    # AWS: batch ListServiceJobs.filters: "Only one filter can be used at a time."
    if len(filters) > 1:
        raise ApiError("ClientException", f"filters: only one filter can be used at a time, not {len(filters)}")
    for rule in filters:
        name = rule.get("name")
        # AWS: batch KeyValuesPair.name: "Filter names are case sensitive."
        # Stand-in: a name that is none of the five ListServiceJobs.filters documents (JOB_NAME,
        # BEFORE_CREATED_AT, AFTER_CREATED_AT, SHARE_IDENTIFIER, QUOTA_SHARE_NAME) is refused, not ignored.
        if name not in FILTER_NAMES:
            raise ApiError(
                "ClientException",
                f"filters: {name!r} is not a filter name of ListServiceJobs ({', '.join(FILTER_NAMES)})",
            )
        # AWS: batch ListServiceJobs.filters: "The value is a string representation of the number of
        # milliseconds since 00:00:00 UTC (midnight) on January 1, 1970."
        if name in _CREATED and not all(str(v).isdigit() for v in rule.get("values") or []):
            raise ApiError(
                "ClientException", f"filters: the values of {name} must be milliseconds since 1970-01-01T00:00:00Z"
            )
    return filters


def _page_size(max_results: int | None) -> int:
    if max_results is None:
        return 100  # "If this parameter isn't used, then ListServiceJobs returns up to 100 results"
    # AWS: batch ListServiceJobs.maxResults: "This value can be between 1 and 100."
    if not 1 <= max_results <= 100:
        raise ApiError("ClientException", f"maxResults: {max_results} is not between 1 and 100")
    return max_results


def _filter_matches(rule: dict[str, Any], job: ServiceJob) -> bool:
    name, values = rule.get("name"), [str(v) for v in rule.get("values") or []]
    if not values:
        return True
    value = values[0]
    if name == "JOB_NAME":
        if value.endswith("*"):
            return job.name.lower().startswith(value[:-1].lower())
        return job.name.lower() == value.lower()
    if name == "SHARE_IDENTIFIER":
        return job.request.get("shareIdentifier") in values
    if name == "QUOTA_SHARE_NAME":
        return job.request.get("quotaShareName") in values
    if name == "BEFORE_CREATED_AT":
        return ms(job.created) < int(value)
    return ms(job.created) > int(value)  # AFTER_CREATED_AT (_checked_filters let no other name through)


def _decode_token(token: str | None) -> int:
    offset = offset_of(token)
    # Stand-in: ListServiceJobs.nextToken is to be sent back as a previous page returned it ("Treat
    # this token as an opaque identifier"); what AWS answers for another value is not documented.
    if offset is None:
        raise ApiError("ClientException", "nextToken: not a token a previous ListServiceJobs page returned")
    return offset
