"""ValidateResources: do the AWS resources a spec names exist and may they be used?

Every problem is reported together, each with the manifest field it came from.
"""

from __future__ import annotations

import fnmatch
import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from spotline.aws.capacity.training_plans import plan_problems
from spotline.aws.common.clients import client, error_code, split_s3_uri
from spotline.aws.regions.regions import home_region
from spotline.aws.teams.quota_share_reads import existing_shares
from spotline.aws.training import training_settings
from spotline.aws.training.cluster_checks import efa_problems, security_group_problems
from spotline.core.capacity.training_plans import PLAN_PATH
from spotline.core.common.errors import STACK_PATH, ManifestError
from spotline.core.spec.images import parse_image
from spotline.core.spec.model import JobSpec
from spotline.core.teams.quota_shares import quota_share_name, share_problems
from spotline.core.teams.team_policy import TeamPolicy, TeamPolicyInvalid, option_paths
from spotline.core.training.service_jobs import LIVE_STATUSES

TEAM_TAG = "spotline:team"  # on roles: the team a SageMaker execution role belongs to
NOT_FOUND = {"NoSuchBucket", "NoSuchEntity", "404", "NotFound", "RepositoryNotFoundException", "ImageNotFoundException"}
DENIED = {"AccessDenied", "AccessDeniedException", "403", "Forbidden"}


@dataclass(frozen=True, slots=True)
class ResourceSettings:
    job_queue: str
    training_role_pattern: str  # fnmatch pattern of role ARNs this stack may pass to SageMaker
    training_subnet_ids: tuple[str, ...] = ()  # the stack's TrainingSubnetIds: its jobs' VPC, if any
    training_security_group_ids: tuple[str, ...] = ()  # TrainingSecurityGroupIds: what its jobs reach

    @classmethod
    def from_environment(cls) -> ResourceSettings:
        network = training_settings.from_environment()
        return cls(
            job_queue=os.environ["JOB_QUEUE"],
            training_role_pattern=os.environ["TRAINING_ROLE_ARN_PATTERN"],
            training_subnet_ids=network.subnet_ids,
            training_security_group_ids=network.security_group_ids,
        )


def check_resources(
    spec: JobSpec, settings: ResourceSettings, policy: TeamPolicy | TeamPolicyInvalid
) -> list[ManifestError]:
    """`policy`: the team's entry in force (`spotline.aws.teams.team_registry.admission_policy`), or
    why it could not be read (an entry changed by hand in the registry: the stack's problem)."""
    if isinstance(policy, TeamPolicyInvalid):
        return [ManifestError(STACK_PATH, f"the team's registry entry is invalid ({policy}); page the platform team")]
    problems = list(policy.check(spec))
    if not any(problem.path == PLAN_PATH for problem in problems):
        problems += plan_problems(spec, home_region())
    problems += check_role(spec.role_arn, settings.training_role_pattern, spec.team)
    problems += check_image(spec.image)
    for index, channel in enumerate(spec.inputs):
        if channel.on_file_system:
            problems += _check_file_system_reachable(index, settings)
        else:
            problems += _check_prefix_has_objects(f"spec.inputs[{index}].s3Uri", channel.s3_uri)
    if spec.code_s3_uri:
        problems += _check_object("spec.code.s3Uri", spec.code_s3_uri)
    problems += _check_bucket("spec.output.s3Uri", spec.output_s3_uri)
    if spec.checkpoint_s3_uri:
        problems += _check_bucket("spec.checkpoint.s3Uri", spec.checkpoint_s3_uri)
    problems += efa_problems(spec)
    problems += security_group_problems(spec, settings.training_security_group_ids)
    problems += _check_queue(settings.job_queue)
    if not problems:
        problems += _check_quota_share(spec, settings.job_queue, share=policy.share_of(spec.team))
    allowance = policy.allowance(spec.team)
    if allowance is not None and allowance.max_concurrent_jobs is not None and not problems:
        problems += _check_concurrency(
            spec.team, allowance.max_concurrent_jobs, settings.job_queue, policy.share_of(spec.team)
        )
    return problems


