"""Names that are account-wide, not regional, carry the region: the same stack name then deploys
in two regions of one account. "All dashboards in your account are global, not region-specific"
(CloudFormation reference, AWS::CloudWatch::Dashboard); IAM names are global to the account and
bucket names to the partition. Alarms, job queues, state machines and log groups are regional."""

from __future__ import annotations

from typing import Any

from spotline_dev.harness.local.template import Resolver, load_template

TEMPLATE = load_template()
ACCOUNT_WIDE_NAMES = {  # resource type -> the property that names it explicitly
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::IAM::InstanceProfile": "InstanceProfileName",
    "AWS::IAM::User": "UserName",
    "AWS::IAM::Group": "GroupName",
    "AWS::S3::Bucket": "BucketName",
}


def _resolved(value: Any, region: str, physical: dict[str, str] | None = None) -> Any:
    pseudo = {"AWS::StackName": "spotline", "AWS::Region": region, "AWS::AccountId": "123456789012"}
    pseudo |= {"AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}
    return Resolver(TEMPLATE, lambda logical, _attribute: (physical or {})[logical], pseudo).resolve(value)


def test_every_account_wide_name_the_template_gives_differs_by_region() -> None:
    named = {
        logical: resource["Properties"][ACCOUNT_WIDE_NAMES[resource["Type"]]]
        for logical, resource in TEMPLATE["Resources"].items()
        if resource["Type"] in ACCOUNT_WIDE_NAMES and ACCOUNT_WIDE_NAMES[resource["Type"]] in resource["Properties"]
    }
    assert "OperationsDashboard" in named
    for logical, name in named.items():
        assert _resolved(name, "us-east-1") != _resolved(name, "eu-west-1"), logical
    assert _resolved(named["OperationsDashboard"], "eu-west-1") == "spotline-eu-west-1-spotline"


def test_the_dashboard_url_names_the_dashboard_the_stack_creates() -> None:
    name = _resolved(TEMPLATE["Resources"]["OperationsDashboard"]["Properties"]["DashboardName"], "eu-west-1")
    url = _resolved(TEMPLATE["Outputs"]["DashboardUrl"]["Value"], "eu-west-1", {"OperationsDashboard": name})
    assert url == (
        "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1"
        "#dashboards:name=spotline-eu-west-1-spotline"
    )
