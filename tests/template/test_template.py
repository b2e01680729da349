"""Security and operations properties of template.yaml, read from the template itself."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from template.bucket_policies import S3Request, bucket_value, denied

from spotline.aws.training import training_settings
from spotline.core.common.naming import report_key
from spotline.core.training.training_request import DEFAULT_SETTINGS
from spotline_dev.harness.local.template import function_environment, load_template, resources_of_type

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
RESOURCE_WILDCARD_ONLY = {
    "batch:DescribeJobQueues",
    "batch:DescribeServiceJob",
    "batch:ListServiceJobs",
    "sagemaker:ListTrainingPlans",  # no resource type in AWS's IAM action data (cfn-lint's Policies.json)
    "fsx:DescribeFileSystems",
    "ec2:DescribeSubnets",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeInstanceTypes",  # whether a type a job asks EFA of has it (ValidateResources)
    "sagemaker:ListTransformJobs",
    "states:SendTaskSuccess",  # a task token names no resource: a state machine ARN never matches
    "ec2:DescribeNetworkInterfaceAttribute",  # EFS DescribeMountTargetSecurityGroups' dependent action
    "pricing:GetProducts",  # the Price List API names no resource (RecordOutcome's prices)
}


def test_wildcard_only_actions_have_no_resource_type_in_aws_action_data() -> None:
    """RESOURCE_WILDCARD_ONLY is checked against AWS's own IAM action data, not taken on trust."""
    import cfnlint

    data = json.loads((Path(cfnlint.__file__).parent / "data" / "AdditionalSpecs" / "Policies.json").read_text())
    for action in RESOURCE_WILDCARD_ONLY:
        service, name = action.split(":")
        assert not data[service]["Actions"][name.lower()].get("Resources"), action


def _identity_statements() -> Iterator[dict[str, Any]]:
    """Statements of the functions' and state machines' own policies (resource policies name a Principal)."""
    return (s for s in _statements(TEMPLATE["Resources"]) if "Principal" not in s)


def test_only_actions_without_resource_level_permissions_use_a_wildcard_resource() -> None:
    for statement in _identity_statements():
        if statement["Effect"] == "Allow" and statement.get("Resource") == "*":
            assert all(a.startswith("logs:") or a in RESOURCE_WILDCARD_ONLY for a in _actions(statement)), statement


def test_pass_role_only_to_sagemaker_and_only_training_roles() -> None:
    passes = [s for s in _statements(TEMPLATE["Resources"]) if "iam:PassRole" in _actions(s)]
    assert passes
    for statement in passes:
        assert _actions(statement) == ["iam:PassRole"]
        assert statement["Condition"]["StringEquals"]["iam:PassedToService"] == "sagemaker.amazonaws.com"
        assert "${TrainingRolePath}/*" in statement["Resource"]["Fn::Sub"]
        # Only roles a team owns: a role without the spotline:team tag cannot be passed at all.
        assert statement["Condition"]["Null"] == {"aws:ResourceTag/spotline:team": "false"}


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


