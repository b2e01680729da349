"""CloudFormation's DescribeStacks for the local stack, so that the commands for a deployed
stack (`spotline submit/runs/status/logs/cancel --stack NAME`) run against it unchanged: the
stack's outputs as the template declares them (resolved against the local names) and its
parameters (the template's defaults, TeamPolicy as the functions read it).

moto's CloudFormation parses whole templates (and needs extra packages to); the local stack
only needs the description, answered at botocore's `before-send` hook.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape

import boto3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.compat import HTTPHeaders
from moto.core.serialize import get_serializer_class
from moto.core.utils import get_service_model

from spotline_dev.harness.local.network import network_parameters
from spotline_dev.harness.standin.base.http_answers import ANSWERED_HOST, RawBody

if TYPE_CHECKING:
    from spotline_dev.harness.local.handles import LocalStack


def install_stack_description(stack: LocalStack, name: str, *, region: str, account: str, created: datetime) -> None:
    """Answer DescribeStacks for `name` (by name, by id, or no name) from now on, for the
    clients of the default session created after this call, and for requests the local server
    routes through it (`spotline local`): at `before-send`, with the bytes CloudFormation sends."""

    def describe(request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        body = request.body.decode() if isinstance(request.body, bytes) else str(request.body or "")
        form = {key: values[0] for key, values in parse_qs(body).items()}
        if form.get("Action") != "DescribeStacks":
            return None
        asked = form.get("StackName")
        there = urlsplit(str(request.url)).hostname or ""  # cloudformation.<region>.amazonaws.com
        where = next((r for r in (region, *stack.peers) if f".{r}." in f".{there}."), region)
        stack_id = f"arn:aws:cloudformation:{where}:{account}:stack/{name}/local"
        if asked not in (None, name, stack_id):
            # CloudFormation's answer for a stack it does not have (DescribeStacks: ValidationError).
            return _answered(request, 400, _error("ValidationError", f"Stack with id {asked} does not exist"))
        operation = get_service_model("cloudformation").operation_model("DescribeStacks")
        serialized = get_serializer_class("cloudformation", "query")(operation).serialize(
            {"Stacks": [description(stack, name, stack_id, created, where)]}
        )
        return _answered(request, int(serialized["status_code"]), str(serialized["body"]).encode())

    boto3.DEFAULT_SESSION.events.register_first(  # type: ignore[union-attr]
        "before-send.cloudformation.DescribeStacks",
        cast(Callable[..., None], describe),  # botocore-stubs type hooks as returning None; this one answers
        unique_id=f"local-describe-stacks-{id(stack)}",
    )


def _error(code: str, message: str) -> bytes:
    return (
        '<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">'
        f"<Error><Type>Sender</Type><Code>{code}</Code><Message>{escape(message)}</Message></Error>"
        "<RequestId>local-describe-stacks</RequestId></ErrorResponse>"
    ).encode()


def _answered(request: AWSPreparedRequest, status: int, body: bytes) -> AWSResponse:
    """The response, with the request pointed where moto's stubber (also at `before-send`) skips it."""
    url = request.url
    request.url = urlsplit(url)._replace(netloc=ANSWERED_HOST).geturl()
    headers = HTTPHeaders()
    headers["Content-Type"] = "text/xml"
    headers["Content-Length"] = str(len(body))
    return AWSResponse(url, status, headers, RawBody(body))


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
