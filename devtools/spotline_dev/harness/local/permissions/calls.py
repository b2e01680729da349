"""What one AWS API call asks IAM for: the action (or actions) it is authorized as, on which
resource ARNs, with which condition keys, and the dependent actions its parameters add.

The action names, resource types and ARN formats come from the Service Authorization Reference
(`reference`); what the reference does not say per parameter is written here by hand, each rule
with the sentence of AWS's documentation it comes from."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote

from spotline_dev.harness.local.permissions import reference

ContextValue = str | tuple[str, ...]

# botocore's service name -> the IAM service prefix (the reference's "service prefix").
PREFIXES = {"stepfunctions": "states", "efs": "elasticfilesystem", "cloudwatch": "cloudwatch"}

NO_PERMISSION = frozenset({"sts:GetCallerIdentity"})
"""STS API reference, GetCallerIdentity: "No permissions are required to perform this operation"."""


@dataclass(frozen=True)
class Need:
    """One authorization the call needs: `action` on `resource` with `context`."""

    action: str
    resource: str
    context: tuple[tuple[str, ContextValue], ...] = ()
    why: str = "the call itself"

    def describe(self) -> str:
        return f"{self.action} on {self.resource}" + ("" if self.why == "the call itself" else f" ({self.why})")


@dataclass(frozen=True)
class Call:
    """An API call as botocore makes it: service (botocore's name), operation, parameters, region."""

    service: str
    operation: str
    params: Mapping[str, Any]
    region: str
    account: str

    def describe(self) -> str:
        return f"{self.service}.{self.operation} in {self.region}"


class UnknownCall(ValueError):
    """A call whose action or resource this module cannot name: the permission check fails on it."""


# --- S3: the operations whose action is not their own name (S3 API reference, "Permissions") ----

_S3_ACTIONS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    # HeadObject: "you must have the s3:GetObject permission"; with a version id, s3:GetObjectVersion.
    "HeadObject": lambda p: "s3:GetObjectVersion" if p.get("VersionId") else "s3:GetObject",
    # GetObject: "To get a specific version ... you need the s3:GetObjectVersion permission".
    "GetObject": lambda p: "s3:GetObjectVersion" if p.get("VersionId") else "s3:GetObject",
    # GetObjectTagging: "To retrieve tags of any other version, you need the s3:GetObjectVersionTagging".
    "GetObjectTagging": lambda p: "s3:GetObjectVersionTagging" if p.get("VersionId") else "s3:GetObjectTagging",
    # DeleteObject: "To remove a specific version, you must have the s3:DeleteObjectVersion permission".
    "DeleteObject": lambda p: "s3:DeleteObjectVersion" if p.get("VersionId") else "s3:DeleteObject",
    # HeadBucket: "you must have permissions to perform the s3:ListBucket action".
    "HeadBucket": lambda p: "s3:ListBucket",
    # CopyObject: "you must have ... write access to the destination bucket" (s3:PutObject); the
    # source's read is a dependent need below.
    "CopyObject": lambda p: "s3:PutObject",
    # ListObjectsV2 / ListObjects: "you must have READ access to the bucket ... s3:ListBucket".
    "ListObjectsV2": lambda p: "s3:ListBucket",
    "ListObjects": lambda p: "s3:ListBucket",
    # ListObjectVersions: "you must have the s3:ListBucketVersions permission".
    "ListObjectVersions": lambda p: "s3:ListBucketVersions",
    # Multipart uploads are authorized as PutObject (S3 user guide, "Multipart upload API and
    # permissions": "You must be allowed to perform the s3:PutObject action on an object").
    "CreateMultipartUpload": lambda p: "s3:PutObject",
    "UploadPart": lambda p: "s3:PutObject",
    "UploadPartCopy": lambda p: "s3:PutObject",
    "CompleteMultipartUpload": lambda p: "s3:PutObject",
}


def _action_of(call: Call) -> str:
    if call.service == "s3" and call.operation in _S3_ACTIONS:
        return _S3_ACTIONS[call.operation](call.params)
    if call.service == "lambda" and call.operation == "Invoke":
        return "lambda:InvokeFunction"  # Lambda API reference, Invoke: "lambda:InvokeFunction"
    return f"{PREFIXES.get(call.service, call.service)}:{call.operation}"


# --- resource ARNs from the call's parameters -------------------------------------------------

_ARN = re.compile(r"^arn:aws[a-z-]*:")


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _queue_name(params: Mapping[str, Any]) -> list[str]:
    return [url.rstrip("/").rsplit("/", 1)[-1] for url in _names(params.get("QueueUrl"))]


def _event_buses(params: Mapping[str, Any]) -> list[str]:
    return sorted({str(e.get("EventBusName") or "default") for e in params.get("Entries") or []})


