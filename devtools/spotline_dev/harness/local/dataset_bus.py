"""The preprocessing pipeline's side of the stack's dataset event bus (template.yaml,
DatasetEventBus): Dataset Ready and Training Requested events put there as a publisher principal,
who is judged first by the bus's policy from the template as SAM expands it, evaluated as IAM would
(moto keeps a bus policy but enforces none)."""

from __future__ import annotations

import json
from typing import Any, Protocol

from botocore.exceptions import ClientError

from spotline_dev.harness.local.permissions.checker import PermissionCheck
from spotline_dev.harness.local.permissions.policy import Decision, Request, Statement, evaluate

BUS = "DatasetEventBus"


class LocalStack(Protocol):
    """What this module reads of the local stack (spotline_dev.harness.local.handles.LocalStack)."""

    template: dict[str, Any]
    account: str
    physical: dict[str, str]
    attributes: dict[tuple[str, str | None], str]
    permissions: PermissionCheck | None

    def client(self, service: str) -> Any: ...


def default_publisher(stack: LocalStack) -> str:
    """A principal the stack's first DatasetEventPublishers pattern names: its wildcards filled in
    (the account part with the stack's account)."""
    pattern = str(stack.template["Parameters"]["DatasetEventPublishers"]["Default"]).split(",")[0]
    head, account, resource = pattern.rsplit(":", 2)
    account = stack.account if any(c in account for c in "*?") or not account else account
    return f"{head}:{account}:{resource.replace('*', 'publisher').replace('?', 'p')}"


def publisher_decision(stack: LocalStack, principal_arn: str) -> Decision:
    """IAM's decision on `principal_arn` putting events on the bus, its identity policy allowing
    events:PutEvents there. For another account's principal the bus's policy must allow it too (IAM,
    "Cross-account policy evaluation logic": "The resource-based policy in the trusting account must
    specify the principal of the trusted account")."""
    assert stack.permissions is not None
    bus_arn = stack.attributes[(BUS, "Arn")]
    identity = Statement(
        {"Effect": "Allow", "Action": "events:PutEvents", "Resource": bus_arn}, f"identity policy of {principal_arn}"
    )
    request = Request(principal_arn, "events:PutEvents", bus_arn)
    return evaluate(
        request,
        [identity],
        stack.permissions.permissions.resource_policies.for_resource(bus_arn),
        resource_policy_required=request.account != stack.account,
    )


def put_dataset_event(
    stack: LocalStack, detail_type: str, detail: Any, *, publisher: str | None = None, times: int = 1
) -> None:
    """Put a "Dataset Ready" or "Training Requested" event (`times` identical entries: a delivery
    repeated) on the stack's dataset bus as `publisher` (default: `default_publisher`), with the
    source the template's DatasetEventSource names. A publisher the bus's policy denies is answered
    AccessDeniedException, as AWS answers an unauthorized call, and nothing is put."""
    principal = publisher or default_publisher(stack)
    decision = publisher_decision(stack, principal)
    bus_arn = stack.attributes[(BUS, "Arn")]
    if not decision.allowed:
        message = (
            f"User: {principal} is not authorized to perform: events:PutEvents on resource: {bus_arn} "
            f"because {decision.reason}"
        )
        error: Any = {"Error": {"Code": "AccessDeniedException", "Message": message}}
        raise ClientError(error | {"ResponseMetadata": {"HTTPStatusCode": 400}}, "PutEvents")
    entry = {
        "Source": str(stack.template["Parameters"]["DatasetEventSource"]["Default"]),
        "DetailType": detail_type,
        "Detail": detail if isinstance(detail, str) else json.dumps(detail),
        "EventBusName": stack.physical[BUS],
    }
    answer = stack.client("events").put_events(Entries=[entry] * times)
    if answer.get("FailedEntryCount"):
        raise RuntimeError(f"PutEvents refused {detail_type}: {answer['Entries']}")
