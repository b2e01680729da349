"""Console links that on-call engineers click from execution outputs, reports and alerts."""

from __future__ import annotations

from urllib.parse import quote


def _console(region: str, service: str, fragment: str) -> str:
    return f"https://{region}.console.aws.amazon.com/{service}/home?region={region}#{fragment}"


def execution(region: str, execution_arn: str) -> str:
    return _console(region, "states", f"/v2/executions/details/{execution_arn}")


def training_job(region: str, name: str) -> str:
    return _console(region, "sagemaker", f"/jobs/{name}")


def training_logs(region: str, name: str) -> str:
    group = quote(quote("/aws/sagemaker/TrainingJobs", safe=""), safe="").replace("%", "$")
    stream_filter = quote(quote(f"?logStreamNameFilter={name}", safe=""), safe="").replace("%", "$")
    return _console(region, "cloudwatch", f"logsV2:log-groups/log-group/{group}/log-events{stream_filter}")


def batch_job(region: str, job_id: str) -> str:
    return _console(region, "batch", f"jobs/detail/{job_id}")


def for_job(
    region: str, *, execution_arn: str | None, training_job_name: str | None, batch_job_id: str | None
) -> dict[str, str]:
    result: dict[str, str] = {}
    if execution_arn:
        result["execution"] = execution(region, execution_arn)
    if training_job_name:
        result["trainingJob"] = training_job(region, training_job_name)
        result["logs"] = training_logs(region, training_job_name)
    if batch_job_id:
        result["batchJob"] = batch_job(region, batch_job_id)
    return result