def _check_file_system_reachable(index: int, settings: ResourceSettings) -> list[ManifestError]:
    """A file-system channel needs the job in a VPC that reaches the file system (SageMaker
    mounts it through the job's VpcConfig): the stack's TrainingSubnetIds."""
    if settings.training_subnet_ids:
        return []
    return [
        ManifestError(
            f"spec.inputs[{index}].fileSystem",
            "a file system is mounted only by a job in a VPC that reaches it, and this stack runs its jobs "
            "outside any VPC (no TrainingSubnetIds): ask the platform team, or read the data from S3",
        )
    ]


def check_role(role_arn: str, pattern: str, team: str, path: str = "spec.roleArn") -> list[ManifestError]:
    """The role is one this stack may pass, exists, trusts SageMaker and is tagged with the team."""
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
    tags = {tag.get("Key"): tag.get("Value") for tag in role.get("Tags") or []}
    if tags.get(TEAM_TAG) != team:
        found = f"it is tagged {tags[TEAM_TAG]!r}" if TEAM_TAG in tags else "it has no such tag"
        return [
            ManifestError(
                path, f"role {name} is not tagged {TEAM_TAG}={team} ({found}): a team passes only its own roles"
            )
        ]
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


def check_image(image: str, path: str = "spec.image") -> list[ManifestError]:
    """The image is an ECR image that exists (a Deep Learning Container's is taken as is)."""
    reference = parse_image(image)
    if reference is None:
        return [ManifestError(path, "is not an ECR image reference")]
    if reference.is_deep_learning_container:
        return []
    image_id = {"imageDigest": reference.digest} if reference.digest else {"imageTag": reference.tag}
    try:
        client("ecr", reference.region).describe_images(
            registryId=reference.account, repositoryName=reference.repository, imageIds=[image_id]
        )
    except Exception as exc:
        if error_code(exc) == "RepositoryNotFoundException":
            missing = f"repository {reference.repository} not found in registry {reference.account} (image {image})"
        else:
            version = f"tag {reference.tag}" if reference.tag else f"digest {reference.digest}"
            missing = f"{version} not found in repository {reference.repository} of registry {reference.account}"
        return [_access_problem(path, exc, missing)]
    return []


def _check_prefix_has_objects(path: str, uri: str, region: str | None = None) -> list[ManifestError]:
    bucket, prefix = split_s3_uri(uri)
    try:
        listing = client("s3", region).list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1)
    except Exception as exc:
        return [_access_problem(path, exc, f"bucket {bucket} does not exist")]
    if not listing.get("KeyCount"):
        return [ManifestError(path, f"no objects under {uri}: is the dataset there yet?")]
    return []


def _check_object(path: str, uri: str, region: str | None = None) -> list[ManifestError]:
    """The object itself, found by listing (s3:ListBucket, as for the inputs): the first key
    under a prefix equal to the key is the key itself."""
    bucket, key = split_s3_uri(uri)
    try:
        listing = client("s3", region).list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
    except Exception as exc:
        return [_access_problem(path, exc, f"bucket {bucket} does not exist")]
    if not any(item.get("Key") == key for item in listing.get("Contents", [])):
        return [ManifestError(path, f"no source archive at {uri}: upload it first")]
    return []


def _check_bucket(path: str, uri: str, region: str | None = None) -> list[ManifestError]:
    """The bucket exists (and, for an attempt in `region`, is there: SageMaker needs the job's
    buckets in its region)."""
    bucket, _ = split_s3_uri(uri)
    try:
        client("s3", region).head_bucket(Bucket=bucket)
        if region is not None:
            where = client("s3", region).get_bucket_location(Bucket=bucket).get("LocationConstraint") or "us-east-1"
            if where != region:
                return [ManifestError(path, f"bucket {bucket} is in {where}, not {region}")]
    except Exception as exc:
        return [_access_problem(path, exc, f"bucket {bucket} does not exist")]
    return []


