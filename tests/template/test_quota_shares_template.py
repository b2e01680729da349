"""The job queue's quota management in template.yaml, read from the template itself: a quota
share policy on a queue CloudFormation replaces, the TeamQuotaShares custom resource fed by the
team registry and the queue, least-privilege IAM scoped to the queue's quota shares, and
the functions that submit or admit jobs waiting for the shares."""

from __future__ import annotations

import fnmatch
import json
from typing import Any

from spotline.core.teams.quota_shares import MAX_CAPACITY_LIMITS, quota_share_name
from spotline_dev.harness.local.template import Resolver, function_environment, load_template, resources_of_type

TEMPLATE = load_template()
RESOURCES = TEMPLATE["Resources"]
QUEUE_ARN = "arn:aws:batch:us-east-1:123456789012:job-queue/spotline-training"
# A share's ARN as the Service Authorization Reference writes it: job-queue/<queue>/quota-share/<share>.
SHARE_ARN = f"{QUEUE_ARN}/quota-share/{quota_share_name('search-ranking')}"


def _statements(function: str) -> list[dict[str, Any]]:
    return [s for policy in RESOURCES[function]["Properties"]["Policies"] for s in policy["Statement"]]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _resolved(value: Any) -> Any:
    """The template's value with the queue's ARN for Ref TrainingJobQueue (its Ref is the ARN)."""
    pseudo = {"AWS::Partition": "aws", "AWS::AccountId": "123456789012", "AWS::StackName": "spotline"}
    resolver = Resolver(
        TEMPLATE, lambda logical, attribute: QUEUE_ARN if logical == "TrainingJobQueue" else logical, pseudo
    )
    return resolver.resolve(value)


def test_the_queue_uses_a_quota_management_policy_on_a_queue_cloudformation_replaces() -> None:
    queue = RESOURCES["TrainingJobQueue"]["Properties"]
    policy = RESOURCES[queue["SchedulingPolicyArn"]["Ref"]]
    assert policy["Type"] == "AWS::Batch::SchedulingPolicy"
    assert policy["Properties"] == {"QuotaSharePolicy": {"IdleResourceAssignmentStrategy": "FIFO"}}
    # A scheduling policy's type cannot change: no fair-share policy is left, and the queue has a name
    # (create-only), so an older stack's fair-share queue is replaced rather than updated.
    assert not [
        p
        for p in resources_of_type(TEMPLATE, "AWS::Batch::SchedulingPolicy").values()
        if "FairsharePolicy" in p["Properties"]
    ]
    assert queue["JobQueueName"] == {"Fn::Sub": "${AWS::StackName}-training"}
    assert queue["JobQueueType"] == "SAGEMAKER_TRAINING"


def test_the_custom_resource_gets_the_team_registry_the_queue_and_the_environments_capacity() -> None:
    (name,) = [n for n, r in RESOURCES.items() if r["Type"].startswith("Custom::")]
    props = RESOURCES[name]["Properties"]
    assert props["ServiceToken"] == {"Fn::GetAtt": ["SyncQuotaSharesFunction", "Arn"]}
    assert props["JobQueue"] == {"Ref": "TrainingJobQueue"}
    # The same registry ValidateResources admits teams by and ApplyTeamChange writes.
    assert props["TeamRegistryBucket"] == {"Ref": "TeamRegistryBucket"}
    for function in ("ValidateResourcesFunction", "ApplyTeamChangeFunction"):
        assert function_environment(TEMPLATE, function)["TEAM_REGISTRY_BUCKET"] == props["TeamRegistryBucket"]
    # The environment's limits and the shares' come from one parameter, one limit per instance type.
    assert props["Capacity"] == {"Ref": "TrainingCapacity"}
    limits = RESOURCES["TrainingServiceEnvironment"]["Properties"]["CapacityLimits"]
    assert len(limits) == MAX_CAPACITY_LIMITS
    assert "TrainingCapacity" in json.dumps(limits) and "NUM_INSTANCES" not in json.dumps(limits)
    # A lost answer fails the stack operation within minutes; the function answers before that.
    function = RESOURCES["SyncQuotaSharesFunction"]["Properties"]
    assert function["Timeout"] < int(props["ServiceTimeout"]) <= 3600
    assert function["CodeUri"] == "functions/sync_quota_shares/"
    # It runs during the stack operation: its log group first (else Lambda creates the group itself).
    assert RESOURCES[name]["DependsOn"] == "SyncQuotaSharesLogGroup"
    assert RESOURCES["SyncQuotaSharesLogGroup"]["Properties"]["LogGroupName"] == {
        "Fn::Sub": "/aws/lambda/${SyncQuotaSharesFunction}"
    }


def test_the_share_syncer_may_touch_only_this_queues_quota_shares_and_read_the_registrys_index() -> None:
    statements = _statements("SyncQuotaSharesFunction")
    registry = [s for s in statements if "TeamRegistryBucket" in json.dumps(s["Resource"])]
    assert {a for s in registry for a in _list(s["Action"])} == {"s3:GetObject", "s3:ListBucket"}
    assert {json.dumps(s["Resource"]) for s in registry} == {
        json.dumps({"Fn::Sub": "${TeamRegistryBucket.Arn}/index.json"}),
        json.dumps({"Fn::GetAtt": ["TeamRegistryBucket", "Arn"]}),
    }
    statements = [s for s in statements if s not in registry]
    granted = {action for s in statements for action in _list(s["Action"])}
    assert granted == {
        "batch:CreateQuotaShare",
        "batch:ListQuotaShares",
        "batch:UpdateQuotaShare",
        "batch:DeleteQuotaShare",
        "batch:TagResource",
    }
    for statement in statements:
        assert statement["Effect"] == "Allow"
        for resource in _list(_resolved(statement["Resource"])):
            assert resource in (QUEUE_ARN, f"{QUEUE_ARN}/quota-share/*"), resource
    on_shares = [s for s in statements if f"{QUEUE_ARN}/quota-share/*" in _list(_resolved(s["Resource"]))]
    assert {a for s in on_shares for a in _list(s["Action"])} == granted - {"batch:ListQuotaShares"}
    assert all(
        fnmatch.fnmatchcase(SHARE_ARN, r)
        for s in on_shares
        for r in _list(_resolved(s["Resource"]))
        if "quota-share" in r
    )
    assert not fnmatch.fnmatchcase(
        SHARE_ARN.replace("spotline-training", "another-queue"), f"{QUEUE_ARN}/quota-share/*"
    )


def test_submissions_may_name_the_queues_quota_shares() -> None:
    (submit,) = [s for s in _statements("SubmitTrainingJobFunction") if "batch:SubmitServiceJob" in _list(s["Action"])]
    assert _list(submit["Action"]) == ["batch:SubmitServiceJob"]
    resources = _list(_resolved(submit["Resource"]))
    # This stack's queue and its namesakes in peer regions (an attempt placed there), with their shares.
    assert any(fnmatch.fnmatchcase(QUEUE_ARN, r) for r in resources)
    assert any(fnmatch.fnmatchcase(SHARE_ARN, r) for r in resources)
    assert any(fnmatch.fnmatchcase(QUEUE_ARN.replace("us-east-1", "us-west-2"), r) for r in resources)


def test_jobs_are_admitted_and_submitted_only_once_the_shares_exist() -> None:
    for function in ("ValidateResourcesFunction", "SubmitTrainingJobFunction"):
        assert RESOURCES[function]["DependsOn"] == "TeamQuotaShares", function
