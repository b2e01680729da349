"""The principals and resource policies of the deployed stack, from the template as CloudFormation
receives it: SAM's own transform (samtranslator, as `sam deploy` runs it) turns each function's
`Policies` into its execution role, then the intrinsics are resolved against the local stack's
names (the local stack's account, region and physical names)."""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from samtranslator.translator.transform import transform

from spotline_dev.harness.local.permissions.policy import Statement, statements_of
from spotline_dev.harness.local.template import TEMPLATE_PATH, Resolver, load_template

# The AWS-managed policies SAM attaches to a function's role (IAM, "AWS managed policies":
# AWSLambdaBasicExecutionRole and AWSXrayWriteOnlyAccess, their documents as AWS publishes them).
MANAGED_POLICIES: dict[str, dict[str, Any]] = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": "*",
            }
        ],
    },
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess": {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [
                    "xray:PutTraceSegments",
                    "xray:PutTelemetryRecords",
                    "xray:GetSamplingRules",
                    "xray:GetSamplingTargets",
                    "xray:GetSamplingStatisticSummaries",
                ],
                "Resource": ["*"],
            }
        ],
    },
}

_PACKAGED = {"CodeUri": "s3://packaged/code.zip", "DefinitionUri": "s3://packaged/definition.json"}


class _ManagedPolicies:
    def load(self) -> dict[str, str]:
        return {arn.rsplit("/", 1)[-1]: arn for arn in MANAGED_POLICIES}


