"""Every AWS call a Lambda of the local stack makes, checked as IAM would check it: against the
function's role in the expanded template and the resource policies that apply (bucket, key, topic
and queue policies), with the dependent actions the call's parameters add, in the call's region.
A call its role would not allow is answered as AWS answers it (AccessDenied, with AWS's message)
and recorded; the stack fails at its end, naming the function, the call and the missing action or
the denying statement, so a handler that swallows the error cannot hide it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from botocore.exceptions import ClientError

from spotline_dev.harness.local.permissions.calls import Call, ContextValue, Need, UnknownCall, needs_of
from spotline_dev.harness.local.permissions.policy import Decision, Request, evaluate
from spotline_dev.harness.local.permissions.roles import StackPermissions, stack_permissions


class _Stack(Protocol):
    """What the check reads of the local stack (spotline_dev.harness.local.handles.LocalStack)."""

    region: str
    account: str
    template: dict[str, Any]

    def resource_tags(self, arn: str) -> dict[str, str] | None: ...

    def role_arn(self, name: str) -> str | None: ...


_RUNNING: ContextVar[str | None] = ContextVar("permission_check_function", default=None)
CHECKED: set[str] = set()
"""The functions whose calls were checked in this process (the test suite holds it to every function)."""


def running_function() -> str | None:
    """The logical id of the function whose handler runs in this thread now, if any."""
    return _RUNNING.get()


@contextmanager
def running(function_logical_id: str | None) -> Iterator[None]:
    """AWS calls made inside are made by this function's role."""
    token = _RUNNING.set(function_logical_id)
    try:
        yield
    finally:
        _RUNNING.reset(token)


@dataclass(frozen=True)
class Denial:
    function: str
    call: str
    need: str
    reason: str

    def __str__(self) -> str:
        return f"{self.function}: {self.call} needs {self.need}: {self.reason}"


