"""What each team may run on a shared stack (pure): its roles, S3 prefixes (data, code,
checkpoints, output), images, instance families and sizes, priority, runtime, warm pools and
concurrency.

Each team's entry is a versioned document in the stack's team registry
(`spotline.core.teams.team_registry`, `spotline.aws.teams.team_registry`), shaped by
`schemas/team-policy-v1.schema.json`; a whole policy reads, e.g.
{"teams": {"search-ranking": {"instanceFamilies": ["g5"], "maxInstances": 4, "maxPriority": 500,
  "roles": ["arn:aws:iam::123456789012:role/spotline/search-ranking/*"],
  "s3Prefixes": ["s3://ml-data/search-ranking/"],
  "images": ["123456789012.dkr.ecr.us-east-1.amazonaws.com/search-ranking/*"]}}}
A team that is not listed may not train, and a resource class its entry does not list is
closed to it: access is granted, never assumed. `maxConcurrentJobs` needs the live queue, so
the adapter (`spotline.aws.training.resources`) checks it; everything else is checked here, the same
in ValidateResources and in `spotline validate --team-policy`.

`quotas` (instance type -> instances) is the team's part of an AWS Batch quota share on the
stack's queue (its own, or the `quotaShare` it names with other teams);
`spotline.core.teams.quota_shares` turns the policy into the queue's shares (and sizes the share of a
team without quotas).
"""

from __future__ import annotations

import fnmatch
import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from spotline.core.common import json_schemas
from spotline.core.common.durations import format_duration, parse_duration
from spotline.core.common.errors import ManifestError
from spotline.core.spec.catalog import family_of
from spotline.core.spec.images import parse_image
from spotline.core.spec.model import InstanceOption, JobSpec

SCHEMA_FILE = "team-policy-v1.schema.json"
ROOT = "(team policy)"
SHOWN_PATTERNS = 3  # a refusal lists this many of the allowed patterns, then "..."


class TeamPolicyInvalid(ValueError):
    """The TeamPolicy JSON breaks its schema; `errors` name each field (teams.<team>.roles[0])."""

    def __init__(self, errors: list[ManifestError]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))


@dataclass(frozen=True, slots=True)
class TeamAllowance:
    instance_families: frozenset[str]
    max_instances: int = 1
    max_priority: int = 100
    roles: tuple[str, ...] = ()
    s3_prefixes: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    deep_learning_containers: bool = False
    max_runtime_seconds: int | None = None
    max_runtime_text: str | None = None  # as the policy wrote it, for messages
    max_volume_size_gb: int | None = None
    max_keep_alive_seconds: int | None = None  # None: no warm pools
    max_keep_alive_text: str | None = None
    max_concurrent_jobs: int | None = None
    training_plans: tuple[str, ...] = ()  # ARN patterns of the training plans its jobs may use
    quotas: tuple[tuple[str, int], ...] | None = None  # (instance type, instances); None: not declared
    replicas: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """prefix -> region -> the prefix holding the same data or images there."""
    quota_share: str | None = None  # the shared quota share it names; None: one of its own
    file_systems: tuple[str, ...] = ()  # ids of the FSx for Lustre and EFS file systems it may mount

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> TeamAllowance:
        max_runtime, keep_alive = entry.get("maxRuntime"), entry.get("maxKeepAlive")
        return cls(
            instance_families=frozenset(entry.get("instanceFamilies", [])),
            max_instances=int(entry.get("maxInstances", 1)),
            max_priority=int(entry.get("maxPriority", 100)),
            roles=tuple(entry.get("roles", ())),
            s3_prefixes=tuple(entry.get("s3Prefixes", ())),
            images=tuple(entry.get("images", ())),
            deep_learning_containers=bool(entry.get("deepLearningContainers", False)),
            max_runtime_seconds=parse_duration(max_runtime) if max_runtime else None,
            max_runtime_text=max_runtime,
            max_volume_size_gb=entry.get("maxVolumeSizeGB"),
            max_keep_alive_seconds=parse_duration(keep_alive) if keep_alive else None,
            max_keep_alive_text=keep_alive,
            max_concurrent_jobs=entry.get("maxConcurrentJobs"),
            training_plans=tuple(entry.get("trainingPlans", ())),
            quotas=tuple(sorted((str(t), int(n)) for t, n in entry["quotas"].items())) if "quotas" in entry else None,
            replicas={prefix: dict(by_region) for prefix, by_region in entry.get("replicas", {}).items()},
            quota_share=entry.get("quotaShare"),
            file_systems=tuple(entry.get("fileSystems", ())),
        )


