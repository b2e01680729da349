"""The policy evaluator on AWS's own examples (IAM user guide: "Policy evaluation logic", "IAM JSON
policy elements: Condition", "Condition operators", "Conditions with multiple context keys or
values", "Policy variables", "NotAction", "NotResource"; AWS KMS developer guide: "Key policies")."""

from __future__ import annotations

from typing import Any

import pytest

from spotline_dev.harness.local.permissions.policy import Request, Statement, Unmodelled, evaluate

ROLE = "arn:aws:iam::111122223333:role/app"


def allowed(
    request: Request, *identity: dict[str, Any], resource: tuple[dict[str, Any], ...] = (), key: bool = False
) -> bool:
    return evaluate(
        request,
        [Statement(s, "identity") for s in identity],
        [Statement(s, "resource") for s in resource],
        resource_policy_required=key,
    ).allowed


def s3(action: str, resource: str, **context: Any) -> Request:
    return Request(ROLE, action, resource, context)


def test_an_explicit_deny_overrides_an_allow() -> None:
    # "An explicit deny in any policy overrides any allows."
    allow = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
    deny = {"Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::amzn-s3-demo-bucket/*"}
    assert allowed(s3("s3:GetObject", "arn:aws:s3:::amzn-s3-demo-bucket/a"), allow, deny)
    assert not allowed(s3("s3:DeleteObject", "arn:aws:s3:::amzn-s3-demo-bucket/a"), allow, deny)


def test_a_request_nothing_allows_is_denied_implicitly() -> None:
    # "By default, all requests are implicitly denied."
    decision = evaluate(s3("s3:GetObject", "arn:aws:s3:::b/k"), [])
    assert not decision.allowed
    assert decision.reason == "no identity-based policy allows the s3:GetObject action"


def test_actions_match_case_insensitively_with_wildcards() -> None:
    # "Action ... values are case-insensitive" and may use * anywhere: "s3:Get*".
    statement = {"Effect": "Allow", "Action": "S3:get*", "Resource": "*"}
    assert allowed(s3("s3:GetObjectVersion", "arn:aws:s3:::b/k"), statement)
    assert not allowed(s3("s3:PutObject", "arn:aws:s3:::b/k"), statement)


def test_not_action_with_allow_allows_everything_else() -> None:
    # NotAction example: "allows users to access all of the actions in every AWS service, except
    # for actions in IAM" ({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}).
    statement = {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}
    assert allowed(Request(ROLE, "s3:ListBucket", "arn:aws:s3:::b"), statement)
    assert not allowed(Request(ROLE, "iam:CreateUser", "arn:aws:iam::111122223333:user/x"), statement)


def test_not_resource_deny_denies_everything_but_the_named_resources() -> None:
    # NotResource example: deny everything except one bucket's folder.
    deny = {
        "Effect": "Deny",
        "Action": "s3:*",
        "NotResource": ["arn:aws:s3:::HRBucket/Payroll", "arn:aws:s3:::HRBucket/Payroll/*"],
    }
    allow = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
    assert allowed(s3("s3:GetObject", "arn:aws:s3:::HRBucket/Payroll/march.csv"), allow, deny)
    assert not allowed(s3("s3:GetObject", "arn:aws:s3:::HRBucket/Other/x"), allow, deny)