@functools.lru_cache(maxsize=4)
def _expanded(path: Path, mtime_ns: int) -> dict[str, Any]:
    template = load_template(path)
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        for key, uri in _PACKAGED.items():  # as `sam package` leaves them
            if key in properties:
                properties[key] = uri
        if "ContentUri" in properties:
            properties["ContentUri"] = "s3://packaged/layer.zip"
    with mock.patch.dict(os.environ, {"AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}):
        return transform(template, {}, _ManagedPolicies())  # type: ignore[no-any-return]


def expanded_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    """The template after SAM's transform, parsed once per version of the file (a copy each time)."""
    return copy.deepcopy(_expanded(path, path.stat().st_mtime_ns))


@dataclass(frozen=True)
class Principal:
    """A function's execution role as IAM sees it."""

    function: str  # logical id, e.g. IntakeFunction
    role_logical: str
    arn: str
    tags: Mapping[str, str]
    statements: tuple[Statement, ...]


@dataclass
class ResourcePolicies:
    """Resource-based policies by the ARN prefix they govern."""

    buckets: dict[str, list[Statement]] = field(default_factory=dict)  # bucket name -> statements
    keys: dict[str, list[Statement]] = field(default_factory=dict)  # key ARN -> key policy
    topics: dict[str, list[Statement]] = field(default_factory=dict)  # topic ARN -> statements
    queues: dict[str, list[Statement]] = field(default_factory=dict)  # queue ARN -> statements
    topic_keys: dict[str, str] = field(default_factory=dict)  # topic ARN -> its KMS key ARN
    event_buses: dict[str, list[Statement]] = field(default_factory=dict)  # event bus ARN -> its policy

    def for_resource(self, arn: str) -> list[Statement]:
        if arn.startswith("arn:aws:s3:::"):
            return self.buckets.get(arn.removeprefix("arn:aws:s3:::").split("/", 1)[0], [])
        return self.keys.get(arn) or self.topics.get(arn) or self.queues.get(arn) or self.event_buses.get(arn) or []


@dataclass
class StackPermissions:
    principals: dict[str, Principal]  # function logical id -> its role
    resource_policies: ResourcePolicies


def role_arn(account: str, logical: str, path: str = "/") -> str:
    """The ARN CloudFormation gives a role it names itself (`<stack>-<logical id>-<suffix>`)."""
    return f"arn:aws:iam::{account}:role{path}{logical}"


def stack_permissions(
    template: Mapping[str, Any],
    lookup: Callable[[str, str | None], str],
    pseudo: Mapping[str, str],
) -> StackPermissions:
    """The roles of `template`'s functions and its resource policies, resolved with `lookup`
    (logical id, attribute -> value) and `pseudo` (AWS::Region, ...). `template` is the local
    stack's (parameter defaults replaced), whose Parameters and Conditions decide `Fn::If`."""
    expanded = expanded_template()
    merged = {**expanded, "Parameters": template.get("Parameters", {}), "Conditions": template.get("Conditions", {})}
    account = pseudo["AWS::AccountId"]

    region = pseudo["AWS::Region"]

    def attribute(logical: str, name: str | None) -> str:
        resource = merged["Resources"].get(logical, {})
        kind = str(resource.get("Type", ""))
        if kind == "AWS::IAM::Role":
            return (
                role_arn(account, logical, resource.get("Properties", {}).get("Path", "/"))
                if name == "Arn"
                else logical
            )
        try:
            return lookup(logical, name)
        except KeyError:
            # What the local stack does not create (keys, log groups, alarms): names as CloudFormation
            # would give them, in the ARN format of the resource's type.
            if kind == "AWS::KMS::Key":
                return f"arn:aws:kms:{region}:{account}:key/{logical}" if name == "Arn" else logical
            if kind == "AWS::Events::Rule" and name == "Arn":
                return f"arn:aws:events:{region}:{account}:rule/{logical}"
            service = kind.split("::")[1].lower() if kind.count("::") == 2 else "local"
            return f"arn:aws:{service}:{region}:{account}:{logical}" if name == "Arn" else logical

    resolver = Resolver(merged, attribute, dict(pseudo))
    resources = merged["Resources"]
    principals: dict[str, Principal] = {}
    for logical, resource in resources.items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        role_ref = resource["Properties"]["Role"]["Fn::GetAtt"][0]
        role = resolver.resolve(resources[role_ref]["Properties"])
        statements: list[Statement] = []
        for arn in role.get("ManagedPolicyArns", []):
            statements += statements_of(
                MANAGED_POLICIES[arn], f"role {role_ref}, managed policy {arn.rsplit('/', 1)[-1]}"
            )
        for policy in role.get("Policies", []):
            statements += statements_of(policy["PolicyDocument"], f"role {role_ref}, policy {policy['PolicyName']}")
        tags = {t["Key"]: str(t["Value"]) for t in role.get("Tags", [])}
        principals[logical] = Principal(
            logical, role_ref, role_arn(account, role_ref, role.get("Path", "/")), tags, tuple(statements)
        )
    return StackPermissions(principals, _resource_policies(resources, resolver))


def _resource_policies(resources: Mapping[str, Any], resolver: Resolver) -> ResourcePolicies:
    policies = ResourcePolicies()
    for logical, resource in resources.items():
        kind, properties = resource["Type"], resource.get("Properties", {})
        if "Condition" in resource and not resolver.condition(resource["Condition"]):
            continue
        source = f"{kind.rsplit('::', 1)[-1]} {logical}"
        if kind == "AWS::S3::BucketPolicy":
            bucket = str(resolver.resolve(properties["Bucket"]))
            policies.buckets[bucket] = statements_of(resolver.resolve(properties["PolicyDocument"]), source)
        elif kind == "AWS::KMS::Key":
            arn = str(resolver.resolve({"Fn::GetAtt": [logical, "Arn"]}))
            policies.keys[arn] = statements_of(resolver.resolve(properties["KeyPolicy"]), source)
        elif kind == "AWS::SNS::TopicPolicy":
            for topic in resolver.resolve(properties["Topics"]):
                policies.topics[str(topic)] = statements_of(resolver.resolve(properties["PolicyDocument"]), source)
        elif kind == "AWS::SQS::QueuePolicy":
            document = resolver.resolve(properties["PolicyDocument"])
            for url in resolver.resolve(properties["Queues"]):
                name = str(url).rstrip("/").rsplit("/", 1)[-1]
                arn = f"arn:aws:sqs:{resolver.pseudo['AWS::Region']}:{resolver.pseudo['AWS::AccountId']}:{name}"
                policies.queues[arn] = statements_of(document, source)
        elif kind == "AWS::Events::EventBus" and "Policy" in properties:
            name = str(resolver.resolve(properties["Name"]))
            region, account = resolver.pseudo["AWS::Region"], resolver.pseudo["AWS::AccountId"]
            arn = f"arn:aws:events:{region}:{account}:event-bus/{name}"
            policies.event_buses[arn] = statements_of(resolver.resolve(properties["Policy"]), source)
        elif kind == "AWS::SNS::Topic" and "KmsMasterKeyId" in properties:
            topic = str(resolver.resolve({"Ref": logical}))
            key_id = properties["KmsMasterKeyId"]
            if isinstance(key_id, dict) and "Ref" in key_id and key_id["Ref"] in resources:  # the key's id -> its ARN
                key_id = {"Fn::GetAtt": [key_id["Ref"], "Arn"]}
            key = str(resolver.resolve(key_id))
            policies.topic_keys[topic] = key
    return policies


def dumps(permissions: StackPermissions) -> str:
    """The resolved roles, for a reader debugging a denial."""
    return json.dumps({f: [s.body for s in p.statements] for f, p in permissions.principals.items()}, indent=1)
