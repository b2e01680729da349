"""IAM policy evaluation as AWS documents it, for one principal in one account (IAM user guide,
"Policy evaluation logic"): an explicit Deny in any applicable policy wins; otherwise an Allow in
the identity-based policies, or in the resource-based policy for this principal, allows; a KMS
key's policy must allow too ("Key policies in AWS KMS": "no principal ... has any permissions to a
KMS key unless ... the key policy allows it"); everything else is denied implicitly.

What is modelled: Action/NotAction, Resource/NotResource and Principal/NotPrincipal with
wildcards, policy variables (`${aws:userid}`, `${aws:PrincipalTag/k}`, ...), and the condition
operators String*, Arn*, Bool, Null, Numeric* with IfExists and the ForAllValues/ForAnyValue
qualifiers. An element outside that raises `Unmodelled`, so a policy is never judged by a guess.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ContextValue = str | Sequence[str]


class Unmodelled(ValueError):
    """A policy element or condition operator this evaluator does not model."""


@dataclass(frozen=True)
class Request:
    """One authorization request: who, which action on which resource, and its context keys."""

    principal_arn: str  # the role, e.g. arn:aws:iam::123456789012:role/path/name
    action: str  # e.g. s3:PutObject
    resource: str  # an ARN, or "*" for an action without resource types
    context: Mapping[str, ContextValue] = field(default_factory=dict)  # condition keys (any case)

    @property
    def account(self) -> str:
        return self.principal_arn.split(":")[4]

    def value(self, key: str) -> ContextValue | None:
        lowered = key.lower()
        for name, value in self.context.items():
            if name.lower() == lowered:
                return value
        if lowered == "aws:principalarn":
            return self.principal_arn
        if lowered == "aws:principalaccount":
            return self.account
        return None


@dataclass(frozen=True)
class Statement:
    """A policy statement and where it comes from (shown when it decides a request)."""

    body: Mapping[str, Any]
    source: str  # e.g. "role IntakeFunctionRole, policy IntakeFunctionRolePolicy0"

    def describe(self) -> str:
        sid = self.body.get("Sid")
        return f"{self.source}{f', statement {sid}' if sid else ''}"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # "allowed by ...", "explicitly denied by ...", "no identity-based policy allows ..."
    statement: Statement | None = None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


_VARIABLE = re.compile(r"\$\{([^}]+)\}")


class _Unresolved(Exception):
    """A policy variable whose key the request lacks: the element it is in does not match."""


def _substitute(pattern: str, request: Request) -> str:
    """`pattern` with its policy variables replaced ("Policy variables": `${*}`, `${?}` and `${$}`
    stand for the literal characters; a variable whose key is missing makes the element not match:
    "If the policy variable ... is not present in the request context, the ... element evaluates
    to false")."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in ("*", "?", "$"):
            return "\0" + name  # a literal, kept apart from the wildcard characters
        key, _, default = name.partition(", ")
        value = request.value(key.strip())
        if value is None:
            if default:
                return default.strip().strip("'")
            raise _Unresolved(key)
        if not isinstance(value, str):
            raise Unmodelled(f"multi-valued key {key} used as a policy variable")
        return value

    return _VARIABLE.sub(one, pattern)


def _like(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    """IAM's wildcard match (`*` any run, `?` one character), literals from `${*}`/`${?}` kept."""
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\0":
            parts.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        parts.append(".*" if char == "*" else "." if char == "?" else re.escape(char))
        index += 1
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return re.fullmatch("".join(parts), value, flags) is not None


def _action_matches(patterns: Iterable[str], action: str) -> bool:
    # "Action ... values are case-insensitive" (IAM JSON policy elements: Action).
    return any(fnmatch.fnmatchcase(action.lower(), p.lower()) for p in patterns)


def _resource_matches(patterns: Iterable[str], request: Request) -> bool:
    for pattern in patterns:
        try:
            resolved = _substitute(pattern, request)
        except _Unresolved:
            continue
        if resolved == "*" or _like(resolved, request.resource):
            return True
    return False


def _arn_like(pattern: str, value: str) -> bool:
    """ArnLike: each of the six colon-delimited parts matched on its own ("Amazon Resource Name
    (ARN) condition operators")."""
    pattern_parts, value_parts = pattern.split(":", 5), value.split(":", 5)
    if len(pattern_parts) != 6 or len(value_parts) != 6:
        return False
    return all(_like(p, v) for p, v in zip(pattern_parts, value_parts, strict=True))


_STRING_TESTS: dict[str, Callable[[str, str], bool]] = {
    "StringEquals": lambda p, v: p == v,
    "StringEqualsIgnoreCase": lambda p, v: p.lower() == v.lower(),
    "StringLike": _like,
    "ArnEquals": lambda p, v: p == v,
    "ArnLike": _arn_like,
    "Bool": lambda p, v: p.lower() == v.lower(),
    "NumericEquals": lambda p, v: float(v) == float(p),
    "NumericLessThan": lambda p, v: float(v) < float(p),
    "NumericLessThanEquals": lambda p, v: float(v) <= float(p),
    "NumericGreaterThan": lambda p, v: float(v) > float(p),
    "NumericGreaterThanEquals": lambda p, v: float(v) >= float(p),
}
_NEGATED = {
    "StringNotEquals": "StringEquals",
    "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase",
    "StringNotLike": "StringLike",
    "ArnNotEquals": "ArnEquals",
    "ArnNotLike": "ArnLike",
    "NumericNotEquals": "NumericEquals",
}


def _condition_entry_holds(operator: str, key: str, expected: Any, request: Request) -> bool:
    qualifier, _, base = operator.rpartition(":")
    if_exists = base.endswith("IfExists")
    base = base.removesuffix("IfExists")
    actual = request.value(key)
    policy_values = [str(v).lower() if isinstance(v, bool) else str(v) for v in _as_list(expected)]
    if base == "Null":
        # "Null ... true: the key is not present ... false: the key is present and not null."
        return (actual is None) == (policy_values[0].lower() == "true")
    if actual is None:
        # "If the key ... is not present in the request context, the values do not match" -- except
        # for the negated operators, which then hold; ...IfExists holds when the key is absent;
        # ForAllValues holds on an empty set ("Conditions with multiple context keys or values").
        return if_exists or base in _NEGATED or qualifier == "ForAllValues"
    try:
        resolved = [_substitute(v, request) for v in policy_values]
    except _Unresolved:
        return base in _NEGATED
    negated = base in _NEGATED
    test = _STRING_TESTS.get(_NEGATED.get(base, base))
    if test is None:
        raise Unmodelled(f"condition operator {operator}")
    values = [actual] if isinstance(actual, str) else list(actual)

    def matches(value: str) -> bool:
        return any(test(p, value) for p in resolved)

    if qualifier == "ForAllValues":
        holds = all(matches(v) for v in values)
    elif qualifier == "ForAnyValue":
        holds = any(matches(v) for v in values)
    elif qualifier:
        raise Unmodelled(f"condition qualifier {qualifier}")
    else:
        holds = any(matches(v) for v in values)
    # "a single negated matching condition operator ... values are evaluated using a logical NOR".
    return not holds if negated else holds


def conditions_hold(condition: Mapping[str, Mapping[str, Any]], request: Request) -> bool:
    """Operators and keys are ANDed, the values of one key ORed (NORed when negated)."""
    return all(
        _condition_entry_holds(operator, key, expected, request)
        for operator, entries in condition.items()
        for key, expected in entries.items()
    )


def _principal_matches(principal: Any, request: Request) -> str | None:
    """How a resource-based policy's Principal names the request's principal: "direct" (the role
    itself, or everyone), "account" (the account, which delegates to the identity-based policies:
    "the account ... principal ... delegates" -- IAM: "Cross-account policy evaluation logic" and
    "Key policies ... enable IAM policies"), or None."""
    if principal == "*":
        return "direct"
    if not isinstance(principal, Mapping):
        raise Unmodelled(f"principal {principal!r}")
    named: list[str] = []
    for kind, values in principal.items():
        if kind == "AWS":
            named += [str(v) for v in _as_list(values)]
        elif kind not in ("Service", "Federated", "CanonicalUser"):
            raise Unmodelled(f"principal kind {kind}")
    for value in named:
        if value in ("*", request.principal_arn):
            return "direct"
    for value in named:
        if value in (request.account, f"arn:aws:iam::{request.account}:root"):
            return "account"
    return None


def _applies(statement: Statement, request: Request, *, resource_based: bool) -> str | None:
    """None when the statement does not apply to the request, else how its principal matched."""
    body = statement.body
    how = "identity"
    if resource_based:
        if "NotPrincipal" in body:
            raise Unmodelled("NotPrincipal")
        matched = _principal_matches(body.get("Principal"), request)
        if matched is None:
            return None
        how = matched
    if "Action" in body:
        if not _action_matches(_as_list(body["Action"]), request.action):
            return None
    elif "NotAction" in body:
        if _action_matches(_as_list(body["NotAction"]), request.action):
            return None
    else:
        raise Unmodelled("a statement with neither Action nor NotAction")
    if "Resource" in body:
        if not _resource_matches(_as_list(body["Resource"]), request):
            return None
    elif "NotResource" in body:
        try:
            patterns = [_substitute(p, request) for p in _as_list(body["NotResource"])]
        except _Unresolved:
            return None
        if any(p == "*" or _like(p, request.resource) for p in patterns):
            return None
    elif not resource_based:
        raise Unmodelled("an identity-based statement without Resource")
    if "Condition" in body and not conditions_hold(body["Condition"], request):
        return None
    return how


def evaluate(
    request: Request,
    identity: Sequence[Statement],
    resource_based: Sequence[Statement] = (),
    *,
    resource_policy_required: bool = False,
) -> Decision:
    """AWS's decision for `request` (see the module docstring). `resource_policy_required`: the
    resource's own policy must allow (a KMS key policy), directly or by delegating to the account."""
    applying: list[tuple[Statement, str]] = []
    for statement in identity:
        how = _applies(statement, request, resource_based=False)
        if how is not None:
            applying.append((statement, how))
    for statement in resource_based:
        how = _applies(statement, request, resource_based=True)
        if how is not None:
            applying.append((statement, how))
    for statement, _how in applying:
        if statement.body.get("Effect") == "Deny":
            return Decision(False, f"explicitly denied by {statement.describe()}", statement)
    allows = [(s, how) for s, how in applying if s.body.get("Effect") == "Allow"]
    identity_allow = next((s for s, how in allows if how == "identity"), None)
    direct_allow = next((s for s, how in allows if how == "direct"), None)
    delegated = next((s for s, how in allows if how == "account"), None)
    if resource_policy_required:
        if direct_allow is not None:
            return Decision(True, f"allowed by {direct_allow.describe()}", direct_allow)
        if delegated is None:
            return Decision(False, f"the resource's policy does not allow {request.action} to this principal")
        if identity_allow is None:
            return Decision(False, f"no identity-based policy allows the {request.action} action")
        return Decision(True, f"allowed by {identity_allow.describe()}", identity_allow)
    if identity_allow is not None:
        return Decision(True, f"allowed by {identity_allow.describe()}", identity_allow)
    if direct_allow is not None:
        return Decision(True, f"allowed by {direct_allow.describe()}", direct_allow)
    return Decision(False, f"no identity-based policy allows the {request.action} action")


def statements_of(document: Mapping[str, Any], source: str) -> list[Statement]:
    return [Statement(body, source) for body in _as_list(document.get("Statement", []))]
