"""SubmitServiceJob for one attempt, once, however often the call is repeated.

SubmitTrainingJob derives the clientToken, the job name and the tags from the execution and the
attempt (`spotline.core.training.training_request`), so a retried invocation (a Lambda timeout, a killed
runtime, a lost response) sends the same request again. Batch does not hand the earlier job back
for it. The AWS Batch API reference, SubmitServiceJob, clientToken: "If this parameter is
specified and two submit requests with identical payloads and clientTokens are received, these
requests are considered the same request and the second request is rejected." The rejection is
the operation's ClientException (the only client error the reference lists for it).

So a rejected submission looks for the job it created: ListServiceJobs on the queue with a
JOB_NAME filter (with a filter Batch returns jobs of any status), the name compared exactly, then
DescribeServiceJob for the tags (summaries carry none): the job is the attempt's when every
`spotline:` tag of the request (team, job, execution, attempt, capacity) is on it. Only when no
such job exists does the rejection stand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spotline.aws.common.clients import client, error_code
from spotline.aws.common.observability import logger
from spotline.aws.training.service_jobs import summaries
from spotline.core.training.training_request import TAG_PREFIX


@dataclass(frozen=True, slots=True)
class Submitted:
    job_id: str
    job_arn: str | None
    job_name: str
    found: bool  # an earlier invocation of the same attempt had submitted it


def submit_once(request: dict[str, Any]) -> Submitted:
    """Submit the job, or find the one an earlier try of the same request submitted."""
    try:
        response = client("batch").submit_service_job(**request)
    except Exception as exc:
        if error_code(exc) != "ClientException" or not request.get("clientToken"):
            raise
        earlier = find_submitted(request)
        if earlier is None:
            raise
        logger.info(
            "SubmitServiceJob rejected the repeated request; using the job it created",
            extra={"jobId": earlier.job_id, "jobName": earlier.job_name, "rejection": str(exc)},
        )
        return earlier
    return Submitted(response["jobId"], response.get("jobArn"), response["jobName"], found=False)


def find_submitted(request: dict[str, Any]) -> Submitted | None:
    """The service job on `request`'s queue with its name and every one of its `spotline:` tags."""
    wanted = {k: v for k, v in (request.get("tags") or {}).items() if k.startswith(TAG_PREFIX)}
    name = request["jobName"]
    batch = client("batch")
    for summary in summaries(request["jobQueue"], filters=[{"name": "JOB_NAME", "values": [name]}]):
        if summary.get("jobName") != name:
            continue  # the filter ignores case; Spotline's names are exact
        tags = batch.describe_service_job(jobId=summary["jobId"]).get("tags") or {}
        if all(tags.get(k) == v for k, v in wanted.items()):
            return Submitted(summary["jobId"], summary.get("jobArn"), name, found=True)
    return None
