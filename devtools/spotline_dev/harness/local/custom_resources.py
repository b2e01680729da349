"""The template's custom resources in the local stack, created as CloudFormation creates them:
the real handler of the resource's ServiceToken function gets a Create request of
CloudFormation's shape (ResourceProperties with every scalar as a string, a presigned-looking
HTTPS ResponseURL), and its answer, the one PUT `spotline.aws.common.custom_resource` makes, is caught
instead of sent. A FAILED answer fails the stack's creation with the handler's Reason.

Parameters take the local stack's values: a parameter a function reads through an environment
variable takes the variable's override (the stack's own parameters, TrainingCapacity among them,
are already its template's defaults), so a resource follows what the test or sandbox gave the stack.

CloudFormation invokes the function itself (asynchronously); the local stack calls the handler
in-process, as its other functions, but outside `LocalStack.invocations`, which records what
the workflow and the events invoked. The handler's cached boto3 clients are dropped afterwards:
in AWS it runs in a Lambda process of its own, and hooks a test registers on the session later
(kill_after_call, recorders) must reach the clients the other functions create.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from io import BytesIO
from typing import TYPE_CHECKING, Any
from unittest import mock
from urllib.request import Request

import spotline.aws.common.clients as spotline_clients
from spotline_dev.harness.local.lambda_context import LocalLambdaContext
from spotline_dev.harness.local.permissions.checker import running
from spotline_dev.harness.local.template import Resolver, function_environment, resources_of_type

if TYPE_CHECKING:
    from spotline_dev.harness.local.handles import Handler, LocalStack

RESPONSE_URL = (
    "https://cloudformation-custom-resource-response-local.s3.amazonaws.com/{stack}/{logical}?X-Amz-Signature=local"
)
OPENER = "spotline.aws.common.custom_resource.urlopen"  # the one network call of the protocol adapter


class CustomResourceFailed(RuntimeError):
    """A custom resource answered FAILED: CloudFormation would fail (and roll back) the stack."""


def custom_resources(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: resource
        for name, resource in template["Resources"].items()
        if resource["Type"].startswith("Custom::") or resource["Type"] == "AWS::CloudFormation::CustomResource"
    }


def parameter_overrides(template: dict[str, Any], environment: Mapping[str, str]) -> dict[str, str]:
    """The parameters whose function variables the local stack overrides (TRAINING_CAPACITY: TrainingCapacity)."""
    overrides: dict[str, str] = {}
    for logical in resources_of_type(template, "AWS::Serverless::Function"):
        for variable, value in function_environment(template, logical).items():
            if isinstance(value, dict) and set(value) == {"Ref"} and variable in environment:
                overrides[str(value["Ref"])] = environment[variable]
    return overrides


def with_parameters(template: dict[str, Any], overrides: Mapping[str, str]) -> dict[str, Any]:
    """A view of the template whose parameters default to the local stack's values."""
    parameters = {
        name: {**spec, "Default": overrides[name]} if name in overrides else spec
        for name, spec in template.get("Parameters", {}).items()
    }
    return {**template, "Parameters": parameters}


def as_cloudformation_sends(value: Any) -> Any:
    """CloudFormation passes every scalar of ResourceProperties as a string (true -> "true")."""
    if isinstance(value, dict):
        return {k: as_cloudformation_sends(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_cloudformation_sends(v) for v in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def create_custom_resources(
    stack: LocalStack,
    resolver: Resolver,
    handlers: Mapping[str, Handler],
    arns: dict[tuple[str, str | None], str],
    *,
    stack_name: str,
    stack_id: str,
) -> None:
    """Send each custom resource's Create request to its function's handler, in template order;
    record its PhysicalResourceId (Ref) and Data (Fn::GetAtt)."""
    by_arn = {arns[(logical, "Arn")]: logical for logical in stack.functions if (logical, "Arn") in arns}
    for logical, resource in custom_resources(stack.template).items():
        properties = as_cloudformation_sends(resolver.resolve(resource["Properties"]))
        token = properties["ServiceToken"]
        function = by_arn.get(token)
        if function is None:
            raise CustomResourceFailed(f"{logical}: ServiceToken {token} is not a function of the local stack")
        event = {
            "RequestType": "Create",
            "ServiceToken": token,
            "ResponseURL": RESPONSE_URL.format(stack=stack_name, logical=logical),
            "StackId": stack_id,
            "RequestId": f"local-create-{logical}",
            "ResourceType": resource["Type"],
            "LogicalResourceId": logical,
            "ResourceProperties": properties,
        }
        answers: list[dict[str, Any]] = []
        name = stack.functions[function]
        context = LocalLambdaContext(
            name,
            token,
            aws_request_id="local-cloudformation",
            remaining_millis=120_000,  # its template Timeout
        )
        spotline_clients.reset_clients()  # its own Lambda process: fresh clients, and not the others' after
        try:
            with mock.patch(OPENER, _catching(answers)), running(function):
                handlers[name](event, context)
        finally:
            spotline_clients.reset_clients()
        if len(answers) != 1:
            raise CustomResourceFailed(f"{logical}: {function} answered {len(answers)} times, not once")
        (answer,) = answers
        if answer.get("Status") != "SUCCESS":
            raise CustomResourceFailed(f"{logical} CREATE_FAILED: {answer.get('Reason')}")
        stack.physical[logical] = str(answer["PhysicalResourceId"])
        for key, value in (answer.get("Data") or {}).items():
            arns[(logical, key)] = str(value)


def _catching(answers: list[dict[str, Any]]) -> Callable[..., BytesIO]:
    def urlopen(request: Request, timeout: float | None = None) -> BytesIO:
        assert request.get_method() == "PUT", request.get_method()
        assert isinstance(request.data, bytes)
        answers.append(json.loads(request.data))
        return BytesIO(b"")

    return urlopen
