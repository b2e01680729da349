"""The stack's job queue uses quota management: the local stack creates the team's quota share
from the TeamPolicy as CloudFormation would (the TeamQuotaShares custom resource), and a manifest
runs to SUCCEEDED with every attempt in its team's share."""

from __future__ import annotations

from conftest import run_upload
from spotline_dev.harness.local.handles import LocalStack


def test_a_manifest_runs_to_succeeded_in_its_teams_quota_share(stack: LocalStack, example_manifest: bytes) -> None:
    batch, queue = stack.client("batch"), stack.physical["TrainingJobQueue"]
    (share,) = batch.list_quota_shares(jobQueue=queue)["quotaShares"]
    # The example's team declares no quotas: its share is the whole service environment, per type.
    assert (share["quotaShareName"], share["state"]) == ("search-ranking", "ENABLED")
    assert share["capacityLimits"] == [{"maxCapacity": 8, "capacityUnit": "ml.g5.2xlarge"}]
    assert stack.queue_capacities["TrainingJobQueue"] == {"ml.g5.2xlarge": 8}
    assert stack.physical["TeamQuotaShares"] == queue

    execution, _history = run_upload(stack, example_manifest)

    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    (job,) = stack.standin.jobs
    described = batch.describe_service_job(jobId=job.job_id)
    assert described["quotaShareName"] == "search-ranking"
    assert "shareIdentifier" not in described
    assert described["status"] == "SUCCEEDED"
