"""Plays the team's AWS account in the local stack: creates what a manifest references (the
role, the image, buckets with a few input objects and the source archive) so a valid manifest runs as it would in a
prepared account. Fields named in `missing` are left out, to show the validation failure."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spotline.aws.common.clients import split_s3_uri
from spotline.aws.training.resources import TEAM_TAG
from spotline.core.scoring.scoring import ScoringSpec
from spotline.core.spec.images import DLC_REGISTRY_ACCOUNTS, parse_image
from spotline.core.spec.model import JobSpec
from spotline.core.teams.quota_shares import MAX_CAPACITY_LIMITS, parse_capacity
from spotline_dev.harness.local.template import load_template
from spotline_dev.harness.sandbox.scenario import ScenarioError

SAGEMAKER_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
INPUT_OBJECTS = ("part-00000.parquet", "part-00001.parquet", "_SUCCESS")
SOURCE_ARCHIVE = b"local source archive"  # what spec.code.s3Uri names; the stand-in runs no code


DEFAULT_ACCOUNT, DEFAULT_REGION, DEFAULT_ROLE_PATH = "123456789012", "us-east-1", "spotline"


@dataclass(frozen=True)
class PlayedAccount:
    """The AWS account a local stack plays: its id, its region and the IAM path of the SageMaker
    roles it may pass (the stack's TrainingRolePath), and where they come from."""

    id: str
    region: str
    role_path: str
    source: str  # "the manifest", "the manifests", "the scenario", "the sandbox's default"

    def describe(self) -> str:
        return f"account {self.id} in {self.region}, SageMaker roles under role/{self.role_path}/ ({self.source})"


Naming = JobSpec | ScoringSpec | PlayedAccount
"""What names the account a stack plays: a manifest's spec, or what a rejected manifest's valid
fields name (`rejected.account_of_document`)."""


def role_path_of(role_arn: str) -> str | None:
    """`arn:aws:iam::111122223333:role/ml/training/x` -> `ml/training`; None for a role at the root."""
    path, _, _ = role_arn.split(":role/", 1)[1].rpartition("/")
    return path or None


def account_of_spec(spec: JobSpec) -> PlayedAccount:
    """What one training manifest names: the role's account and path, the image's region (an ECR
    image is in the job's region: SageMaker pulls it from there)."""
    named = account_named(spec.role_arn, spec.image)
    assert named is not None  # a valid training manifest names both
    return named


def account_named(role_arn: str | None, image: str | None) -> PlayedAccount | None:
    """The account a role and an image name (a training manifest's spec.roleArn and spec.image, a
    scoring manifest's spec.model.roleArn and spec.model.image): the role's account and path, the
    image's region; what one leaves out is the sandbox's default. None when neither is named."""
    if not role_arn and not image:
        return None
    parsed = parse_image(image) if image else None
    return PlayedAccount(
        id=role_arn.split(":")[4] if role_arn else DEFAULT_ACCOUNT,
        region=parsed.region if parsed else DEFAULT_REGION,
        role_path=(role_path_of(role_arn) if role_arn else None) or DEFAULT_ROLE_PATH,
        source="the manifest",
    )


def account_of(named: Naming) -> PlayedAccount | None:
    """The account a manifest names: a training job's role and image, a scoring job's model's
    (None for a scoring job that names its model by name only: it names no account)."""
    if isinstance(named, PlayedAccount):
        return named
    if isinstance(named, ScoringSpec):
        return account_named(named.model.role_arn, named.model.image)
    return account_of_spec(named)


def played_account(specs: Sequence[Naming], scenario: Mapping[str, str] | None) -> PlayedAccount:
    """The account one stack plays: the scenario's `account:` where it says it, else what its
    manifests name (training or scoring jobs, or what a rejected manifest's valid fields name).
    Manifests sharing one stack (a fleet) must name one account and region: an error says which
    differ."""
    accounts = [a for a in map(account_of, specs) if a is not None]
    named = {(a.id, a.region, a.role_path) for a in accounts}
    scenario = scenario or {}
    if scenario.get("id") and scenario.get("region") and scenario.get("rolePath"):
        return PlayedAccount(scenario["id"], scenario["region"], scenario["rolePath"], "the scenario")
    ids, regions, paths = ({n[i] for n in named} for i in range(3))
    for field, values in (("id", ids), ("region", regions), ("rolePath", paths)):
        if len(values) > 1 and field not in scenario:
            raise ScenarioError(
                f"account.{field}: the manifests of this stack name {', '.join(sorted(values))}; one stack plays "
                f"one account: set account.{field} in the scenario, or run them as separate scenarios"
            )
    source = "the scenario" if scenario else ("the manifest" if len(accounts) == 1 else "the manifests")
    return PlayedAccount(
        id=scenario.get("id") or next(iter(ids), DEFAULT_ACCOUNT),
        region=scenario.get("region") or next(iter(regions), DEFAULT_REGION),
        role_path=scenario.get("rolePath") or next(iter(paths), DEFAULT_ROLE_PATH),
        source=source if accounts or scenario else "the sandbox's default",
    )


def team_allowance(spec: JobSpec) -> dict[str, Any]:
    """A TeamPolicy entry that allows exactly what this spec asks for."""
    uris = [channel.s3_uri for channel in spec.inputs] + [spec.output_s3_uri, spec.checkpoint_s3_uri or ""]
    if spec.code_s3_uri:
        uris.append(spec.code_s3_uri.rsplit("/", 1)[0])  # the archive's folder
    image = parse_image(spec.image)
    keep_alive = {"maxKeepAlive": f"{spec.keep_alive_seconds}s"} if spec.keep_alive_seconds else {}
    plans = {"trainingPlans": [plan_pattern(spec)]} if spec.training_plan else {}
    mounted = sorted({str(c.file_system_id) for c in spec.inputs if c.on_file_system})
    file_systems = {"fileSystems": mounted} if mounted else {}
    return {
        "instanceFamilies": sorted({o.instance_type.split(".")[1] for o in spec.instance_options}),
        "maxInstances": max(o.instance_count for o in spec.instance_options),
        "maxPriority": spec.priority,
        "roles": [spec.role_arn],
        "s3Prefixes": sorted({uri if uri.endswith("/") else f"{uri}/" for uri in uris if uri}),
        "images": [spec.image],
        "deepLearningContainers": bool(image and image.is_deep_learning_container),
        **keep_alive,
        **plans,
        **file_systems,
    }


def plan_pattern(spec: JobSpec) -> str:
    """The plan the spec names, or with `auto` every plan of its account and region."""
    if spec.training_plan and spec.training_plan != "auto":
        return spec.training_plan
    played = account_of_spec(spec)
    return f"arn:aws:sagemaker:{played.region}:{played.id}:training-plan/*"


def prepare_account(clients: Any, spec: JobSpec, missing: Collection[str] = ()) -> None:
    """`clients(service)` returns a boto3 client of the local stack."""
    if "spec.roleArn" not in missing:
        ensure_role(clients("iam"), spec.role_arn, spec.team)
    if "spec.image" not in missing:
        ensure_image(clients("ecr"), spec.image)
    s3 = clients("s3")
    for index, channel in enumerate(spec.inputs):
        if f"spec.inputs[{index}].s3Uri" in missing or channel.on_file_system:
            continue
        bucket, prefix = split_s3_uri(channel.s3_uri)
        _ensure_bucket(s3, bucket)
        for name in INPUT_OBJECTS:
            s3.put_object(Bucket=bucket, Key=f"{prefix.rstrip('/')}/{name}".lstrip("/"), Body=b"local data")
    if spec.code_s3_uri:  # missing: the bucket is there, the archive not yet
        bucket, key = split_s3_uri(spec.code_s3_uri)
        _ensure_bucket(s3, bucket)
        if "spec.code.s3Uri" not in missing:
            s3.put_object(Bucket=bucket, Key=key, Body=SOURCE_ARCHIVE)
    for field, uri in (("spec.output.s3Uri", spec.output_s3_uri), ("spec.checkpoint.s3Uri", spec.checkpoint_s3_uri)):
        if uri and field not in missing:
            _ensure_bucket(s3, split_s3_uri(uri)[0])


def _ensure_bucket(s3: Any, bucket: str) -> None:
    try:
        s3.head_bucket(Bucket=bucket)
    except Exception:
        s3.create_bucket(Bucket=bucket)


def ensure_role(iam: Any, role_arn: str, team: str) -> None:
    """The team's SageMaker execution role, tagged with its team as the platform team would."""
    resource = role_arn.split(":role/", 1)[1]
    path, _, name = resource.rpartition("/")
    try:
        iam.get_role(RoleName=name)
    except Exception:
        iam.create_role(
            RoleName=name,
            Path=f"/{path}/" if path else "/",
            AssumeRolePolicyDocument=json.dumps(SAGEMAKER_TRUST),
            Tags=[{"Key": TEAM_TAG, "Value": team}],
        )


def ensure_image(ecr: Any, image: str) -> None:
    registry, _, rest = image.partition("/")
    if registry.split(".")[0] in DLC_REGISTRY_ACCOUNTS:
        return
    repository, tag = (rest.split("@", 1)[0], None) if "@" in rest else rest.rsplit(":", 1)
    with contextlib.suppress(ecr.exceptions.RepositoryAlreadyExistsException):
        ecr.create_repository(repositoryName=repository)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {
                "digest": "sha256:" + "0" * 64,
                "size": 1,
                "mediaType": "application/vnd.docker.container.image.v1+json",
            },
            "layers": [],
        }
    )
    with contextlib.suppress(ecr.exceptions.ImageAlreadyExistsException):  # two manifests, one image
        ecr.put_image(repositoryName=repository, imageManifest=manifest, **({"imageTag": tag} if tag else {}))


def played_capacity(specs: Sequence[JobSpec], scenario: Mapping[str, int] | None) -> dict[str, int]:
    """The service environment the sandbox plays (TrainingCapacity): the scenario's `queue:
    capacity`, or the template's default with each manifest's instance type added (as the
    platform team would configure it for them), since quota management runs a job only on a type
    with a capacity limit."""
    if scenario is not None:
        return dict(scenario)
    default = parse_capacity(str(load_template()["Parameters"]["TrainingCapacity"]["Default"]))
    capacity = dict(default)
    for option in (o for spec in specs for o in spec.instance_options):  # a type the default lacks:
        if option.instance_type not in default:  # as many instances as its largest job
            capacity[option.instance_type] = max(capacity.get(option.instance_type, 0), option.instance_count)
    if len(capacity) > MAX_CAPACITY_LIMITS:
        raise ScenarioError(
            f"the manifests use {len(capacity)} instance types with the template's default, and a service "
            f"environment here takes {MAX_CAPACITY_LIMITS}: give the scenario queue: capacity: {{TYPE: N}}"
        )
    return capacity