def _check_queue(queue: str, region: str | None = None) -> list[ManifestError]:
    queues = client("batch", region).describe_job_queues(jobQueues=[queue]).get("jobQueues", [])
    if not queues and region is not None:
        return [ManifestError(STACK_PATH, f"no Spotline stack in {region}: job queue {queue} does not exist there")]
    if not queues:
        return [
            ManifestError(STACK_PATH, f"job queue {queue} does not exist; the stack is broken, page the platform team")
        ]
    state, status = queues[0].get("state"), queues[0].get("status")
    if state != "ENABLED" or status != "VALID":
        return [ManifestError(STACK_PATH, f"job queue {queue} is {state}/{status}; it must be ENABLED and VALID")]
    return []


def _check_quota_share(
    spec: JobSpec, queue: str, region: str | None = None, *, share: str | None = None
) -> list[ManifestError]:
    """Whether the team's quota share (`share`: the one it counts in) lets the job start at all
    (read live: ListQuotaShares)."""
    shares = existing_shares(queue, region)
    problems: list[ManifestError] = []
    for where, option in option_paths(spec):
        for problem in share_problems(spec.team, option.instance_type, option.instance_count, shares, share):
            field = problem.path.removeprefix("spec.resources")
            problems.append(ManifestError(f"{where}{field}", problem.message) if field != problem.path else problem)
    return list(dict.fromkeys(problems))


def _check_concurrency(team: str, limit: int, queue: str, share: str) -> list[ManifestError]:
    """The team's service jobs queued or running now (Batch's QUOTA_SHARE_NAME filter may be
    combined with jobStatus; every submission names the team's quota share, which other teams
    may count in too: each job's spotline:team tag tells), against its maxConcurrentJobs."""
    batch, active = client("batch"), 0
    for status in LIVE_STATUSES:
        request: dict[str, Any] = {
            "jobQueue": queue,
            "jobStatus": status,
            "filters": [{"name": "QUOTA_SHARE_NAME", "values": [quota_share_name(share)]}],
        }
        while True:
            page = batch.list_service_jobs(**request)
            jobs = page.get("jobSummaryList", [])
            # In a shared share, the team's own: job names begin with its executions' (<team>-...).
            active += (
                len(jobs) if share == team else sum(str(j.get("jobName", "")).startswith(f"{team}-") for j in jobs)
            )
            if not page.get("nextToken"):
                break
            request["nextToken"] = page["nextToken"]
    if active >= limit:
        return [
            ManifestError(
                "metadata.team",
                f"team {team} already has {active} training job(s) queued or running, its limit "
                f"(team policy maxConcurrentJobs) is {limit}: upload again when one has finished",
            )
        ]
    return []


def _access_problem(path: str, exc: Exception, not_found: str) -> ManifestError:
    code = error_code(exc)
    if code in NOT_FOUND:
        return ManifestError(path, not_found)
    if code in DENIED:
        return ManifestError(path, f"Spotline is not allowed to check it ({code}); grant read access or fix the name")
    raise exc


def check_in_region(spec: JobSpec, region: str, queue: str) -> list[ManifestError]:
    """The checks of a job as placed in another region (`spotline.core.regions.replicas.spec_in`): its
    inputs, code, buckets and image there, and that region's Spotline queue and the team's share."""
    problems = check_image(spec.image)
    for index, channel in enumerate(spec.inputs):
        if not channel.on_file_system:  # a mounted file system keeps the job home (replicas.place)
            problems += _check_prefix_has_objects(f"spec.inputs[{index}].s3Uri", channel.s3_uri, region)
    if spec.code_s3_uri:
        problems += _check_object("spec.code.s3Uri", spec.code_s3_uri, region)
    problems += _check_bucket("spec.output.s3Uri", spec.output_s3_uri, region)
    if spec.checkpoint_s3_uri:
        problems += _check_bucket("spec.checkpoint.s3Uri", spec.checkpoint_s3_uri, region)
    problems += _check_queue(queue, region)
    if not problems:
        problems += _check_quota_share(spec, queue, region)
    return problems
