"""CloudFormation's DescribeStacks for the local stack, so that the commands for a deployed
stack (`spotline submit/runs/status/logs/cancel --stack NAME`) run against it unchanged: the
stack's outputs as the template declares them (resolved against the local names) and its
parameters (the template's defaults, TeamPolicy as the functions read it).

moto's CloudFormation parses whole templates (and needs extra packages to); the local stack
only needs the description, answered at botocore's `before-call` hook.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

import boto3

from spotline_dev.harness.local.network import network_parameters

if TYPE_CHECKING:
    from spotline_dev.harness.local.handles import LocalStack


class _Answered:
    """The part of botocore's HTTP response `_make_api_call` reads when a hook answers."""

    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.headers: dict[str, str] = {}


def install_stack_description(stack: LocalStack, name: str, *, region: str, account: str, created: datetime) -> None:
    """Answer DescribeStacks for `name` (by name, by id, or no name) from now on, for the
    clients of the default session created after this call."""

    def describe(params: dict[str, Any], **_: Any) -> tuple[_Answered, dict[str, Any]]:
        asked = (params.get("body") or {}).get("StackName")  # the serialized request (query protocol)
        there = urlsplit(str(params.get("url") or "")).hostname or ""  # cloudformation.<region>.amazonaws.com
        where = next((r for r in (region, *stack.peers) if f".{r}." in f".{there}."), region)
        stack_id = f"arn:aws:cloudformation:{where}:{account}:stack/{name}/local"
        if asked not in (None, name, stack_id):
            error = {"Code": "ValidationError", "Message": f"Stack with id {asked} does not exist"}
            return _Answered(400), {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}
        return _Answered(200), {"Stacks": [description(stack, name, stack_id, created, where)]}

    boto3.DEFAULT_SESSION.events.register(  # type: ignore[union-attr]
        "before-call.cloudformation.DescribeStacks",
        cast(Callable[..., None], describe),  # botocore-stubs type hooks as returning None; this one answers
        unique_id=f"local-describe-stacks-{id(stack)}",
    )


def description(
    stack: LocalStack, name: str, stack_id: str, created: datetime, region: str | None = None
) -> dict[str, Any]:
    """The stack as DescribeStacks gives it; in a peer `region`, the same stack there: its own
    network (TrainingSubnetIds, TrainingSecurityGroupIds), or none."""
    parameters = {key: str(value.get("Default", "")) for key, value in stack.template.get("Parameters", {}).items()}
    if region not in (None, stack.region):
        network = stack.peer_networks.get(str(region))
        parameters |= (
            network_parameters(network) if network else {"TrainingSubnetIds": "", "TrainingSecurityGroupIds": ""}
        )
    return {
        "StackName": name,
        "StackId": stack_id,
        "CreationTime": created,
        "StackStatus": "CREATE_COMPLETE",
        "Parameters": [{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
        "Outputs": [
            {"OutputKey": key, "OutputValue": value, "Description": description}
            for key, (value, description) in stack.outputs.items()
        ],
    }