# (IAM prefix, resource type) -> (the variable of its ARN format a name fills, the names or ARNs
# of that type the call's parameters give). Most APIs take a name or an ARN: an ARN is the resource.
_Binding = tuple[str, Callable[[Mapping[str, Any]], list[str]]]
_BINDINGS: dict[tuple[str, str], _Binding] = {
    ("s3", "bucket"): ("BucketName", lambda p: _names(p.get("Bucket"))),
    ("s3", "object"): ("ObjectName", lambda p: _names(p.get("Key"))),
    ("dynamodb", "table"): ("TableName", lambda p: _names(p.get("TableName"))),
    ("sagemaker", "training-job"): ("TrainingJobName", lambda p: _names(p.get("TrainingJobName"))),
    ("sagemaker", "transform-job"): ("TransformJobName", lambda p: _names(p.get("TransformJobName"))),
    ("sagemaker", "model"): ("ModelName", lambda p: _names(p.get("ModelName"))),
    ("sagemaker", "training-plan"): ("TrainingPlanName", lambda p: _names(p.get("TrainingPlanName"))),
    ("batch", "job-queue"): ("JobQueueName", lambda p: _names(p.get("jobQueue") or p.get("jobQueues"))),
    ("batch", "service-job"): ("JobId", lambda p: _names(p.get("jobId"))),
    ("batch", "quota-share"): ("QuotaShareName", lambda p: _names(p.get("quotaShareArn"))),
    ("states", "statemachine"): ("StateMachineName", lambda p: _names(p.get("stateMachineArn"))),
    ("states", "execution"): ("ExecutionId", lambda p: _names(p.get("executionArn"))),
    ("sqs", "queue"): ("QueueName", _queue_name),
    ("sns", "topic"): ("TopicName", lambda p: _names(p.get("TopicArn"))),
    ("events", "event-bus"): ("EventBusName", _event_buses),
    ("lambda", "function"): ("FunctionName", lambda p: _names(p.get("FunctionName"))),
    ("iam", "role"): ("RoleNameWithPath", lambda p: _names(p.get("RoleName"))),
    # A mount target's calls are authorized on its file system, which the call names only by the
    # mount target's id: any file system ("*"), so only a grant that covers them all passes.
    ("elasticfilesystem", "file-system"): (
        "FileSystemId",
        lambda p: _names(p.get("FileSystemId")) or (["*"] if p.get("MountTargetId") else []),
    ),
    ("fsx", "file-system"): ("FileSystemId", lambda p: _names(p.get("FileSystemIds"))),
    ("ecr", "repository"): ("RepositoryName", lambda p: _names(p.get("repositoryName"))),
    ("logs", "log-group"): ("LogGroupName", lambda p: _names(p.get("logGroupName"))),
    ("cloudformation", "stack"): ("StackName", lambda p: _names(p.get("StackName"))),
}
_ARN_PARAMETERS = ("ResourceArn", "resourceArn")  # tagging APIs name any resource by its ARN


def _fill(arn_format: str, call: Call, variable: str, value: str, params: Mapping[str, Any]) -> str:
    arn = arn_format.replace("${Partition}", "aws").replace("${Region}", call.region)
    arn = arn.replace("${Account}", call.account).replace("${" + variable + "}", value)
    if "${BucketName}" in arn:
        arn = arn.replace("${BucketName}", str(params.get("Bucket")))
    # Variables no parameter gives (a stack's id) match anything.
    return re.sub(r"\$\{[A-Za-z]+\}", "*", arn)


def _resources(call: Call, prefix: str, resource_type: reference.ResourceType) -> list[str]:
    binding = _BINDINGS.get((prefix, resource_type.name))
    if binding is None or not resource_type.arn:
        return []
    variable, values_of = binding
    return [
        value if _ARN.match(value) else _fill(resource_type.arn, call, variable, value, call.params)
        for value in values_of(call.params)
    ]


def _resource_needs(call: Call, action: reference.Action, why: str) -> Iterator[tuple[str, str]]:
    """(resource ARN, why) for each resource type of `action` the call names; "*" when the action
    takes none (the reference lists no resource type: "you must specify all resources")."""
    prefix = action.name.split(":", 1)[0]
    found = [str(call.params[p]) for p in _ARN_PARAMETERS if call.params.get(p)]
    for resource_type in action.resource_types if not found else ():
        found += _resources(call, prefix, resource_type)
    if not action.resource_types:
        yield "*", why
        return
    if not found:
        if any(t.required for t in action.resource_types):
            raise UnknownCall(f"{call.describe()}: no parameter names the resource of {action.name}")
        yield "*", why
        return
    for arn in dict.fromkeys(found):
        yield arn, why


# --- condition keys and dependent actions -----------------------------------------------------


def _tags_of_query(tagging: str) -> dict[str, str]:
    return {unquote(k): unquote(v) for k, v in parse_qsl(tagging, keep_blank_values=True)}


def _request_tags(call: Call) -> dict[str, str]:
    """The tags a call asks to set, whatever its API's shape of them."""
    if call.service == "s3" and call.params.get("Tagging"):
        return _tags_of_query(str(call.params["Tagging"]))
    tags = call.params.get("Tags") if "Tags" in call.params else call.params.get("tags")
    if isinstance(tags, Mapping):
        return {str(k): str(v) for k, v in tags.items()}
    if isinstance(tags, list):
        return {str(t.get("Key")): str(t.get("Value")) for t in tags}
    return {}


