"""The team registry in template.yaml: no function environment holds any team's policy, and the
registry bucket's policy keeps each team lead to their own team's proposal, makes every proposal
name its author as AWS knows them, lets only ApplyTeamChange write the registry and no one erase
its history. The team lead's identity policy in docs/teams/team-policy.md is what it grants."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from template.bucket_policies import S3Request, actions_needed, denied

from spotline.aws.teams.team_registry import CHANGED_BY_TAG, LEAD_TAG
from spotline_dev.harness.local.template import function_environment, load_template, resources_of_type

TEMPLATE = load_template()
RESOURCES = TEMPLATE["Resources"]
BUCKET_ARN = "arn:aws:s3:::spotline-team-registry"
APPLY_ROLE = "arn:aws:iam::123456789012:role/spotline-ApplyTeamChangeFunctionRole-1"
APPROVER = "arn:aws:iam::123456789012:role/platform/approver"
ARNS: dict[str, Any] = {"ApplyTeamChangeFunctionRole": APPLY_ROLE, "PlatformApprovers": [APPROVER]}
LEAD = "AROALEADVISION:alice"  # aws:userid of vision's team lead (a role session)
AUTHOR = {CHANGED_BY_TAG: LEAD, LEAD_TAG: "vision"}  # the tags spotline teams apply puts on the lead's proposal
PLATFORM = "AROAPLAT:ops"
TEAM_POLICY_DOC = Path(__file__).resolve().parents[2] / "docs" / "teams" / "team-policy.md"


def _denied(request: S3Request) -> bool:
    policy = RESOURCES["TeamRegistryBucketPolicy"]["Properties"]
    return denied(policy, "TeamRegistryBucket", BUCKET_ARN, request, ARNS)


def test_no_function_environment_holds_the_team_policy() -> None:
    assert "TeamPolicy" not in TEMPLATE["Parameters"]
    globals_ = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    functions = resources_of_type(TEMPLATE, "AWS::Serverless::Function")
    assert len(functions) >= 17
    for name in functions:
        environment = {**globals_, **function_environment(TEMPLATE, name)}
        text = json.dumps(environment)
        assert "TEAM_POLICY" not in environment and "TeamPolicy" not in text, name
        assert '"teams"' not in text and "s3Prefixes" not in text, name
        # Names and ARNs only: far from Lambda's 4 KB for a function's whole environment.
        assert len(text) < 1500, (name, len(text))
    readers = [n for n in functions if "TEAM_REGISTRY_BUCKET" in function_environment(TEMPLATE, n)]
    assert set(readers) >= {"ValidateResourcesFunction", "SubmitTrainingJobFunction", "ApplyTeamChangeFunction"}
    for name in readers:
        assert function_environment(TEMPLATE, name)["TEAM_REGISTRY_BUCKET"] == {"Ref": "TeamRegistryBucket"}


def test_only_apply_team_change_writes_the_registry_and_one_change_at_a_time() -> None:
    writers = []
    for name, function in resources_of_type(TEMPLATE, "AWS::Serverless::Function").items():
        for policy in function["Properties"].get("Policies", []):
            for statement in policy["Statement"]:
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                if "s3:PutObject" in actions and "TeamRegistryBucket" in json.dumps(statement["Resource"]):
                    writers.append(name)
    assert set(writers) == {"ApplyTeamChangeFunction"}
    # Not by reserved concurrency, which an account whose unreserved pool is at its minimum cannot
    # give (the deployment would fail): by S3 conditional writes (tests/layer/aws/teams/test_team_changes.py).
    assert "ReservedConcurrentExecutions" not in RESOURCES["ApplyTeamChangeFunction"]["Properties"]


@pytest.mark.parametrize(
    ("request_", "is_denied"),
    [
        # vision's team lead (tagged spotline:team=vision): its own proposal, tagged with its own id.
        (S3Request("s3:PutObject", "proposed/vision.json", "vision", userid=LEAD, tags=AUTHOR), False),
        (S3Request("s3:GetObject", "teams/vision.json", "vision", userid=LEAD), False),
        # ... never another team's, never a proposal in someone else's name, never the registry itself.
        (
            S3Request("s3:PutObject", "proposed/search-ranking.json", "vision", userid=LEAD, tags=AUTHOR),
            True,
        ),
        (S3Request("s3:PutObject", "proposed/vision-x.json", "vision", userid=LEAD, tags=AUTHOR), True),
        (
            S3Request(
                "s3:PutObject", "proposed/vision.json", "vision", userid=LEAD, tags={CHANGED_BY_TAG: "AROAB:bob"}
            ),
            True,
        ),
        (S3Request("s3:PutObject", "proposed/vision.json", "vision", userid=LEAD), True),  # no author tag
        # A tagged PutObject is also s3:PutObjectTagging (the first case): tags can name only the caller.
        (S3Request("s3:PutObjectTagging", "proposed/vision.json", "vision", userid=LEAD), True),  # erase the author
        (S3Request("s3:PutObjectTagging", "proposed/vision.json", "vision", userid=LEAD, tags=AUTHOR), False),
        (
            S3Request(
                "s3:PutObjectTagging", "proposed/vision.json", "vision", userid=LEAD, tags={CHANGED_BY_TAG: "AROAB:bob"}
            ),
            True,
        ),
        (
            S3Request(
                "s3:PutObjectVersionTagging",
                "proposed/vision.json",
                "vision",
                userid=LEAD,
                tags={CHANGED_BY_TAG: "AROAB:bob"},
            ),
            True,
        ),
        (S3Request("s3:DeleteObjectTagging", "proposed/vision.json", "vision", userid=LEAD), True),
        (S3Request("s3:DeleteObjectVersionTagging", "proposed/vision.json", None, userid=PLATFORM), True),
        (S3Request("s3:PutObjectTagging", "proposed/search-ranking.json", "vision", userid=LEAD, tags=AUTHOR), True),
        (S3Request("s3:PutObject", "teams/vision.json", "vision", userid=LEAD), True),
        (S3Request("s3:PutObject", "index.json", "vision", userid=LEAD), True),
        (S3Request("s3:DeleteObject", "teams/vision.json", "vision", userid=LEAD), True),
        # The platform team (untagged): any team's proposal in its own name; the registry only through the function.
        (
            S3Request(
                "s3:PutObject",
                "proposed/vision.json",
                None,
                userid="AROAPLAT:ops",
                tags={CHANGED_BY_TAG: "AROAPLAT:ops"},
            ),
            False,
        ),
        (S3Request("s3:PutObject", "teams/vision.json", None), True),
        # ApplyTeamChange's role writes the records and the index.
        (S3Request("s3:PutObject", "teams/vision.json", None, principal_arn=APPLY_ROLE), False),
        (S3Request("s3:PutObject", "index.json", None, principal_arn=APPLY_ROLE), False),
        # A lead's widening change waits in pending/ (ApplyTeamChange only) for a platform approval.
        (S3Request("s3:PutObject", "pending/vision.json", None, principal_arn=APPLY_ROLE), False),
        (S3Request("s3:PutObject", "pending/vision.json", "vision", userid=LEAD, tags=AUTHOR), True),
        (S3Request("s3:PutObject", "pending/vision.json", None, userid=PLATFORM), True),
        # A lead's proposal says its team: without the tag, or naming another team, it is denied.
        (
            S3Request("s3:PutObject", "proposed/vision.json", "vision", userid=LEAD, tags={CHANGED_BY_TAG: LEAD}),
            True,
        ),
        (
            S3Request(
                "s3:PutObject",
                "proposed/vision.json",
                "vision",
                userid=LEAD,
                tags={CHANGED_BY_TAG: LEAD, LEAD_TAG: "search-ranking"},
            ),
            True,
        ),
        # Leads never approve, not even their own team's change; only the stack's PlatformApprovers do.
        (S3Request("s3:PutObject", "approvals/vision.json", "vision", userid=LEAD, tags=AUTHOR), True),
        (
            S3Request(
                "s3:PutObject",
                "approvals/vision.json",
                None,
                principal_arn=APPROVER,
                userid=PLATFORM,
                tags={CHANGED_BY_TAG: PLATFORM},
            ),
            False,
        ),
        (
            S3Request("s3:PutObject", "approvals/vision.json", None, userid=PLATFORM, tags={CHANGED_BY_TAG: PLATFORM}),
            True,
        ),
        # No one erases the history, and TLS only.
        (S3Request("s3:DeleteObjectVersion", "teams/vision.json", None, principal_arn=APPLY_ROLE), True),
        (S3Request("s3:DeleteObjectVersion", "proposed/vision.json", "vision", userid=LEAD), True),
        (S3Request("s3:GetObject", "teams/vision.json", "vision", secure=False), True),
    ],
)
def test_the_registry_bucket_policy_keeps_each_team_lead_to_their_own_team(
    request_: S3Request, is_denied: bool
) -> None:
    assert _denied(request_) is is_denied


def test_the_documented_team_lead_policy_is_what_the_bucket_policy_lets_a_lead_do() -> None:
    """The identity policy docs/teams/team-policy.md gives a team lead: every object it allows,
    asked by a lead of vision with the author tag the CLI sets, passes the bucket policy."""
    text = TEAM_POLICY_DOC.read_text()
    (block,) = re.findall(r"```json\n(\{\n  \"Version\".*?)\n```", text, flags=re.S)
    document = json.loads(block)
    asked, granted = 0, set()
    for statement in document["Statement"]:
        assert statement["Effect"] == "Allow"
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for resource in resources:
            if ":s3:::" not in resource or "/" not in resource.split(":::", 1)[1]:
                continue
            key = resource.split("/", 1)[1].replace("${aws:PrincipalTag/spotline:team}", "vision")
            for action in statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]:
                asked += 1
                granted.add((action, key))
                tags = AUTHOR if action in ("s3:PutObject", "s3:PutObjectTagging") else {}
                assert not _denied(S3Request(action, key, "vision", userid=LEAD, tags=tags)), (action, key)
    assert asked >= 3
    # What spotline teams apply sends (a PutObject with the author tag) needs every action S3 checks.
    proposal = S3Request("s3:PutObject", "proposed/vision.json", "vision", userid=LEAD, tags=AUTHOR)
    for action in actions_needed(proposal):
        assert (action, proposal.key) in granted, action
