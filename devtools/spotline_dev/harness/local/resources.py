"""The local stack's resources, created from `template.yaml` as CloudFormation would: buckets,
queues (Batch queues in the stand-in, with the service environment's capacity), tables, topics,
functions (the real handlers, with their environment), custom resources (their function's real
handler answering a Create request: the queue's quota shares, before any job), state machines
(the real definition with its substitutions), event buses (with their policy) and EventBridge
rules (each with an SQS tap, since moto cannot invoke Lambda targets)."""

from __future__ import annotations

import importlib.util
import json
import os
import zipfile
from contextlib import ExitStack
from io import BytesIO
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING
from unittest import mock

from spotline_dev.harness.local.custom_resources import create_custom_resources, parameter_overrides, with_parameters
from spotline_dev.harness.local.handles import STACK
from spotline_dev.harness.local.template import (
    PROJECT_ROOT,
    Resolver,
    function_environment,
    queue_capacity,
    resources_of_type,
)

if TYPE_CHECKING:
    from spotline_dev.harness.local.handles import Handler, LocalStack


def _zip_stub() -> bytes:
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "# code runs in-process in the local stack\n")
    return buffer.getvalue()


def _load_handler(code_uri: str, handler: str) -> Handler:
    module_file, _, attribute = handler.rpartition(".")
    path = PROJECT_ROOT / code_uri / f"{module_file}.py"
    name = f"spotline_functions.{Path(code_uri).name}.{module_file}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader, path
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, attribute)  # type: ignore[no-any-return]