@dataclass
class _Needs:
    call: Call
    context: dict[str, ContextValue] = field(default_factory=dict)
    found: list[Need] = field(default_factory=list)

    def add(
        self,
        action_name: str,
        why: str,
        call: Call | None = None,
        extra: Mapping[str, ContextValue] | None = None,
        resources: list[str] | None = None,
    ) -> None:
        action = reference.action(action_name)
        if action is None:
            raise UnknownCall(
                f"{self.call.describe()}: {action_name} is not an action of the Service Authorization Reference"
            )
        context = tuple(sorted({**self.context, **(extra or {})}.items()))
        named = [(r, why) for r in resources] if resources else list(_resource_needs(call or self.call, action, why))
        for resource, reason in named:
            self.found.append(Need(action.name, resource, context, reason))


def needs_of(call: Call) -> list[Need]:
    """Every authorization `call` needs (empty for an operation that needs none)."""
    action_name = _action_of(call)
    if action_name in NO_PERMISSION:
        return []
    needs = _Needs(call, {"aws:RequestedRegion": call.region})
    tags = _request_tags(call)
    if tags:
        needs.context["aws:TagKeys"] = tuple(sorted(tags))
        for key, value in tags.items():
            needs.context[f"aws:RequestTag/{key}"] = value
            if call.service == "s3":
                needs.context[f"s3:RequestObjectTag/{key}"] = value
    listing = call.service == "s3" and call.operation in ("ListObjectsV2", "ListObjects", "ListObjectVersions")
    if listing and call.params.get("Prefix") is not None:
        # S3 condition keys: s3:prefix "Filters access by key name prefix" of a listing.
        needs.context["s3:prefix"] = str(call.params["Prefix"])
    needs.add(action_name, "the call itself")
    _dependent_needs(call, action_name, tags, needs)
    return needs.found


def _copy_source(call: Call) -> Call | None:
    source = call.params.get("CopySource")
    if source is None:
        return None
    if isinstance(source, Mapping):
        bucket, key, version = source["Bucket"], source["Key"], source.get("VersionId")
    else:
        path, _, query = str(source).lstrip("/").partition("?versionId=")
        bucket, _, key = unquote(path).partition("/")
        version = query or None
    return Call("s3", "GetObject", {"Bucket": bucket, "Key": key, "VersionId": version}, call.region, call.account)


def _dependent_needs(call: Call, action_name: str, tags: Mapping[str, str], needs: _Needs) -> None:
    if call.service == "s3" and tags and call.operation in ("PutObject", "CopyObject", "CreateMultipartUpload"):
        # S3 API reference, PutObject, "Permissions": "s3:PutObjectTagging - To successfully
        # complete the PutObject request, you must have the s3:PutObjectTagging permission in
        # your IAM permissions, if you're including tags (the x-amz-tagging header)."
        needs.add("s3:PutObjectTagging", "dependent: the request carries Tagging")
    source = _copy_source(call) if call.service == "s3" else None
    if source is not None:
        # S3 API reference, CopyObject, "Permissions": "you must have read access to the source
        # object and write access to the destination bucket"; s3:GetObjectVersion for a version.
        read = "s3:GetObjectVersion" if source.params.get("VersionId") else "s3:GetObject"
        needs.add(read, "dependent: the copy's source", source)
    if call.service == "efs" and call.operation == "DescribeMountTargetSecurityGroups":
        # EFS API reference, DescribeMountTargetSecurityGroups: "This operation requires permissions
        # for the following actions: elasticfilesystem:DescribeMountTargetSecurityGroups action on the
        # mount target's file system. ec2:DescribeNetworkInterfaceAttribute action on the mount
        # target's network interface."
        needs.add("ec2:DescribeNetworkInterfaceAttribute", "dependent: the mount target's network interface")
    action = reference.action(action_name)
    listed = {d for t in action.resource_types for d in t.dependent_actions} if action else set()
    listed |= set(action.dependent_actions) if action else set()
    for dependent in sorted(listed):
        _prefix, _, name = dependent.partition(":")
        if dependent == "iam:PassRole":
            # iam:PassRole is asked for the role the request passes (IAM user guide, "Granting a
            # user permissions to pass a role to an AWS service"), with iam:PassedToService.
            for role in _passed_roles(call):
                needs.add(
                    "iam:PassRole",
                    "dependent: the request passes a role",
                    Call("iam", "PassRole", {"RoleName": role}, call.region, call.account),
                    {"iam:PassedToService": f"{PREFIXES.get(call.service, call.service)}.amazonaws.com"},
                )
        elif name in ("AddTags", "TagResource", "CreateTags") and tags:
            # Tagging on create (e.g. SageMaker: "To add tags when you create a resource, you need
            # the sagemaker:AddTags permission"): only a request that carries tags, on what it creates.
            created = [n.resource for n in needs.found if n.action == action_name]
            needs.add(dependent, "dependent: the request carries tags", resources=created[:1] or None)


_PASSED_ROLE_PARAMETERS = ("RoleArn", "ExecutionRoleArn", "roleArn")


def _passed_roles(call: Call) -> list[str]:
    return [str(call.params[p]) for p in _PASSED_ROLE_PARAMETERS if call.params.get(p)]
