"""Security and operations properties of template.yaml, read from the template itself."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from spotline_dev.template import load_template, resources_of_type

TEMPLATE = load_template()


def _statements(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if "Effect" in node and "Action" in node:
            yield node
        for value in node.values():
            yield from _statements(value)
    elif isinstance(node, list):
        for value in node:
            yield from _statements(value)


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return actions if isinstance(actions, list) else [actions]


def test_no_allow_statement_grants_wildcard_actions() -> None:
    allows = [s for s in _statements(TEMPLATE["Resources"]) if s["Effect"] == "Allow"]
    assert allows
    for statement in allows:
        for action in _actions(statement):
            assert "*" not in action, f"wildcard action {action!r} in {statement}"


# Actions AWS documents as supporting no resource-level permissions.
RESOURCE_WILDCARD_ONLY = {"batch:DescribeJobQueues"}


def test_only_actions_without_resource_level_permissions_use_a_wildcard_resource() -> None:
    for statement in _statements(TEMPLATE["Resources"]):
        if statement["Effect"] == "Allow" and statement.get("Resource") == "*":
            assert all(a.startswith("logs:") or a in RESOURCE_WILDCARD_ONLY for a in _actions(statement)), statement


def test_pass_role_only_to_sagemaker_and_only_training_roles() -> None:
    passes = [s for s in _statements(TEMPLATE["Resources"]) if "iam:PassRole" in _actions(s)]
    assert passes
    for statement in passes:
        assert _actions(statement) == ["iam:PassRole"]
        assert statement["Condition"]["StringEquals"]["iam:PassedToService"] == "sagemaker.amazonaws.com"
        assert "${TrainingRolePath}/*" in statement["Resource"]["Fn::Sub"]


@pytest.mark.parametrize("name", list(resources_of_type(TEMPLATE, "AWS::S3::Bucket")))
def test_buckets_are_versioned_encrypted_private_and_tls_only(name: str) -> None:
    props = TEMPLATE["Resources"][name]["Properties"]
    assert props["VersioningConfiguration"]["Status"] == "Enabled"
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert set(props["PublicAccessBlockConfiguration"].values()) == {True}
    policies = [
        p
        for p in resources_of_type(TEMPLATE, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": name}
    ]
    denies = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert any(s["Condition"]["Bool"]["aws:SecureTransport"] == "false" for s in denies)


def test_queues_are_encrypted() -> None:
    for props in (r["Properties"] for r in resources_of_type(TEMPLATE, "AWS::SQS::Queue").values()):
        assert props.get("SqsManagedSseEnabled") or props.get("KmsMasterKeyId")


def test_functions_run_python313_on_arm64_with_the_layer() -> None:
    globals_ = TEMPLATE["Globals"]["Function"]
    assert globals_["Runtime"] == "python3.13"
    assert globals_["Architectures"] == ["arm64"]
    assert {"Ref": "SpotlineLayer"} in globals_["Layers"]
    for name, function in resources_of_type(TEMPLATE, "AWS::Serverless::Function").items():
        props = function["Properties"]
        assert "Runtime" not in props and "Architectures" not in props, f"{name} overrides the Globals"


def test_event_rules_retry_and_dead_letter() -> None:
    rules = [
        event
        for function in resources_of_type(TEMPLATE, "AWS::Serverless::Function").values()
        for event in function["Properties"].get("Events", {}).values()
        if event["Type"] == "EventBridgeRule"
    ]
    assert rules
    for rule in rules:
        assert rule["Properties"]["RetryPolicy"]["MaximumRetryAttempts"] >= 1
        assert "Arn" in rule["Properties"]["DeadLetterConfig"]


def test_state_machines_are_standard_logged_and_traced() -> None:
    for machine in resources_of_type(TEMPLATE, "AWS::Serverless::StateMachine").values():
        props = machine["Properties"]
        assert props["Type"] == "STANDARD"
        assert props["Tracing"]["Enabled"] is True
        assert props["Logging"]["Level"] == "ALL"
        assert props["DefinitionUri"].startswith("statemachines/")


def test_dashboard_shows_what_on_call_asked_for() -> None:
    (dashboard,) = resources_of_type(TEMPLATE, "AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    for metric in (
        "JobsSucceeded",
        "JobsFailed",
        "DeadlinesMissed",
        "SpotInterruptions",
        "OnDemandFallbacks",
        "SpotSavingsPercent",
        "EstimatedCostUSD",
        "QueueWaitSeconds",
        "ManifestsRejected",
    ):
        assert f'MetricName=\\"{metric}\\"' in body, metric


def test_alarms_cover_failures_deadlines_rejections_and_the_dead_letter_queue() -> None:
    alarms = resources_of_type(TEMPLATE, "AWS::CloudWatch::Alarm").values()
    watched = set()
    for alarm in alarms:
        props = alarm["Properties"]
        assert props["AlarmActions"] == [{"Ref": "AlertTopic"}]
        assert props["TreatMissingData"] == "notBreaching"
        if "Metrics" in props:
            watched.add(props["Metrics"][0]["Expression"]["Fn::Sub"].split("(")[1].split(")")[0])
        else:
            watched.add(props["MetricName"])
    assert watched == {"JobsFailed", "DeadlinesMissed", "ManifestsRejected", "ApproximateNumberOfMessagesVisible"}


def test_every_event_rule_shares_the_dead_letter_queue_its_policy_allows() -> None:
    policy = TEMPLATE["Resources"]["EventsDeadLetterQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    allowed = {arn["Fn::GetAtt"][0] for arn in policy["Condition"]["ArnEquals"]["aws:SourceArn"]}
    rules = {
        f"{name}{event_id}"
        for name, function in resources_of_type(TEMPLATE, "AWS::Serverless::Function").items()
        for event_id, event in function["Properties"].get("Events", {}).items()
        if event["Type"] == "EventBridgeRule"
    }
    assert allowed == rules