def test_policy_variables_fill_resources_and_a_missing_key_matches_nothing() -> None:
    # "arn:aws:s3:::amzn-s3-demo-bucket/home/${aws:username}/*"; when the key is missing from
    # the request context the element does not match.
    statement = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/home/${aws:username}/*"}
    assert allowed(s3("s3:GetObject", "arn:aws:s3:::b/home/johndoe/x", **{"aws:username": "johndoe"}), statement)
    assert not allowed(s3("s3:GetObject", "arn:aws:s3:::b/home/alice/x", **{"aws:username": "johndoe"}), statement)
    assert not allowed(s3("s3:GetObject", "arn:aws:s3:::b/home/johndoe/x"), statement)


def test_string_equals_is_case_sensitive_and_keys_are_not() -> None:
    # "the following condition includes the StringEquals operator to make sure that only requests
    # made by johndoe match. Users named JohnDoe are denied access." Key names are not case-sensitive.
    statement = {
        "Effect": "Allow",
        "Action": "s3:GetObject",
        "Resource": "*",
        "Condition": {"StringEquals": {"aws:username": "johndoe"}},
    }
    assert allowed(s3("s3:GetObject", "arn:aws:s3:::b/k", **{"AWS:UserName": "johndoe"}), statement)
    assert not allowed(s3("s3:GetObject", "arn:aws:s3:::b/k", **{"aws:username": "JohnDoe"}), statement)


def test_several_values_are_ored_and_several_keys_anded() -> None:
    # "If a single condition operator includes multiple values for a context key, those values are
    # evaluated using a logical OR"; "multiple context keys ... logical AND".
    statement = {
        "Effect": "Allow",
        "Action": "s3:GetObject",
        "Resource": "*",
        "Condition": {"StringEquals": {"aws:PrincipalTag/team": ["a", "b"], "aws:RequestedRegion": "us-east-1"}},
    }
    both = {"aws:PrincipalTag/team": "b", "aws:RequestedRegion": "us-east-1"}
    assert allowed(s3("s3:GetObject", "arn:aws:s3:::b/k", **both), statement)
    assert not allowed(
        s3("s3:GetObject", "arn:aws:s3:::b/k", **{**both, "aws:RequestedRegion": "eu-west-1"}), statement
    )


def test_a_negated_operator_with_several_values_is_a_nor_and_holds_without_the_key() -> None:
    # "a single negated matching condition operator includes multiple values ... logical NOR";
    # "If the policy condition requires that the key is not matched, such as StringNotLike ... and
    # the right key is not present, the condition is true."
    deny = {
        "Effect": "Deny",
        "Action": "s3:*",
        "Resource": "*",
        "Condition": {"StringNotEquals": {"aws:RequestedRegion": ["us-east-1", "us-west-2"]}},
    }
    allow = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
    assert allowed(s3("s3:GetObject", "arn:aws:s3:::b/k", **{"aws:RequestedRegion": "us-west-2"}), allow, deny)
    assert not allowed(s3("s3:GetObject", "arn:aws:s3:::b/k", **{"aws:RequestedRegion": "eu-west-1"}), allow, deny)
    assert not allowed(s3("s3:GetObject", "arn:aws:s3:::b/k"), allow, deny)


def test_if_exists_holds_when_the_key_is_absent() -> None:
    # "StringLikeIfExists": "If the key is not present ... the condition evaluates to true" (the
    # ec2:InstanceType example).
    statement = {
        "Effect": "Allow",
        "Action": "ec2:RunInstances",
        "Resource": "*",
        "Condition": {"StringLikeIfExists": {"ec2:InstanceType": ["t1.*", "t2.*", "m3.*"]}},
    }
    assert allowed(Request(ROLE, "ec2:RunInstances", "*", {"ec2:InstanceType": "t2.micro"}), statement)
    assert not allowed(Request(ROLE, "ec2:RunInstances", "*", {"ec2:InstanceType": "p4d.24xlarge"}), statement)
    assert allowed(Request(ROLE, "ec2:RunInstances", "*"), statement)


def test_null_tests_whether_a_key_is_present() -> None:
    # "Null": {"aws:TokenIssueTime": "true"} holds when the key is absent.
    statement = {
        "Effect": "Deny",
        "Action": "*",
        "Resource": "*",
        "Condition": {"Null": {"aws:PrincipalTag/spotline:team": "true"}},
    }
    allow = {"Effect": "Allow", "Action": "*", "Resource": "*"}
    assert not allowed(s3("s3:GetObject", "arn:aws:s3:::b/k"), allow, statement)
    assert allowed(s3("s3:GetObject", "arn:aws:s3:::b/k", **{"aws:PrincipalTag/spotline:team": "x"}), allow, statement)


def test_for_all_values_and_for_any_value_on_tag_keys() -> None:
    # "ForAllValues:StringEquals aws:TagKeys [environment, cost-center]": a request with only those
    # keys matches, one with another key does not; with no keys at all ForAllValues holds.
    statement = {
        "Effect": "Allow",
        "Action": "ec2:CreateTags",
        "Resource": "*",
        "Condition": {"ForAllValues:StringEquals": {"aws:TagKeys": ["environment", "cost-center"]}},
    }
    assert allowed(Request(ROLE, "ec2:CreateTags", "*", {"aws:TagKeys": ("environment",)}), statement)
    assert not allowed(Request(ROLE, "ec2:CreateTags", "*", {"aws:TagKeys": ("environment", "owner")}), statement)
    assert allowed(Request(ROLE, "ec2:CreateTags", "*"), statement)
    any_value = {**statement, "Condition": {"ForAnyValue:StringEquals": {"aws:TagKeys": ["environment"]}}}
    assert allowed(Request(ROLE, "ec2:CreateTags", "*", {"aws:TagKeys": ("environment", "owner")}), any_value)
    assert not allowed(Request(ROLE, "ec2:CreateTags", "*", {"aws:TagKeys": ("owner",)}), any_value)


def test_arn_like_matches_each_part_of_the_arn() -> None:
    # "ArnLike": {"aws:SourceArn": "arn:aws:sns:REGION:123456789012:TOPIC-ID"} with wildcards.
    statement = {
        "Effect": "Allow",
        "Action": "sqs:SendMessage",
        "Resource": "*",
        "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:sns:*:123456789012:alerts-*"}},
    }
    ok = Request(ROLE, "sqs:SendMessage", "*", {"aws:SourceArn": "arn:aws:sns:us-east-1:123456789012:alerts-x"})
    other = Request(ROLE, "sqs:SendMessage", "*", {"aws:SourceArn": "arn:aws:sns:us-east-1:999999999999:alerts-x"})
    assert allowed(ok, statement)
    assert not allowed(other, statement)


def test_a_resource_policy_naming_the_role_allows_without_an_identity_policy() -> None:
    # Same account: "if ... the resource-based policy grants permission to the principal ... the
    # request is allowed", even with no identity-based policy.
    bucket = {"Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}
    assert allowed(s3("s3:GetObject", "arn:aws:s3:::b/k"), resource=(bucket,))
    root = {**bucket, "Principal": {"AWS": "arn:aws:iam::111122223333:root"}}
    assert not allowed(s3("s3:GetObject", "arn:aws:s3:::b/k"), resource=(root,))


def test_a_kms_key_policy_must_allow_directly_or_by_enabling_iam_policies() -> None:
    # KMS: "Unless the key policy explicitly allows it, you cannot use IAM policies to allow access
    # to a KMS key"; the default key policy's root statement "enables IAM policies".
    iam = {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*"}
    request = Request(ROLE, "kms:Decrypt", "arn:aws:kms:us-east-1:111122223333:key/k")
    enables_iam = {
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
        "Action": "kms:*",
        "Resource": "*",
    }
    assert allowed(request, iam, resource=(enables_iam,), key=True)
    assert not allowed(request, resource=(enables_iam,), key=True)
    assert not allowed(request, iam, resource=(), key=True)
    names_role = {**enables_iam, "Principal": {"AWS": ROLE}}
    assert allowed(request, resource=(names_role,), key=True)


def test_a_service_principal_is_not_the_role() -> None:
    statement = {
        "Effect": "Allow",
        "Principal": {"Service": "cloudwatch.amazonaws.com"},
        "Action": "kms:*",
        "Resource": "*",
    }
    request = Request(ROLE, "kms:Decrypt", "arn:aws:kms:us-east-1:111122223333:key/k")
    assert not allowed(request, resource=(statement,), key=True)


def test_an_unmodelled_operator_is_refused_rather_than_guessed() -> None:
    statement = {
        "Effect": "Allow",
        "Action": "s3:*",
        "Resource": "*",
        "Condition": {"IpAddress": {"aws:SourceIp": "1.2.3.4/32"}},
    }
    with pytest.raises(Unmodelled):
        allowed(s3("s3:GetObject", "arn:aws:s3:::b/k", **{"aws:SourceIp": "1.2.3.4"}), statement)
