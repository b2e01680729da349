"""A bucket policy's Deny statements evaluated for a request, as S3 would (a test helper). Only
what the template's policies use is modelled: exact or wildcard actions, Resource/NotResource
patterns with ${aws:PrincipalTag/spotline:team} (unresolved when the tag is missing: then the
statement does not apply, as in IAM), and the Null, Bool, StringNotLike, StringNotEquals,
ArnNotEquals and ArnNotLike operators (the negated ones true when the key is missing), with ${aws:userid} in
condition values. A PutObject that carries tags is evaluated as s3:PutObject and as
s3:PutObjectTagging, with its tags as s3:RequestObjectTag/<key>, as S3 authorizes it. Anything
else fails the test that meets it."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from typing import Any

TEAM_VARIABLE = "${aws:PrincipalTag/spotline:team}"
USERID_VARIABLE = "${aws:userid}"


@dataclass(frozen=True)
class S3Request:
    action: str
    key: str | None  # None: the bucket itself
    team: str | None  # the principal's spotline:team tag
    prefix: str | None = None  # s3:prefix of a listing
    secure: bool = True
    principal_arn: str = "arn:aws:iam::123456789012:role/someone"
    userid: str = "AROAEXAMPLE:someone"
    tags: dict[str, str] = field(default_factory=dict)  # the request's object tags (PutObject)


def actions_of(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return actions if isinstance(actions, list) else [actions]


def bucket_value(value: Any, bucket_logical: str, bucket_arn: str, arns: dict[str, str]) -> Any:
    """The template's value with the bucket's ARN (and other GetAtt ...Arn from `arns`) filled in."""
    if isinstance(value, list):
        return [bucket_value(v, bucket_logical, bucket_arn, arns) for v in value]
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        logical, _attribute = value["Fn::GetAtt"]
        return bucket_arn if logical == bucket_logical else arns[logical]
    if isinstance(value, dict):
        return value["Fn::Sub"].replace(f"${{{bucket_logical}.Arn}}", bucket_arn).replace("${!", "${")
    return value


def _with_team(pattern: str, team: str | None) -> str | None:
    if TEAM_VARIABLE not in pattern:
        return pattern
    return None if team is None else pattern.replace(TEAM_VARIABLE, team)


def _condition_holds(condition: dict[str, Any], request: S3Request, arns: dict[str, str]) -> bool:
    context: dict[str, str | None] = {
        "aws:PrincipalTag/spotline:team": request.team,
        "aws:SecureTransport": str(request.secure).lower(),
        "s3:prefix": request.prefix,
        "aws:PrincipalArn": request.principal_arn,
        **{f"s3:RequestObjectTag/{k}": v for k, v in request.tags.items()},
    }
    for operator, entries in condition.items():
        for key, expected in entries.items():
            actual = context.get(key)
            values = _values(expected, request, arns)
            if operator == "Null":
                holds = (actual is None) == (expected == "true")
            elif operator == "Bool":
                holds = actual == expected
            elif operator == "StringNotLike":
                patterns = [_with_team(p, request.team) for p in values]
                holds = actual is None or not any(p is not None and fnmatch.fnmatchcase(actual, p) for p in patterns)
            elif operator in ("StringNotEquals", "ArnNotEquals"):
                resolved = [_with_team(v, request.team) for v in values]
                holds = actual is None or actual not in resolved
            elif operator == "ArnNotLike":
                holds = actual is None or not any(fnmatch.fnmatchcase(actual, p) for p in values)
            else:
                raise AssertionError(f"condition operator {operator} not modelled")
            if not holds:
                return False
    return True


def _values(expected: Any, request: S3Request, arns: dict[str, Any]) -> list[str]:
    """A condition's values: GetAtt ...Arn and Ref (a list parameter) from `arns`, ${aws:userid} filled in."""
    values: list[str] = []
    for value in expected if isinstance(expected, list) else [expected]:
        if isinstance(value, dict) and "Fn::GetAtt" in value:
            values.append(arns[value["Fn::GetAtt"][0]])
        elif isinstance(value, dict):
            found = arns[value["Ref"]]
            values += found if isinstance(found, list) else [found]
        else:
            values.append(str(value).replace(USERID_VARIABLE, request.userid))
    return values


def actions_needed(request: S3Request) -> list[str]:
    """The actions S3 authorizes for the request. S3 API reference, PutObject, Permissions:
    "s3:PutObjectTagging - To successfully set the tag-set with your PutObject request, you must
    have the s3:PutObjectTagging"."""
    if request.action == "s3:PutObject" and request.tags:
        return ["s3:PutObject", "s3:PutObjectTagging"]
    return [request.action]


def denied(
    policy: dict[str, Any], bucket_logical: str, bucket_arn: str, request: S3Request, arns: dict[str, str]
) -> bool:
    """Whether the bucket policy (`policy`: the AWS::S3::BucketPolicy's Properties) denies any
    action the request needs."""
    assert policy["Bucket"] == {"Ref": bucket_logical}
    return any(
        _denied_as(policy, bucket_logical, bucket_arn, replace(request, action=action), arns)
        for action in actions_needed(request)
    )


def _denied_as(
    policy: dict[str, Any], bucket_logical: str, bucket_arn: str, request: S3Request, arns: dict[str, str]
) -> bool:
    arn = bucket_arn if request.key is None else f"{bucket_arn}/{request.key}"
    for statement in policy["PolicyDocument"]["Statement"]:
        assert statement["Effect"] == "Deny" and statement["Principal"] == "*", statement["Sid"]
        if not any(fnmatch.fnmatchcase(request.action, a) for a in actions_of(statement)):
            continue
        element = "Resource" if "Resource" in statement else "NotResource"
        values = bucket_value(statement[element], bucket_logical, bucket_arn, arns)
        patterns = [_with_team(p, request.team) for p in (values if isinstance(values, list) else [values])]
        if None in patterns:
            continue  # an unresolved policy variable: the statement does not apply
        matched = any(fnmatch.fnmatchcase(arn, p) for p in patterns if p is not None)
        if matched != (element == "Resource"):
            continue
        if _condition_holds(statement.get("Condition", {}), request, arns):
            return True
    return False
