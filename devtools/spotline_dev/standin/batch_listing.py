"""ListServiceJobs over the stand-in's service jobs: the status filter, `filters` (API reference:
"Only one filter can be used at a time. When the filter is used, jobStatus is ignored with the
exception that SHARE_IDENTIFIER or QUOTA_SHARE_NAME and jobStatus can be used together"; newest
first), pages, and the summaries' capacityUsage (the payload's instances of its instance type)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from spotline_dev.standin.clock import ms
from spotline_dev.standin.http_answers import ApiError

if TYPE_CHECKING:
    from spotline_dev.standin.batch_jobs import ServiceJob

BATCH_STATUSES = {"SUBMITTED", "PENDING", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING", "SUCCEEDED", "FAILED"}
_WITH_STATUS = {"SHARE_IDENTIFIER", "QUOTA_SHARE_NAME"}  # the filters jobStatus still applies with

StatusOf = Callable[["ServiceJob", float], tuple[str, str | None]]
TimesOf = Callable[["ServiceJob", float], dict[str, int]]


def capacity_usage(job: ServiceJob) -> list[dict[str, Any]]:
    return [{"capacityUnit": job.instance_type, "quantity": float(job.instances)}]


def list_page(
    jobs: list[ServiceJob], body: dict[str, Any], now: float, status_of: StatusOf, times_of: TimesOf
) -> dict[str, Any]:
    """One page of ServiceJobSummary for `jobs` (already narrowed to the request's queue)."""
    filters = body.get("filters") or []
    names = {f.get("name") for f in filters}
    status_filter = body.get("jobStatus") or "RUNNING"
    if status_filter not in BATCH_STATUSES:
        raise ApiError("ClientException", f"jobStatus {status_filter} is not valid")
    summaries = []
    for job in sorted(jobs, key=lambda j: (-j.created, j.job_id)):
        status, reason = status_of(job, now)
        if (not filters or names <= _WITH_STATUS) and status != status_filter:
            continue
        if not all(_filter_matches(f, job, status) for f in filters):
            continue
        summary: dict[str, Any] = {
            "jobId": job.job_id,
            "jobName": job.name,
            "jobArn": job.arn,
            "serviceJobType": "SAGEMAKER_TRAINING",
            "status": status,
            "isTerminated": job.terminate_reason is not None,
            **times_of(job, now),
        }
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
    size = int(body.get("maxResults") or 100)
    if not 1 <= size <= 100:
        raise ApiError("ClientException", "maxResults must be between 1 and 100")
    offset = _decode_token(body.get("nextToken"))
    page: dict[str, Any] = {"jobSummaryList": summaries[offset : offset + size]}
    if offset + size < len(summaries):
        page["nextToken"] = base64.urlsafe_b64encode(json.dumps({"offset": offset + size}).encode()).decode()
    return page


def _filter_matches(rule: dict[str, Any], job: ServiceJob, status: str) -> bool:
    name, values = rule.get("name"), [str(v) for v in rule.get("values") or []]
    if not values:
        return True
    value = values[0]
    if name == "JOB_NAME":
        if value.endswith("*"):
            return job.name.lower().startswith(value[:-1].lower())
        return job.name.lower() == value.lower()
    if name == "JOB_STATUS":
        return status in values
    if name == "SHARE_IDENTIFIER":
        return job.request.get("shareIdentifier") in values
    if name == "QUOTA_SHARE_NAME":
        return job.request.get("quotaShareName") in values
    if name == "BEFORE_CREATED_AT":
        return ms(job.created) < int(value)
    if name == "AFTER_CREATED_AT":
        return ms(job.created) > int(value)
    raise ApiError("ClientException", f"Filter {name} is not supported")


def _decode_token(token: str | None) -> int:
    if not token:
        return 0
    try:
        return int(json.loads(base64.urlsafe_b64decode(token.encode()))["offset"])
    except (ValueError, KeyError, TypeError) as error:
        raise ApiError("ClientException", "nextToken is not valid") from error
