"""Issue 45: Dataset Ready and Training Requested events come through a bus of the stack whose
policy admits only the principals the stack names (DatasetEventPublishers). Judged as AWS would:
the bus the rules listen on and its policy come from the template as SAM expands it, evaluated by
the general policy evaluator with each principal's own identity policy."""

from __future__ import annotations

from typing import Any

import pytest

from spotline_dev.harness.local.custom_resources import with_parameters
from spotline_dev.harness.local.permissions import roles
from spotline_dev.harness.local.permissions.policy import Decision, Request, Statement, evaluate
from spotline_dev.harness.local.template import Resolver, load_template

ACCOUNT, REGION, STACK = "123456789012", "us-east-1", "spotline"
PIPELINE_ACCOUNT = "210987654321"
PSEUDO = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::StackName": STACK, "AWS::Partition": "aws"}
DATASET_RULES = ("DatasetGateFunctionDatasetReady", "IntakeFunctionTrainingRequested")
PUBLISHER = f"arn:aws:iam::{ACCOUNT}:role/spotline-dataset-publisher"  # DatasetEventPublishers' default
PIPELINE = f"arn:aws:iam::{PIPELINE_ACCOUNT}:role/preprocessing/nightly-export"
NAMED = f"{PUBLISHER},{PIPELINE}"  # DatasetEventPublishers naming the pipeline of another account too


def _template(**parameters: str) -> dict[str, Any]:
    return with_parameters(load_template(), parameters)


def _lookup(logical: str, attribute: str | None) -> str:
    """The stack's own bus as CloudFormation names it (Ref: its name); nothing else is looked up."""
    if logical == "DatasetEventBus":
        name = f"{STACK}-datasets"
        return f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{name}" if attribute == "Arn" else name
    raise KeyError(logical)


def _rules(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The dataset rules as SAM expands them (AWS::Events::Rule): their bus and pattern, resolved."""
    expanded = roles.expanded_template()
    merged = {**expanded, "Parameters": template["Parameters"], "Conditions": template.get("Conditions", {})}
    resolver = Resolver(merged, _lookup, dict(PSEUDO))
    rules = {logical: expanded["Resources"][logical]["Properties"] for logical in DATASET_RULES}
    return {
        logical: resolver.resolve({k: v for k, v in rule.items() if k in ("EventBusName", "EventPattern")})
        for logical, rule in rules.items()
    }


def _bus_arn(template: dict[str, Any]) -> str:
    """The ARN of the bus the dataset rules listen on (no EventBusName: the default bus)."""
    (bus,) = {str(rule.get("EventBusName", "default")) for rule in _rules(template).values()}
    return f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{bus}"


def _put_events(template: dict[str, Any], principal: str, identity_actions: str | list[str]) -> Decision:
    """IAM's decision on `principal` putting events on the dataset rules' bus, its own identity
    policy allowing `identity_actions` on every resource. A principal of another account needs the
    bus's policy too (IAM, "Cross-account policy evaluation logic": "The resource-based policy in the
    trusting account must specify the principal of the trusted account")."""
    bus = _bus_arn(template)
    policies = roles.stack_permissions(template, _lookup, PSEUDO).resource_policies
    identity = [Statement({"Effect": "Allow", "Action": identity_actions, "Resource": "*"}, f"identity of {principal}")]
    request = Request(principal, "events:PutEvents", bus, {"aws:SecureTransport": "true"})
    return evaluate(request, identity, policies.for_resource(bus), resource_policy_required=request.account != ACCOUNT)


def test_the_dataset_rules_listen_on_the_stack_s_own_bus() -> None:
    template = _template()
    assert _bus_arn(template) == f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{STACK}-datasets"
    bus = load_template()["Resources"]["DatasetEventBus"]
    assert bus["Type"] == "AWS::Events::EventBus"
    outputs = load_template()["Outputs"]
    assert outputs["DatasetEventBusName"]["Value"] == {"Ref": "DatasetEventBus"}
    assert outputs["DatasetEventBusArn"]["Value"] == {"Fn::GetAtt": ["DatasetEventBus", "Arn"]}


def test_a_named_publisher_may_put_events_on_the_bus() -> None:
    decision = _put_events(_template(), PUBLISHER, "events:PutEvents")
    assert decision.allowed, decision.reason


@pytest.mark.parametrize("identity_actions", ["events:PutEvents", "events:*", "*"])
def test_another_principal_of_the_account_is_denied_whatever_its_identity_policy_allows(identity_actions: str) -> None:
    """In one account an identity policy alone would do ("If either the identity-based policy or the
    resource-based policy within the same account allows the request ..., the request is still
    allowed"): only the bus policy's explicit Deny keeps another team's role (or an administrator) out."""
    for principal in (
        f"arn:aws:iam::{ACCOUNT}:role/media-recs-training",
        f"arn:aws:iam::{ACCOUNT}:role/Admin",
        f"arn:aws:iam::{ACCOUNT}:user/alice",
    ):
        decision = _put_events(_template(), principal, identity_actions)
        assert not decision.allowed, principal
        assert "OnlyNamedPublishersPutEvents" in decision.reason, decision.reason


def test_a_named_publisher_of_another_account_is_allowed() -> None:
    template = _template(DatasetEventPublishers=NAMED, DatasetEventPublisherAccounts=PIPELINE_ACCOUNT)
    decision = _put_events(template, PIPELINE, "events:PutEvents")
    assert decision.allowed, decision.reason
    assert _put_events(template, PUBLISHER, "events:PutEvents").allowed  # this account's publisher still


def test_other_principals_of_a_named_account_are_denied() -> None:
    template = _template(DatasetEventPublishers=NAMED, DatasetEventPublisherAccounts=PIPELINE_ACCOUNT)
    decision = _put_events(template, f"arn:aws:iam::{PIPELINE_ACCOUNT}:role/someone-else", "*")
    assert not decision.allowed
    assert "OnlyNamedPublishersPutEvents" in decision.reason, decision.reason


def test_a_principal_of_an_account_not_named_is_denied_even_if_its_arn_is_listed() -> None:
    """The default DatasetEventPublishers pattern has a wildcard account; without
    DatasetEventPublisherAccounts the bus's policy allows no other account at all."""
    for template, principal in (
        (_template(), f"arn:aws:iam::{PIPELINE_ACCOUNT}:role/spotline-dataset-publisher"),
        (_template(DatasetEventPublishers=NAMED), PIPELINE),
    ):
        decision = _put_events(template, principal, "events:PutEvents")
        assert not decision.allowed, principal
        assert decision.reason == "the resource's policy does not allow events:PutEvents to this principal"


def test_the_rules_take_events_of_the_named_accounts_only() -> None:
    """ "Rules with an account field do not match any events sent from other accounts" (EventBridge
    API reference, PutPermission): the publishers' accounts are in the rules' pattern, no others."""
    for rule in _rules(_template()).values():
        assert rule["EventPattern"]["account"] == [ACCOUNT]
    named = _template(DatasetEventPublisherAccounts=f"{PIPELINE_ACCOUNT},111122223333")
    for rule in _rules(named).values():
        assert rule["EventPattern"]["account"] == [ACCOUNT, PIPELINE_ACCOUNT, "111122223333"]
