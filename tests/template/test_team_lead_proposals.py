"""A team lead's proposal, as `spotline teams apply` really sends it, judged the way AWS would: the
call's IAM actions from AWS's action data (a tagged PutObject is s3:PutObject and
s3:PutObjectTagging), the identity policy docs/teams/team-policy.md gives a lead, and the
registry bucket's policy from the expanded template, evaluated by the general policy evaluator
(not the bucket-policy helper written beside the template)."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from spotline.aws.common import clients
from spotline.aws.teams import team_registry
from spotline.core.teams.team_registry import Change
from spotline_dev.harness.local.permissions import roles
from spotline_dev.harness.local.permissions.calls import Call, needs_of
from spotline_dev.harness.local.permissions.policy import Decision, Request, Statement, evaluate, statements_of
from spotline_dev.harness.local.template import load_template

ACCOUNT, REGION = "123456789012", "us-east-1"
REGISTRY = "spotline-registry"
LEAD_ROLE = f"arn:aws:iam::{ACCOUNT}:role/vision-lead"
LEAD_USERID = "AROALEADVISION:alice"
TEAM_POLICY_DOC = Path(__file__).resolve().parents[2] / "docs" / "teams" / "team-policy.md"


def documented_lead_policy() -> dict[str, Any]:
    (block,) = re.findall(r"```json\n(\{\n  \"Version\".*?)\n```", TEAM_POLICY_DOC.read_text(), flags=re.S)
    return json.loads(block.replace("<registry bucket>", REGISTRY))  # type: ignore[no-any-return]


def registry_bucket_policy(expanded: dict[str, Any] | None = None) -> list[Statement]:
    def lookup(logical: str, attribute: str | None) -> str:
        if logical == "TeamRegistryBucket":
            return f"arn:aws:s3:::{REGISTRY}" if attribute == "Arn" else REGISTRY
        raise KeyError(logical)

    pseudo = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::StackName": "spotline", "AWS::Partition": "aws"}
    with pytest.MonkeyPatch.context() as patch:
        if expanded is not None:
            patch.setattr(roles, "expanded_template", lambda: copy.deepcopy(expanded))
        permissions = roles.stack_permissions(load_template(), lookup, pseudo)
    return permissions.resource_policies.buckets[REGISTRY]


@pytest.fixture
def sent_proposals() -> Iterator[list[Call]]:
    """The PutObject calls team_registry.propose really makes (captured from botocore)."""
    calls: list[Call] = []
    with mock_aws():
        session = boto3.Session(region_name=REGION)
        session.client("s3").create_bucket(Bucket=REGISTRY)

        def capture(params: dict[str, Any], model: Any, **_: Any) -> None:
            calls.append(Call("s3", model.name, dict(params), REGION, ACCOUNT))

        session.events.register("before-parameter-build.s3.PutObject", capture)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(clients, "boto3", session)
            clients.reset_clients()
            yield calls
        clients.reset_clients()


def propose_as_lead(sent: list[Call], team: str, lead_of: str | None = "vision") -> Call:
    team_registry.propose(Change(team, {"roles": []}), LEAD_USERID, bucket_name=REGISTRY, lead_of=lead_of)
    return sent[-1]


def decisions(
    call: Call,
    identity: dict[str, Any],
    bucket: list[Statement],
    *,
    principal: str = LEAD_ROLE,
    context: dict[str, str] | None = None,
) -> list[tuple[str, Decision]]:
    if context is None:
        context = {"aws:PrincipalTag/spotline:team": "vision", "aws:userid": LEAD_USERID}
    context = {**context, "aws:SecureTransport": "true"}
    found = []
    for need in needs_of(call):
        request = Request(principal, need.action, need.resource, {**context, **dict(need.context)})
        found.append((need.action, evaluate(request, statements_of(identity, "lead policy"), bucket)))
    return found


def test_a_lead_may_propose_for_its_own_team_and_not_for_another(sent_proposals: list[Call]) -> None:
    own = propose_as_lead(sent_proposals, "vision")
    assert {action for action, _ in decisions(own, documented_lead_policy(), registry_bucket_policy())} == {
        "s3:PutObject",
        "s3:PutObjectTagging",
    }
    assert all(d.allowed for _, d in decisions(own, documented_lead_policy(), registry_bucket_policy()))
    other = propose_as_lead(sent_proposals, "search-ranking")
    refused = [d for _, d in decisions(other, documented_lead_policy(), registry_bucket_policy()) if not d.allowed]
    assert refused and all("TeamLeadsProposeOnlyForTheirTeam" in d.reason or "no identity" in d.reason for d in refused)


def test_a_proposal_naming_someone_else_as_its_author_is_denied(sent_proposals: list[Call]) -> None:
    team_registry.propose(Change("vision", {"roles": []}), "AROAOTHER:bob", bucket_name=REGISTRY)
    results = decisions(sent_proposals[-1], documented_lead_policy(), registry_bucket_policy())
    assert any("ProposalsNameTheirAuthor" in d.reason for _, d in results if not d.allowed)


def test_without_put_object_tagging_in_the_lead_policy_the_proposal_is_denied(sent_proposals: list[Call]) -> None:
    """A planted fault: the documented policy less s3:PutObjectTagging."""
    policy = documented_lead_policy()
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        statement["Action"] = [a for a in actions if a != "s3:PutObjectTagging"]
    own = propose_as_lead(sent_proposals, "vision")
    refused = {action: d.reason for action, d in decisions(own, policy, registry_bucket_policy()) if not d.allowed}
    assert refused == {"s3:PutObjectTagging": "no identity-based policy allows the s3:PutObjectTagging action"}


def test_the_bucket_policy_that_denied_every_tagged_put_is_caught(sent_proposals: list[Call]) -> None:
    """A planted fault: the registry policy as it was, denying s3:PutObjectTagging on proposed/* to all."""
    expanded = roles.expanded_template()
    document = expanded["Resources"]["TeamRegistryBucketPolicy"]["Properties"]["PolicyDocument"]
    document["Statement"].append(
        {
            "Sid": "ProposalTagsAreNotRewritten",
            "Effect": "Deny",
            "Principal": "*",
            "Action": ["s3:PutObjectTagging", "s3:PutObjectVersionTagging"],
            "Resource": {"Fn::Sub": "${TeamRegistryBucket.Arn}/proposed/*"},
        }
    )
    own = propose_as_lead(sent_proposals, "vision")
    bucket = registry_bucket_policy(expanded)
    refused = [d for _, d in decisions(own, documented_lead_policy(), bucket) if not d.allowed]
    assert [d.statement.body.get("Sid") for d in refused if d.statement] == ["ProposalTagsAreNotRewritten"]


def test_a_leads_proposal_must_say_its_team_so_its_widening_waits_for_approval(sent_proposals: list[Call]) -> None:
    """Without spotline:lead-of a lead's proposal would pass for the platform team's (applied at once)."""
    unmarked = propose_as_lead(sent_proposals, "vision", lead_of=None)
    refused = [d for _, d in decisions(unmarked, documented_lead_policy(), registry_bucket_policy()) if not d.allowed]
    assert refused and all("LeadProposalsSayTheirTeam" in d.reason for d in refused)
    posing = propose_as_lead(sent_proposals, "vision", lead_of="search-ranking")
    assert not all(d.allowed for _, d in decisions(posing, documented_lead_policy(), registry_bucket_policy()))


PLATFORM_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": ["s3:PutObject", "s3:PutObjectTagging"], "Resource": "*"}],
}
PLATFORM_USERID = "AROAPLATFORM:pat"


def test_only_the_stacks_platform_approvers_may_approve(sent_proposals: list[Call]) -> None:
    team_registry.approve("vision", "v1", PLATFORM_USERID, REGISTRY)
    approval = sent_proposals[-1]
    untagged = {"aws:userid": PLATFORM_USERID}
    approver = f"arn:aws:iam::{ACCOUNT}:role/spotline-platform-approver"  # PlatformApprovers' default
    allowed = decisions(approval, PLATFORM_POLICY, registry_bucket_policy(), principal=approver, context=untagged)
    assert {a for a, _ in allowed} == {"s3:PutObject", "s3:PutObjectTagging"} and all(d.allowed for _, d in allowed)
    other = f"arn:aws:iam::{ACCOUNT}:role/someone-with-s3-rights"
    denied = decisions(approval, PLATFORM_POLICY, registry_bucket_policy(), principal=other, context=untagged)
    assert all(not d.allowed and "OnlyPlatformApproversApprove" in d.reason for _, d in denied)
    lead = decisions(approval, documented_lead_policy(), registry_bucket_policy())
    assert not any(d.allowed for _, d in lead)


def test_spotline_teams_apply_proposes_again_as_the_lead_when_s3_denies_the_platforms_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bucket policy denies a lead's proposal without spotline:lead-of (above): the CLI then
    proposes again with it; any other error is raised."""
    tried: list[str | None] = []

    def propose(change: Change, who: str, bucket: str | None = None, *, lead_of: str | None = None) -> str:
        tried.append(lead_of)
        if lead_of is None:
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "explicit deny"}}, "PutObject")
        return "v2"

    monkeypatch.setattr(team_registry, "propose", propose)
    assert team_registry.propose_as_caller(Change("vision", {}), LEAD_USERID, REGISTRY) == "v2"
    assert tried == [None, "vision"]