@dataclass(frozen=True, slots=True)
class TeamPolicy:
    teams: dict[str, TeamAllowance]

    @classmethod
    def from_json(cls, text: str) -> TeamPolicy:
        """Parse and validate a policy file's text; raises TeamPolicyInvalid naming every bad field.
        Each text is validated once per process (a refusal is raised again each time) and the same
        policy is shared, read-only."""
        return _policy_of(text)

    @classmethod
    def _parse(cls, text: str) -> TeamPolicy:
        try:
            raw = json.loads(text or "{}")
        except json.JSONDecodeError as exc:
            raise TeamPolicyInvalid([ManifestError(ROOT, f"is not JSON: {exc.msg} at {exc.pos}")]) from exc
        return cls.from_document(raw)

    @classmethod
    def from_document(cls, raw: Any) -> TeamPolicy:
        """The policy of a parsed `{"teams": {...}}` document; raises TeamPolicyInvalid naming every bad field."""
        errors = sorted(set(json_schemas.errors_of(SCHEMA_FILE, raw, root=ROOT)), key=lambda e: (e.path, e.message))
        if errors:
            raise TeamPolicyInvalid(errors)
        return cls({team: TeamAllowance.from_dict(entry) for team, entry in raw.get("teams", {}).items()})

    def allowance(self, team: str) -> TeamAllowance | None:
        return self.teams.get(team)

    def share_of(self, team: str) -> str:
        """The name of the Batch quota share the team's jobs count in."""
        allowance = self.teams.get(team)
        return (allowance.quota_share if allowance is not None else None) or team

    def check(self, spec: JobSpec) -> list[ManifestError]:
        """Every way `spec` steps outside its team's allowance, each naming its manifest field."""
        allowance = self.teams.get(spec.team)
        if allowance is None:
            return [
                ManifestError(
                    "metadata.team",
                    f"team {spec.team!r} is not in this stack's team registry; "
                    "ask the platform team to add it (spotline teams apply)",
                )
            ]
        team = spec.team
        errors = []
        for where, option in option_paths(spec):
            family = family_of(option.instance_type)
            if family not in allowance.instance_families:
                allowed = ", ".join(sorted(allowance.instance_families)) or "none"
                errors.append(
                    ManifestError(
                        f"{where}.instanceType",
                        f"family {family} is not allowed for team {team} (allowed: {allowed})",
                    )
                )
            if option.instance_count > allowance.max_instances:
                errors.append(
                    ManifestError(
                        f"{where}.instanceCount",
                        f"{option.instance_count} exceeds team {team}'s limit of {allowance.max_instances}",
                    )
                )
        if spec.priority > allowance.max_priority:
            errors.append(
                ManifestError(
                    "spec.priority", f"{spec.priority} exceeds team {team}'s maximum priority {allowance.max_priority}"
                )
            )
        errors += _check_role(team, spec.role_arn, allowance)
        errors += _check_image(team, spec.image, allowance)
        errors += _check_file_systems(team, spec, allowance)
        for path, uri in s3_uris(spec):
            if not any(within_prefix(uri, prefix) for prefix in allowance.s3_prefixes):
                errors.append(
                    ManifestError(
                        path, f"{uri} is outside team {team}'s S3 prefixes ({some_of(allowance.s3_prefixes)})"
                    )
                )
        limit = allowance.max_runtime_seconds
        if limit is not None and spec.max_runtime_seconds > limit:
            errors.append(
                ManifestError(
                    "spec.capacity.maxRuntime",
                    f"{format_duration(spec.max_runtime_seconds)} exceeds team {team}'s limit "
                    f"of {allowance.max_runtime_text}",
                )
            )
        volume = allowance.max_volume_size_gb
        if volume is not None and spec.volume_size_gb > volume:
            errors.append(
                ManifestError(
                    "spec.resources.volumeSizeGB",
                    f"{spec.volume_size_gb} GB exceeds team {team}'s limit of {volume} GB",
                )
            )
        errors += _check_keep_alive(team, spec.keep_alive_seconds, allowance)
        errors += _check_training_plan(team, spec.training_plan, allowance)
        return errors

    def may_use_plan(self, team: str, plan_arn: str) -> bool:
        allowance = self.teams.get(team)
        return allowance is not None and plan_allowed(plan_arn, allowance)