def create_resources(
    stack: LocalStack,
    handlers: dict[str, Handler],
    exits: ExitStack,
    environment: dict[str, str],
) -> None:
    """Create the template's resources in moto and the stand-in; `handlers` receives each function's
    handler by function name."""
    template, physical = stack.template, stack.physical
    iam, s3, sqs, sns = (stack.client(s) for s in ("iam", "s3", "sqs", "sns"))
    arns = stack.attributes

    def lookup(logical: str, attribute: str | None) -> str:
        if (logical, attribute) in arns:
            return arns[(logical, attribute)]
        if attribute == "Name" or attribute is None:
            return physical[logical]
        raise KeyError(f"{logical}.{attribute} is not known to the local stack")

    resolver = Resolver(
        template,
        lookup,
        {
            "AWS::Region": stack.region,
            "AWS::AccountId": stack.account,
            "AWS::StackName": STACK,
            "AWS::Partition": "aws",
        },
    )

    for logical in resources_of_type(template, "AWS::S3::Bucket"):
        name = f"{STACK}-{logical.lower()}"
        s3.create_bucket(Bucket=name)
        props = template["Resources"][logical]["Properties"]
        if props.get("VersioningConfiguration", {}).get("Status") == "Enabled":
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        if props.get("NotificationConfiguration", {}).get("EventBridgeConfiguration", {}).get("EventBridgeEnabled"):
            s3.put_bucket_notification_configuration(
                Bucket=name, NotificationConfiguration={"EventBridgeConfiguration": {}}
            )
        physical[logical] = name
        arns[(logical, "Arn")] = f"arn:aws:s3:::{name}"

    for logical in resources_of_type(template, "AWS::SQS::Queue"):
        url = sqs.create_queue(QueueName=f"{STACK}-{logical}")["QueueUrl"]
        physical[logical] = url
        arns[(logical, "Arn")] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]

    for kind in ("AWS::Batch::ServiceEnvironment", "AWS::Batch::SchedulingPolicy"):
        for logical in resources_of_type(template, kind):
            physical[logical] = (
                f"arn:aws:batch:{stack.region}:{stack.account}:{kind.rsplit(':', 1)[-1].lower()}/{STACK}-{logical}"
            )
    for logical, queue in resources_of_type(template, "AWS::Batch::JobQueue").items():
        policy = queue["Properties"].get("SchedulingPolicyArn")
        capacity = stack.queue_capacities[logical] = queue_capacity(template, queue, resolver)
        name = queue["Properties"].get("JobQueueName")  # as CloudFormation names it, else as it would
        settings = stack.queue_settings[logical] = {
            "name": str(resolver.resolve(name)) if name else f"{STACK}-{logical}",
            "scheduling_policy_arn": resolver.resolve(policy) if policy else None,
            "capacity": capacity,
            "time_limits": [
                {
                    "reason": action["Reason"],
                    "state": action["State"],
                    "maxTimeSeconds": int(resolver.resolve(action["MaxTimeSeconds"])),
                    "action": action["Action"],
                }
                for action in queue["Properties"].get("JobStateTimeLimitActions") or []
            ],
        }
        physical[logical] = arns[(logical, "JobQueueArn")] = stack.standin.register_queue(
            settings["name"],
            scheduling_policy_arn=settings["scheduling_policy_arn"],
            capacity=capacity,
            time_limits=settings["time_limits"],
        )

    dynamodb = stack.client("dynamodb")
    for logical, table in resources_of_type(template, "AWS::DynamoDB::Table").items():
        props = table["Properties"]
        name = f"{STACK}-{logical}"
        described = dynamodb.create_table(
            TableName=name,
            BillingMode=props.get("BillingMode", "PAY_PER_REQUEST"),
            AttributeDefinitions=props["AttributeDefinitions"],
            KeySchema=props["KeySchema"],
        )
        ttl = props.get("TimeToLiveSpecification")
        if ttl:
            dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
        physical[logical] = name
        arns[(logical, "Arn")] = described["TableDescription"]["TableArn"]

    for logical in resources_of_type(template, "AWS::SNS::Topic"):
        physical[logical] = arns[(logical, "TopicArn")] = sns.create_topic(Name=f"{STACK}-{logical}")["TopicArn"]

    role = iam.create_role(
        RoleName=f"{STACK}-execution",
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "sts:AssumeRole",
                        "Principal": {"Service": ["lambda.amazonaws.com", "states.amazonaws.com"]},
                    }
                ],
            }
        ),
    )["Role"]["Arn"]

    functions = resources_of_type(template, "AWS::Serverless::Function")
    machines = resources_of_type(template, "AWS::Serverless::StateMachine")
    for logical in functions:
        physical[logical] = f"{STACK}-{logical}"
        arns[(logical, "Arn")] = f"arn:aws:lambda:{stack.region}:{stack.account}:function:{physical[logical]}"
    for logical, machine in machines.items():
        name = resolver.resolve(machine["Properties"].get("Name")) or f"{STACK}-{logical}"
        physical[logical] = arns[(logical, "Arn")] = (
            f"arn:aws:states:{stack.region}:{stack.account}:stateMachine:{name}"
        )
        arns[(logical, "Name")] = name

    # One process, one environment: the union of every function's variables (they must agree).
    merged: dict[str, str] = {}
    for logical in functions:
        for key, value in resolver.resolve(function_environment(template, logical)).items():
            if merged.get(key, value) != value:
                raise ValueError(
                    f"environment variable {key} differs between functions; the local stack shares one process"
                )
            merged[key] = str(value)
    merged.update(environment)
    exits.enter_context(mock.patch.dict(os.environ, merged))

    lambda_client = stack.client("lambda")
    for logical, resource in functions.items():
        props = resource["Properties"]
        lambda_client.create_function(
            FunctionName=physical[logical],
            Runtime="python3.13",
            Role=role,
            Handler=props["Handler"],
            Code={"ZipFile": _zip_stub()},
        )
        handlers[physical[logical]] = _load_handler(props["CodeUri"], props["Handler"])
        stack.functions[logical] = physical[logical]

    # Custom resources see the local stack's parameters (the queue's capacity).
    local_parameters = with_parameters(template, parameter_overrides(template, environment))
    create_custom_resources(
        stack,
        Resolver(local_parameters, lookup, resolver.pseudo),
        handlers,
        arns,
        stack_name=STACK,
        stack_id=f"arn:aws:cloudformation:{stack.region}:{stack.account}:stack/{STACK}/local",
    )

    sfn = stack.client("stepfunctions")
    for logical, resource in machines.items():
        props = resource["Properties"]
        definition = (PROJECT_ROOT / props["DefinitionUri"]).read_text()
        for key, value in resolver.resolve(props.get("DefinitionSubstitutions", {})).items():
            definition = definition.replace("${" + key + "}", str(value))
        sfn.create_state_machine(
            name=physical[logical].rsplit(":", 1)[-1],
            definition=definition,
            roleArn=role,
            type=props.get("Type", "STANDARD"),
        )

    events = stack.client("events")
    for logical, bus in resources_of_type(template, "AWS::Events::EventBus").items():
        props = resolver.resolve(bus["Properties"])
        physical[logical] = props["Name"]
        arns[(logical, "Arn")] = events.create_event_bus(Name=props["Name"], Description=props.get("Description", ""))[
            "EventBusArn"
        ]
        if "Policy" in props:  # kept for DescribeEventBus; put_dataset_event judges a publisher by it
            events.put_permission(EventBusName=props["Name"], Policy=json.dumps(props["Policy"]))
    for logical, resource in functions.items():
        for event_id, event in resource["Properties"].get("Events", {}).items():
            if event["Type"] != "EventBridgeRule":
                continue
            rule = f"{logical}{event_id}"
            bus = resolver.resolve(event["Properties"].get("EventBusName", "default"))
            pattern = resolver.resolve(event["Properties"]["Pattern"])
            events.put_rule(Name=rule, EventBusName=bus, EventPattern=json.dumps(pattern))
            tap = sqs.create_queue(QueueName=f"{STACK}-tap-{rule}")["QueueUrl"]
            tap_arn = sqs.get_queue_attributes(QueueUrl=tap, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            events.put_targets(Rule=rule, EventBusName=bus, Targets=[{"Id": "tap", "Arn": tap_arn}])
            stack.rule_taps[tap] = (logical, rule)
            stack.rule_sources[rule] = tuple(pattern.get("source", ()))
            arns[(rule, "Arn")] = f"arn:aws:events:{stack.region}:{stack.account}:rule/{rule}"

    for key, output in template.get("Outputs", {}).items():
        stack.outputs[key] = (str(resolver.resolve(output["Value"])), str(output.get("Description", "")))