@pytest.mark.parametrize("name", list(resources_of_type(TEMPLATE, "AWS::S3::Bucket")))
def test_buckets_are_kept_when_the_stack_is_deleted_or_the_bucket_replaced(name: str) -> None:
    # CloudFormation deletes only an empty bucket: a versioned bucket with manifests would fail the
    # stack's deletion. Retained, it keeps the manifests; docs/platform/deploying.md says how to delete it.
    resource = TEMPLATE["Resources"][name]
    assert (resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy")) == ("Retain", "Retain")


def test_nothing_else_is_kept_or_blocks_the_stacks_deletion() -> None:
    # Besides the buckets, only SyncQuotaShares' log is kept: it says what a stack Delete could not
    # clean up (the custom resource answers SUCCESS regardless). Nothing is protected from deletion.
    kept = {name for name, r in TEMPLATE["Resources"].items() if r.get("DeletionPolicy", "Delete") != "Delete"}
    assert kept == set(resources_of_type(TEMPLATE, "AWS::S3::Bucket")) | {"SyncQuotaSharesLogGroup"}
    assert TEMPLATE["Resources"]["SyncQuotaSharesLogGroup"]["UpdateReplacePolicy"] == "Retain"
    for name, resource in TEMPLATE["Resources"].items():
        assert not resource.get("Properties", {}).get("DeletionProtectionEnabled"), name


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


RULE_EVENTS = {"EventBridgeRule", "Schedule"}  # SAM event types that become an AWS::Events::Rule


def test_event_rules_retry_and_dead_letter() -> None:
    rules = [
        event
        for function in resources_of_type(TEMPLATE, "AWS::Serverless::Function").values()
        for event in function["Properties"].get("Events", {}).values()
        if event["Type"] in RULE_EVENTS
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
        # Transitions and errors only: inputs and outputs (the manifest) stay in the execution history.
        assert props["Logging"]["IncludeExecutionData"] is False
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
        "SavingsPercent",
        "EstimatedCostUSD",
        "QueueWaitSeconds",
        "ManifestsRejected",
        "ScoringWindowMarginSeconds",
        "ScoringDurationSeconds",
        "ScoringRecordsPerSecond",
    ):
        assert f'MetricName=\\"{metric}\\"' in body, metric


def test_alarms_cover_failures_deadlines_rejections_and_the_dead_letter_queue() -> None:
    alarms = resources_of_type(TEMPLATE, "AWS::CloudWatch::Alarm").values()
    watched = set()
    for alarm in alarms:
        props = alarm["Properties"]
        assert props["AlarmActions"] == [{"Ref": "AlertTopic"}]
        assert props["TreatMissingData"] == "notBreaching"
        if "Metrics" not in props:
            watched.add(props["MetricName"])
        elif "MetricStat" in props["Metrics"][0]:  # metric math over the AWS/States metrics
            watched |= {m["MetricStat"]["Metric"]["MetricName"] for m in props["Metrics"] if "MetricStat" in m}
        else:  # a Metrics Insights query
            watched.add(props["Metrics"][0]["Expression"]["Fn::Sub"].split("(")[1].split(")")[0])
    assert watched == {
        "JobsFailed",
        "DeadlinesMissed",
        "ManifestsRejected",
        "ApproximateNumberOfMessagesVisible",
        "ExecutionsFailed",
        "ExecutionsTimedOut",
        "ScoringWindowMarginSeconds",
    }


def test_the_scoring_trend_alarm_projects_the_stack_wide_margin_one_night_ahead() -> None:
    """It watches the metric RecordScoringRun publishes with the service dimension only (the
    functions' POWERTOOLS_SERVICE_NAME), daily, and fires on 2 of 3 projections under the threshold."""
    from spotline.aws.scoring.scoring_steps import MARGIN_METRIC

    props = TEMPLATE["Resources"]["ScoringWindowTrendAlarm"]["Properties"]
    margin, projected = props["Metrics"]
    service = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
    assert margin["MetricStat"]["Metric"]["MetricName"] == MARGIN_METRIC
    assert margin["MetricStat"]["Metric"]["Dimensions"] == [{"Name": "service", "Value": service}]
    assert (margin["MetricStat"]["Period"], margin["MetricStat"]["Stat"]) == (86400, "Minimum")
    assert (projected["Expression"], projected["ReturnData"]) == ("margin + DIFF(margin)", True)
    assert (props["ComparisonOperator"], props["Threshold"]) == (
        "LessThanThreshold",
        {"Ref": "ScoringMarginAlarmSeconds"},
    )
    assert (props["EvaluationPeriods"], props["DatapointsToAlarm"]) == (3, 2)


def test_every_event_rule_shares_the_dead_letter_queue_its_policy_allows() -> None:
    policy = TEMPLATE["Resources"]["EventsDeadLetterQueuePolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    allowed = {arn["Fn::GetAtt"][0] for arn in policy["Condition"]["ArnEquals"]["aws:SourceArn"]}
    rules = {
        f"{name}{event_id}"
        for name, function in resources_of_type(TEMPLATE, "AWS::Serverless::Function").items()
        for event_id, event in function["Properties"].get("Events", {}).items()
        if event["Type"] in RULE_EVENTS
    }
    assert allowed == rules


# --- Tighter IAM: team data, progress.json, service jobs ------------------------------------


def _with_action(action: str) -> list[dict[str, Any]]:
    return [s for s in _identity_statements() if s["Effect"] == "Allow" and action in _actions(s)]


def _resources(statement: dict[str, Any]) -> list[Any]:
    resources = statement["Resource"]
    return resources if isinstance(resources, list) else [resources]


INGEST_BUCKET_ARN = {"Fn::GetAtt": ["IngestBucket", "Arn"]}
REGISTRY_BUCKET_ARN = {"Fn::GetAtt": ["TeamRegistryBucket", "Arn"]}


def test_team_data_is_listed_and_read_only_in_the_patterns_buckets_of_this_account() -> None:
    listings = [
        s for s in _with_action("s3:ListBucket") if s["Resource"] not in (INGEST_BUCKET_ARN, REGISTRY_BUCKET_ARN)
    ]
    statements = listings + [
        s for s in _with_action("s3:GetObject") if any("progress.json" in str(r) for r in _resources(s))
    ]
    # the listings (ValidateResources, SubmitTrainingJob's and CheckTrainingStatus's for a checkpoint's
    # size, PlanScoringRun's of a night's input, RecordOutcome's so that no progress.json reads 404),
    # and progress.json for CheckTrainingStatus and RecordOutcome
    assert len(statements) == 7
    for statement in statements:
        assert statement["Condition"] == {"StringEquals": {"aws:ResourceAccount": {"Ref": "AWS::AccountId"}}}
        for resource in _resources(statement):
            assert resource["Fn::Sub"].startswith("arn:${AWS::Partition}:s3:::${TrainingDataBucketPattern}"), resource
    for progress in (s for s in statements if "s3:GetObject" in _actions(s)):
        keys = {r["Fn::Sub"].split("${TrainingDataBucketPattern}/", 1)[1] for r in _resources(progress)}
        assert keys == {"progress.json", "*/progress.json"}


def test_only_a_checkpoint_copy_and_a_scoring_runs_shard_manifests_write_team_data_in_the_patterns_buckets() -> None:
    writes = _with_action("s3:PutObject")
    team = [s for s in writes if "TrainingDataBucketPattern" in str(s["Resource"])]
    assert team == _function_statements("SubmitTrainingJobFunction", "s3:PutObject") + _function_statements(
        "PlanScoringRunFunction", "s3:PutObject"
    )
    for copy in team:
        assert _actions(copy) == ["s3:GetObject", "s3:PutObject"]
        assert copy["Condition"] == {"StringEquals": {"aws:ResourceAccount": {"Ref": "AWS::AccountId"}}}
        assert copy["Resource"] == {"Fn::Sub": "arn:${AWS::Partition}:s3:::${TrainingDataBucketPattern}/*"}


def test_only_the_manifest_readers_may_list_the_ingest_bucket_and_nothing_narrows_it() -> None:
    """S3 answers HeadObject/GetObject of a missing manifest with 404 only to a caller that has
    s3:ListBucket on the bucket (403 otherwise): the three functions that read manifests have it,
    on the bucket itself, without an s3:prefix condition (their requests carry no prefix)."""
    functions = resources_of_type(TEMPLATE, "AWS::Serverless::Function")
    listing = {
        name: [s for s in _statements(f["Properties"].get("Policies", [])) if "s3:ListBucket" in _actions(s)]
        for name, f in functions.items()
    }
    on_ingest = {
        name: statements
        for name, statements in listing.items()
        if any(INGEST_BUCKET_ARN in _resources(s) or "IngestBucket" in str(s["Resource"]) for s in statements)
    }
    # DatasetGate: whether a registered scoring manifest was deleted (HeadObject answers 404, not 403).
    assert set(on_ingest) == {"IntakeFunction", "LoadManifestFunction", "DatasetGateFunction"}
    for name, statements in on_ingest.items():
        (statement,) = statements
        assert (_actions(statement), statement["Resource"]) == (["s3:ListBucket"], INGEST_BUCKET_ARN), name
        assert "Condition" not in statement, name
    # Nothing else in the template (state machines included) lists the ingest bucket.
    others = [
        s
        for s in _identity_statements()
        if s["Effect"] == "Allow"
        and any(a in ("s3:ListBucket", "s3:ListBucketVersions") for a in _actions(s))
        and "IngestBucket" in str(s["Resource"])
    ]
    assert len(others) == len(on_ingest)
    assert not _denied(S3Request("s3:ListBucket", None, None))  # the bucket policy leaves it to the untagged roles


def _function_statements(name: str, action: str) -> list[dict[str, Any]]:
    policies = TEMPLATE["Resources"][name]["Properties"].get("Policies", [])
    return [s for s in _statements(policies) if s["Effect"] == "Allow" and action in _actions(s)]


def test_only_spotlines_service_jobs_can_be_terminated_but_by_the_reconciler() -> None:
    statements = _with_action("batch:TerminateServiceJob")
    assert len(statements) == 3  # StopSpotJob, StopExecutionJobs, ReconcileTrainingJobs
    (sweeping,) = _function_statements("ReconcileTrainingJobsFunction", "batch:TerminateServiceJob")
    for statement in statements:
        # Here or in a peer region an attempt was placed in (PeerRegions).
        assert statement["Resource"] == {"Fn::Sub": "arn:${AWS::Partition}:batch:*:${AWS::AccountId}:service-job/*"}
        if statement is sweeping:
            # A job put on the queue by anyone but Spotline carries none of its tags and must still
            # be stopped; IAM has no condition to keep this to the queue (the code lists JOB_QUEUE).
            assert "Condition" not in statement
            continue
        # The tags spotline.core.training.training_request puts on every service job it submits.
        assert statement["Condition"] == {
            "Null": {"aws:ResourceTag/spotline:team": "false", "aws:ResourceTag/spotline:execution": "false"}
        }


def test_the_reconciler_reads_the_history_of_this_state_machines_executions_only() -> None:
    """To tell Spotline's job from one with copied tags: the execution's state lists its jobs."""
    (history,) = _with_action("states:GetExecutionHistory")
    assert history in _function_statements("ReconcileTrainingJobsFunction", "states:GetExecutionHistory")
    assert history["Resource"]["Fn::Sub"].endswith(":execution:${TrainingLifecycle.Name}:*")


def test_spotlines_own_roles_carry_no_team_tag() -> None:
    """The bucket policy tells teams from Spotline by the spotline:team principal tag (SAM puts a
    function's Tags on its role too)."""
    tagged = [TEMPLATE["Globals"]["Function"].get("Tags", {})] + [
        f["Properties"].get("Tags", {}) for f in resources_of_type(TEMPLATE, "AWS::Serverless::Function").values()
    ]
    assert not [tags for tags in tagged if "spotline:team" in tags]


# --- The stack's training settings ---------------------------------------------------------

TRAINING_ENVIRONMENT = training_settings.PARAMETERS


def test_training_settings_flow_from_parameters_to_submit_training_job() -> None:
    variables = function_environment(TEMPLATE, "SubmitTrainingJobFunction")
    for variable, parameter in TRAINING_ENVIRONMENT.items():
        assert variables[variable] == {"Ref": parameter}
    defaults = {v: str(TEMPLATE["Parameters"][p]["Default"]) for v, p in TRAINING_ENVIRONMENT.items()}
    assert training_settings.from_environment(defaults) == DEFAULT_SETTINGS  # today's request, exactly


@pytest.mark.parametrize("function", ["SubmitTrainingJobFunction", "ValidateResourcesFunction"])
def test_functions_that_read_a_peer_regions_stack_know_the_stacks_name(function: str) -> None:
    """The same stack in a peer region is read by its name (training_settings.in_region), and only it."""
    assert function_environment(TEMPLATE, function)[training_settings.STACK_NAME] == {"Ref": "AWS::StackName"}
    properties = TEMPLATE["Resources"][function]["Properties"]
    (statement,) = [s for s in _statements(properties) if "cloudformation:DescribeStacks" in _actions(s)]
    assert statement["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:cloudformation:*:${AWS::AccountId}:stack/${AWS::StackName}/*"
    }


def _rule_value(node: Any, parameters: dict[str, str]) -> Any:
    """CloudFormation rule functions, for the ones the template's Rules use."""
    if isinstance(node, dict):
        ((function, argument),) = node.items()
        if function == "Ref":
            return parameters[argument]
        values = [_rule_value(a, parameters) for a in argument]
        match function:
            case "Fn::Equals":
                return values[0] == values[1]
            case "Fn::And":
                return all(values)
            case "Fn::Or":
                return any(values)
            case "Fn::Not":
                return not values[0]
        raise AssertionError(f"rule function {function} not understood here")
    return node


@pytest.mark.parametrize(
    ("subnets", "groups", "accepted"),
    [
        ("", "", True),
        ("subnet-0123456789abcdef0", "sg-0123456789abcdef0", True),
        ("subnet-0123456789abcdef0", "", False),
        ("", "sg-0123456789abcdef0", False),
    ],
)
def test_deploy_refuses_subnets_without_security_groups_and_the_reverse(
    subnets: str, groups: str, accepted: bool
) -> None:
    parameters = {"TrainingSubnetIds": subnets, "TrainingSecurityGroupIds": groups}
    (assertion,) = TEMPLATE["Rules"]["TrainingVpcNeedsSubnetsAndSecurityGroups"]["Assertions"]
    assert _rule_value(assertion["Assert"], parameters) is accepted
    for name, value in parameters.items():
        assert re.fullmatch(TEMPLATE["Parameters"][name]["AllowedPattern"], value)


# --- The alert topic's key: alarms and Spotline's functions can publish ----------------------

ALARM_ARNS = {"Fn::Sub": "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:${AWS::StackName}-*"}


def _cloudwatch_statement(document: dict[str, Any]) -> dict[str, Any]:
    (statement,) = (s for s in document["Statement"] if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"})
    assert isinstance(statement, dict) and statement["Effect"] == "Allow"
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnLike": {"aws:SourceArn": ALARM_ARNS},
    }
    return statement


def test_alert_topic_has_a_rotated_customer_managed_key_cloudwatch_alarms_may_use() -> None:
    topic = TEMPLATE["Resources"]["AlertTopic"]["Properties"]
    assert topic["KmsMasterKeyId"] == {"Ref": "AlertTopicKey"}  # not alias/aws/sns: alarms cannot use it
    key = TEMPLATE["Resources"]["AlertTopicKey"]["Properties"]
    assert key["EnableKeyRotation"] is True
    assert set(_actions(_cloudwatch_statement(key["KeyPolicy"]))) == {"kms:Decrypt", "kms:GenerateDataKey"}
    topic_policy = TEMPLATE["Resources"]["AlertTopicPolicy"]["Properties"]["PolicyDocument"]
    assert _actions(_cloudwatch_statement(topic_policy)) == ["sns:Publish"]
    others = [
        s for s in key["KeyPolicy"]["Statement"] if "Service" not in s["Principal"] and "kms:Decrypt" in _actions(s)
    ]
    assert [s["Condition"]["StringEquals"]["kms:ViaService"] for s in others] == [
        {"Fn::Sub": "sns.${AWS::Region}.amazonaws.com"}
    ]


def test_every_alarm_is_named_so_the_key_and_topic_let_it_publish() -> None:
    for name, alarm in resources_of_type(TEMPLATE, "AWS::CloudWatch::Alarm").items():
        assert alarm["Properties"]["AlarmName"] == {"Fn::Sub": f"${{AWS::StackName}}-{name}"}


def test_publishing_functions_may_use_the_topic_key_and_no_other() -> None:
    functions = resources_of_type(TEMPLATE, "AWS::Serverless::Function")
    publishers = {n for n in functions if "ALERT_TOPIC_ARN" in function_environment(TEMPLATE, n)}
    assert publishers == {
        "StopTrainingJobFunction",
        "RecordOutcomeFunction",
        "StopExecutionJobsFunction",
        "ReconcileTrainingJobsFunction",
        "CheckTrainingStatusFunction",  # PriorityRaised
        "AdvanceScoringRunFunction",  # WindowAtRisk
        "RecordScoringRunFunction",  # ScoringFailed
    }
    for name, function in functions.items():
        kms = [
            s
            for s in _statements(function["Properties"].get("Policies", []))
            if any(a.startswith("kms:") for a in _actions(s))
        ]
        if name not in publishers:
            assert not kms, name
            continue
        (statement,) = kms
        assert set(_actions(statement)) == {"kms:GenerateDataKey", "kms:Decrypt"}
        assert statement["Resource"] == {"Fn::GetAtt": ["AlertTopicKey", "Arn"]}
        assert statement["Condition"]["StringEquals"]["kms:ViaService"] == {
            "Fn::Sub": "sns.${AWS::Region}.amazonaws.com"
        }


# --- Who may write and read a team's folder in the ingest bucket ------------------------------
# The bucket policy's Deny statements, evaluated for the requests teams and Spotline make
# (template/bucket_policies.py models what the policies use).

BUCKET_ARN = "arn:aws:s3:::spotline-ingest"


def _bucket_value(value: Any) -> Any:
    return bucket_value(value, "IngestBucket", BUCKET_ARN, {})


def _denied(request: S3Request) -> bool:
    return denied(TEMPLATE["Resources"]["IngestBucketPolicy"]["Properties"], "IngestBucket", BUCKET_ARN, request, {})


MANIFEST = "manifests/vision/resnet.yaml"
OTHER_MANIFEST = "manifests/search-ranking/ranker.yaml"


@pytest.mark.parametrize(
    ("request_", "denied"),
    [
        # A principal tagged spotline:team=vision: its own folders, nothing else.
        (S3Request("s3:PutObject", MANIFEST, "vision"), False),
        (S3Request("s3:DeleteObjectVersion", MANIFEST, "vision"), False),
        (S3Request("s3:GetObject", MANIFEST, "vision"), False),
        (S3Request("s3:GetObject", report_key(MANIFEST, "rejected"), "vision"), False),
        (S3Request("s3:GetObject", report_key(MANIFEST, "outcome"), "vision"), False),
        (S3Request("s3:PutObject", OTHER_MANIFEST, "vision"), True),
        (S3Request("s3:DeleteObject", OTHER_MANIFEST, "vision"), True),
        (S3Request("s3:GetObject", OTHER_MANIFEST, "vision"), True),
        (S3Request("s3:GetObject", report_key(OTHER_MANIFEST, "outcome"), "vision"), True),
        (S3Request("s3:PutObject", report_key(MANIFEST, "outcome"), "vision"), True),  # reports are Spotline's
        (S3Request("s3:PutObject", "manifests/vision-team/x.yaml", "vision"), True),  # a prefix is not a folder
        (S3Request("s3:GetObject", "specs/vision-resnet-1a2b3c4d.json", "vision"), True),
        (S3Request("s3:ListBucket", None, "vision", prefix="manifests/vision/"), False),
        (S3Request("s3:ListBucket", None, "vision", prefix="reports/manifests/vision/"), False),
        (S3Request("s3:ListBucket", None, "vision", prefix="manifests/"), True),
        (S3Request("s3:ListBucket", None, "vision"), True),
        # A principal without the tag (Spotline's roles, anyone else): no manifest writes, no reports read.
        (S3Request("s3:PutObject", MANIFEST, None), True),
        (S3Request("s3:DeleteObject", MANIFEST, None), True),
        (S3Request("s3:GetObject", report_key(MANIFEST, "rejected"), None), True),
        (S3Request("s3:GetObjectVersion", report_key(MANIFEST, "outcome"), None), True),
        # Everyone: TLS only.
        (S3Request("s3:PutObject", MANIFEST, "vision", secure=False), True),
    ],
    ids=lambda value: (
        "denied" if value is True else "allowed" if value is False else f"{value.action} {value.key} {value.team}"
    ),
)
def test_bucket_policy_keeps_each_team_to_its_own_folders(request_: S3Request, denied: bool) -> None:
    assert _denied(request_) is denied


def test_bucket_policy_leaves_spotlines_roles_what_their_policies_grant() -> None:
    """Every ingest-bucket permission of every function (manifests/ read, reports/ and specs/
    write and read), asked by its untagged role, passes the bucket policy."""
    asked = 0
    for name, function in resources_of_type(TEMPLATE, "AWS::Serverless::Function").items():
        for statement in _statements(function["Properties"].get("Policies", [])):
            for resource in _resources(statement):
                if not (
                    isinstance(resource, dict) and str(resource.get("Fn::Sub", "")).startswith("${IngestBucket.Arn}/")
                ):
                    continue
                key = _bucket_value(resource).removeprefix(f"{BUCKET_ARN}/").replace("*", "vision/resnet.yaml")
                for action in _actions(statement):
                    asked += 1
                    assert not _denied(S3Request(action, key, None)), (name, action, key)
    assert asked >= 8


# --- No orphans: the clean-up functions, their triggers and the state machine's own alert ----


def test_the_state_machine_may_publish_to_the_alert_topic_with_its_key_through_sns_only() -> None:
    """OutcomeNotRecorded alerts straight from the state machine (sns:publish), so its role needs
    what the publishing functions have, no more."""
    policies = TEMPLATE["Resources"]["TrainingLifecycle"]["Properties"]["Policies"]
    statements = list(_statements(policies))
    (publish,) = (s for s in statements if "sns:Publish" in _actions(s))
    assert publish["Resource"] == {"Ref": "AlertTopic"}
    (kms,) = (s for s in statements if any(a.startswith("kms:") for a in _actions(s)))
    assert set(_actions(kms)) == {"kms:GenerateDataKey", "kms:Decrypt"}
    assert kms["Resource"] == {"Fn::GetAtt": ["AlertTopicKey", "Arn"]}
    assert kms["Condition"]["StringEquals"]["kms:ViaService"] == {"Fn::Sub": "sns.${AWS::Region}.amazonaws.com"}
    substitutions = TEMPLATE["Resources"]["TrainingLifecycle"]["Properties"]["DefinitionSubstitutions"]
    assert substitutions["AlertTopicArn"] == {"Ref": "AlertTopic"}


def test_every_end_of_a_lifecycle_or_scoring_execution_reaches_the_clean_up() -> None:
    events = TEMPLATE["Resources"]["StopExecutionJobsFunction"]["Properties"]["Events"]
    (rule,) = events.values()
    pattern = rule["Properties"]["Pattern"]
    assert pattern["source"] == ["aws.states"]
    assert pattern["detail-type"] == ["Step Functions Execution Status Change"]
    assert pattern["detail"]["stateMachineArn"] == [{"Ref": "TrainingLifecycle"}, {"Ref": "ScoringRun"}]
    assert set(pattern["detail"]["status"]) == {"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}  # every end, not RUNNING


def test_the_reconciler_sweeps_every_15_minutes_and_reads_only_this_state_machines_executions() -> None:
    props = TEMPLATE["Resources"]["ReconcileTrainingJobsFunction"]["Properties"]
    (schedule,) = props["Events"].values()
    assert (schedule["Type"], schedule["Properties"]["Schedule"]) == ("Schedule", "rate(15 minutes)")
    assert props["Environment"]["Variables"]["STATE_MACHINE_ARN"] == {"Ref": "TrainingLifecycle"}
    (describe,) = (s for s in _statements(props["Policies"]) if "states:DescribeExecution" in _actions(s))
    assert describe["Resource"]["Fn::Sub"].endswith(":execution:${TrainingLifecycle.Name}:*")