def _check_keep_alive(team: str, seconds: int, allowance: TeamAllowance) -> list[ManifestError]:
    path, limit = "spec.resources.keepAlive", allowance.max_keep_alive_seconds
    if not seconds or (limit is not None and seconds <= limit):
        return []
    if limit is None:
        return [ManifestError(path, f"team {team} may keep no warm pools (its team policy has no maxKeepAlive)")]
    return [
        ManifestError(
            path, f"{format_duration(seconds)} exceeds team {team}'s limit of {allowance.max_keep_alive_text}"
        )
    ]


def plan_allowed(plan_arn: str, allowance: TeamAllowance) -> bool:
    return any(fnmatch.fnmatchcase(plan_arn, pattern) for pattern in allowance.training_plans)


def _check_training_plan(team: str, plan: str | None, allowance: TeamAllowance) -> list[ManifestError]:
    path = "spec.capacity.trainingPlan"
    if plan is None or (plan == "auto" and allowance.training_plans) or plan_allowed(plan, allowance):
        return []
    if not allowance.training_plans:
        return [ManifestError(path, f"team {team} may use no training plans (its team policy lists none)")]
    allowed = some_of(allowance.training_plans)
    return [ManifestError(path, f"{plan} is not a training plan team {team} may use ({allowed})")]


def _check_file_systems(team: str, spec: JobSpec, allowance: TeamAllowance) -> list[ManifestError]:
    errors = []
    for index, channel in enumerate(spec.inputs):
        if channel.on_file_system and channel.file_system_id not in allowance.file_systems:
            allowed = some_of(allowance.file_systems) if allowance.file_systems else "its team policy lists none"
            errors.append(
                ManifestError(
                    f"spec.inputs[{index}].fileSystem.id",
                    f"{channel.file_system_id} is not a file system team {team} may mount ({allowed})",
                )
            )
    return errors


def _check_role(team: str, role_arn: str, allowance: TeamAllowance) -> list[ManifestError]:
    if any(fnmatch.fnmatchcase(role_arn, pattern) for pattern in allowance.roles):
        return []
    if not allowance.roles:
        return [ManifestError("spec.roleArn", f"team {team} may pass no roles (its team policy lists no roles)")]
    return [
        ManifestError("spec.roleArn", f"{role_arn} is not a role team {team} may pass ({some_of(allowance.roles)})")
    ]


def _check_image(team: str, image: str, allowance: TeamAllowance) -> list[ManifestError]:
    reference = parse_image(image)
    if reference is not None and reference.is_deep_learning_container:
        if allowance.deep_learning_containers:
            return []
        return [
            ManifestError(
                "spec.image",
                f"AWS Deep Learning Containers images are not allowed for team {team} "
                "(team policy deepLearningContainers)",
            )
        ]
    if any(fnmatch.fnmatchcase(image, pattern) for pattern in allowance.images):
        return []
    allowed = some_of(allowance.images) if allowance.images else "its team policy lists no images"
    return [ManifestError("spec.image", f"{image} is not an image team {team} may use ({allowed})")]


def s3_uris(spec: JobSpec) -> Iterable[tuple[str, str]]:
    for index, channel in enumerate(spec.inputs):
        if not channel.on_file_system:
            yield f"spec.inputs[{index}].s3Uri", channel.s3_uri
    yield "spec.output.s3Uri", spec.output_s3_uri
    if spec.code_s3_uri:
        yield "spec.code.s3Uri", spec.code_s3_uri
    if spec.checkpoint_s3_uri:
        yield "spec.checkpoint.s3Uri", spec.checkpoint_s3_uri


def within_prefix(uri: str, prefix: str) -> bool:
    """`prefix` ends in '/', so s3://b/team-a/ never covers s3://b/team-ab; s3://b/team-a itself
    (the folder named without its slash) is within s3://b/team-a/."""
    return uri.startswith(prefix) or uri + "/" == prefix


def some_of(patterns: tuple[str, ...]) -> str:
    if not patterns:
        return "none"
    shown = ", ".join(patterns[:SHOWN_PATTERNS])
    return f"allowed: {shown}, ..." if len(patterns) > SHOWN_PATTERNS else f"allowed: {shown}"


@functools.lru_cache(maxsize=16)
def _policy_of(text: str) -> TeamPolicy:
    return TeamPolicy._parse(text)


def option_paths(spec: JobSpec) -> list[tuple[str, InstanceOption]]:
    """Each instance type the job may run on, with the manifest field it comes from
    (`spec.resources` for the primary, `spec.resources.alternatives[i]` for the others)."""
    return [
        ("spec.resources" if index == 0 else f"spec.resources.alternatives[{index - 1}]", option)
        for index, option in enumerate(spec.instance_options)
    ]