@dataclass
class PermissionCheck:
    """The check of one local stack (`LocalStack.permissions`)."""

    load: Callable[[], StackPermissions]  # the roles, resolved once the stack's resources exist
    account: str
    resource_tags: Callable[[str], Mapping[str, str] | None]
    role_arn: Callable[[str], str | None]  # a role's ARN with its path, by name (IAM calls take names)
    enforce: bool = True  # raise at the stack's end when a call was denied
    calls: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)  # function -> (service, op, region)
    denials: list[Denial] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    _decisions: dict[tuple[str, Need, tuple[tuple[str, ContextValue], ...]], Decision] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _permissions: StackPermissions | None = None

    @property
    def permissions(self) -> StackPermissions:
        if self._permissions is None:
            self._permissions = self.load()
        return self._permissions

    # --- the hooks ----------------------------------------------------------------------------

    def watch(self, client: Any) -> Any:
        """Check the calls `client` makes while a function runs (a client of the layer's)."""
        client.meta.events.register("before-parameter-build", self.on_call)
        client.meta.events.register("after-call.s3", self.on_s3_answer)
        return client

    def on_call(self, params: Mapping[str, Any], model: Any, context: Mapping[str, Any], **_: Any) -> None:
        function = _RUNNING.get()
        if function is None:
            return  # a test, the stand-in or the harness: not a function's role
        if model.service_model.service_name == "iam" and params.get("RoleName"):
            params = {**params, "RoleName": self.role_arn(str(params["RoleName"])) or params["RoleName"]}
        call = Call(
            model.service_model.service_name, model.name, params, str(context.get("client_region")), self.account
        )
        if call.service == "s3" and params.get("Bucket") and isinstance(context, dict):
            context["permission_check_bucket"] = str(params["Bucket"])  # for on_s3_answer
        with self._lock:
            self.calls.setdefault(function, set()).add((call.service, call.operation, call.region))
            CHECKED.add(function)
        denied = self.check(function, call)
        if denied is not None:
            raise _access_denied(call, denied, self.permissions.principals[function].arn)

    def on_s3_answer(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: Mapping[str, Any], **_: Any
    ) -> None:
        """S3 API reference, HeadObject and GetObject, "Permissions": "If the object you request
        doesn't exist, the error that Amazon S3 returns depends on whether you also have the
        s3:ListBucket permission ... If you don't have the s3:ListBucket permission, Amazon S3
        returns an HTTP status code 403 Forbidden error." A read of a missing key by a role
        without it is answered (and recorded) as that 403."""
        function = _RUNNING.get()
        if function is None or model.name not in ("HeadObject", "GetObject") or http_response.status_code != 404:
            return
        bucket = str(context.get("permission_check_bucket", ""))
        need = Need("s3:ListBucket", f"arn:aws:s3:::{bucket}", (), "a missing key answers 404 only with it")
        decision = self.decide(function, need)
        if decision.allowed:
            return
        denial = Denial(
            function,
            f"s3.{model.name} of a missing key",
            need.describe(),
            "it would answer 403, not 404: " + decision.reason,
        )
        with self._lock:
            self.denials.append(denial)
        parsed["Error"] = {"Code": "403" if model.name == "HeadObject" else "AccessDenied", "Message": "Forbidden"}
        parsed.setdefault("ResponseMetadata", {})["HTTPStatusCode"] = 403

    def check(self, function: str, call: Call) -> Denial | None:
        """The first of the call's needs its role does not meet (recorded), else None."""
        try:
            needs = needs_of(call)
        except UnknownCall as exc:
            with self._lock:
                self.unknown.append(f"{function}: {exc}")
            return None
        needs += self._encryption_needs(call)
        for need in needs:
            decision = self.decide(function, need)
            if not decision.allowed:
                denial = Denial(function, call.describe(), need.describe(), decision.reason)
                with self._lock:
                    self.denials.append(denial)
                return denial
        return None

    def decide(self, function: str, need: Need) -> Decision:
        tags = self._resource_tag_context(need.resource)
        key = (function, need, tags)
        if key in self._decisions:
            return self._decisions[key]
        principal = self.permissions.principals[function]
        context: dict[str, ContextValue] = {
            "aws:SecureTransport": "true",
            "aws:userid": f"AROALOCALSTACK{principal.role_logical.upper()}:{function}",
            **{f"aws:PrincipalTag/{k}": v for k, v in principal.tags.items()},
            **dict(need.context),
            **dict(tags),
        }
        if need.resource.startswith("arn:aws:s3:::") or need.resource.count(":") >= 5:
            owner = need.resource.split(":")[4] if not need.resource.startswith("arn:aws:s3:::") else self.account
            context.setdefault("aws:ResourceAccount", owner or self.account)
        request = Request(principal.arn, need.action, need.resource, context)
        policies = self.permissions.resource_policies
        decision = evaluate(
            request,
            principal.statements,
            policies.for_resource(need.resource),
            resource_policy_required=need.resource in policies.keys,
        )
        self._decisions[key] = decision
        return decision

    # --- what the stack adds to a call --------------------------------------------------------

    def _encryption_needs(self, call: Call) -> list[Need]:
        """SNS developer guide, "Encryption at rest", key management: publishing to a topic
        encrypted with a customer managed key needs kms:GenerateDataKey* and kms:Decrypt on it
        ("the publisher must have the kms:GenerateDataKey* and kms:Decrypt permissions"), asked
        through SNS (kms:ViaService)."""
        if call.service != "sns" or call.operation != "Publish":
            return []
        key = self.permissions.resource_policies.topic_keys.get(str(call.params.get("TopicArn")))
        if key is None:
            return []
        context = (("kms:CallerAccount", self.account), ("kms:ViaService", f"sns.{call.region}.amazonaws.com"))
        why = "dependent: the topic is encrypted with this key"
        return [Need(action, key, context, why) for action in ("kms:GenerateDataKey", "kms:Decrypt")]

    def _resource_tag_context(self, arn: str) -> tuple[tuple[str, ContextValue], ...]:
        tags = self.resource_tags(arn) if arn != "*" else None
        if not tags:
            return ()
        service = arn.split(":")[2]
        keys: dict[str, str] = {}
        for key, value in tags.items():
            keys[f"aws:ResourceTag/{key}"] = value
            keys[f"{service}:ResourceTag/{key}"] = value  # e.g. sagemaker:ResourceTag/<key>
        return tuple(sorted(keys.items()))

    # --- the verdict --------------------------------------------------------------------------

    def problems(self) -> list[str]:
        return [str(d) for d in dict.fromkeys(self.denials)] + list(dict.fromkeys(self.unknown))

    def assert_allowed(self) -> None:
        problems = self.problems()
        if problems and self.enforce:
            raise AssertionError(
                "AWS calls the functions' roles would not allow (template.yaml):\n  " + "\n  ".join(problems)
            )


def _access_denied(call: Call, denial: Denial, role_arn: str) -> ClientError:
    """AWS's answer to a denied call: S3 says AccessDenied, the JSON services AccessDeniedException;
    the message names the principal, action and resource (IAM user guide, "Troubleshoot access
    denied error messages")."""
    action, _, resource = denial.need.partition(" on ")
    session = role_arn.replace(":iam::", ":sts::").replace(":role/", ":assumed-role/") + f"/{denial.function}"
    on = resource.split(" (")[0]
    message = f"User: {session} is not authorized to perform: {action} on resource: {on} because {denial.reason}"
    code = "AccessDenied" if call.service == "s3" else "AccessDeniedException"
    answer: Any = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 403}}
    return ClientError(answer, call.operation)


def install_permission_check(stack: _Stack, lookup: Callable[[str, str | None], str]) -> PermissionCheck:
    """The check of the stack's functions' calls: `watch` each client the layer makes (the test
    harness's own clients, `LocalStack.client`, are not a function's); `running` names the function."""
    pseudo = {
        "AWS::Region": stack.region,
        "AWS::AccountId": stack.account,
        "AWS::StackName": "spotline-local",
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
    }
    return PermissionCheck(
        lambda: stack_permissions(stack.template, lookup, pseudo), stack.account, stack.resource_tags, stack.role_arn
    )
