"""ValidateResources: do the AWS resources a spec names exist and may they be used?

Every problem is reported together, each with the manifest field it came from.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from spotline.aws.clients import client, error_code, split_s3_uri
from spotline.core.errors import ManifestError
from spotline.core.model import JobSpec
from spotline.core.team_policy import TeamPolicy

# Registries of the AWS Deep Learning Containers (github.com/aws/deep-learning-containers,
# available_images.md): their images are public to every account and are not looked up.
DLC_REGISTRY_ACCOUNTS = frozenset(
    {
        "763104351884",
        "871362719292",
        "364406365360",
        "217643126080",
        "727897471807",
        "626614931356",
        "692866216735",
        "503227376785",
        "914824155844",
        "446045086412",
        "780543022126",
        "007439368137",
        "380420809688",
    }
)
STACK_PATH = "(stack)"
_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/"
    r"(?P<repo>[^:@]+)(:(?P<tag>[^@]+)|@(?P<digest>sha256:[a-f0-9]{64}))$"
)
NOT_FOUND = {"NoSuchBucket", "NoSuchEntity", "404", "NotFound", "RepositoryNotFoundException", "ImageNotFoundException"}
DENIED = {"AccessDenied", "AccessDeniedException", "403", "Forbidden"}


@dataclass(frozen=True, slots=True)
class ResourceSettings:
    job_queue: str
    team_policy: TeamPolicy
    training_role_pattern: str  # fnmatch pattern of role ARNs this stack may pass to SageMaker

    @classmethod
    def from_environment(cls) -> ResourceSettings:
        return cls(
            job_queue=os.environ["JOB_QUEUE"],
            team_policy=TeamPolicy.from_json(os.environ.get("TEAM_POLICY", "{}")),
            training_role_pattern=os.environ["TRAINING_ROLE_ARN_PATTERN"],
        )


def check_resources(spec: JobSpec, settings: ResourceSettings) -> list[ManifestError]:
    problems = list(settings.team_policy.check(spec))
    problems += _check_role(spec.role_arn, settings.training_role_pattern)
    problems += _check_image(spec.image)
    for index, channel in enumerate(spec.inputs):
        problems += _check_prefix_has_objects(f"spec.inputs[{index}].s3Uri", channel.s3_uri)
    problems += _check_bucket("spec.output.s3Uri", spec.output_s3_uri)
    if spec.checkpoint_s3_uri:
        problems += _check_bucket("spec.checkpoint.s3Uri", spec.checkpoint_s3_uri)
    problems += _check_queue(settings.job_queue)
    return problems


def _check_role(role_arn: str, pattern: str) -> list[ManifestError]:
    path = "spec.roleArn"
    if not fnmatch.fnmatchcase(role_arn, pattern):
        return [ManifestError(path, f"{role_arn} is not a role this stack may pass to SageMaker ({pattern})")]
    name = role_arn.rsplit("/", 1)[-1]
    try:
        role = client("iam").get_role(RoleName=name)["Role"]
    except Exception as exc:
        return [_access_problem(path, exc, f"role {name} does not exist")]
    document = role.get("AssumeRolePolicyDocument") or {}
    if isinstance(document, str):
        document = json.loads(unquote(document))
    if not _trusts_sagemaker(document):
        return [ManifestError(path, f"role {name} does not trust sagemaker.amazonaws.com (add it to the trust policy)")]
    return []


def _trusts_sagemaker(document: dict[str, Any]) -> bool:
    statements = document.get("Statement", [])
    for statement in statements if isinstance(statements, list) else [statements]:
        services = statement.get("Principal", {}).get("Service", [])
        services = services if isinstance(services, list) else [services]
        actions = statement.get("Action", [])
        actions = actions if isinstance(actions, list) else [actions]
        if statement.get("Effect") == "Allow" and "sagemaker.amazonaws.com" in services and "sts:AssumeRole" in actions:
            return True
    return False


def _check_image(image: str) -> list[ManifestError]:
    path = "spec.image"
    match = _IMAGE.match(image)
    if not match:
        return [ManifestError(path, "is not an ECR image reference")]
    if match["account"] in DLC_REGISTRY_ACCOUNTS:
        return []
    image_id = {"imageDigest": match["digest"]} if match["digest"] else {"imageTag": match["tag"]}
    try:
        client("ecr", match["region"]).describe_images(
            registryId=match["account"], repositoryName=match["repo"], imageIds=[image_id]
        )
    except Exception as exc:
        code = error_code(exc)
        what = "repository" if code == "RepositoryNotFoundException" else "image"
        return [
            _access_problem(
                path,
                exc,
                f"{what} {match['repo']}{':' + match['tag'] if match['tag'] else ''} "
                f"not found in registry {match['account']}",
            )
        ]
    return []


def _check_prefix_has_objects(path: str, uri: str) -> list[ManifestError]:
    bucket, prefix = split_s3_uri(uri)
    try:
        listing = client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1)
    except Exception as exc:
        return [_access_problem(path, exc, f"bucket {bucket} does not exist")]
    if not listing.get("KeyCount"):
        return [ManifestError(path, f"no objects under {uri}: is the dataset there yet?")]
    return []


def _check_bucket(path: str, uri: str) -> list[ManifestError]:
    bucket, _ = split_s3_uri(uri)
    try:
        client("s3").head_bucket(Bucket=bucket)
    except Exception as exc:
        return [_access_problem(path, exc, f"bucket {bucket} does not exist")]
    return []


def _check_queue(queue: str) -> list[ManifestError]:
    queues = client("batch").describe_job_queues(jobQueues=[queue]).get("jobQueues", [])
    if not queues:
        return [
            ManifestError(STACK_PATH, f"job queue {queue} does not exist; the stack is broken, page the platform team")
        ]
    state, status = queues[0].get("state"), queues[0].get("status")
    if state != "ENABLED" or status != "VALID":
        return [ManifestError(STACK_PATH, f"job queue {queue} is {state}/{status}; it must be ENABLED and VALID")]
    return []


def _access_problem(path: str, exc: Exception, not_found: str) -> ManifestError:
    code = error_code(exc)
    if code in NOT_FOUND:
        return ManifestError(path, not_found)
    if code in DENIED:
        return ManifestError(path, f"Spotline is not allowed to check it ({code}); grant read access or fix the name")
    raise exc
