"""The local stack's team registry: seeded from a policy (`{"teams": {...}}`, the scenario's
`teamPolicy:` or a test's) through the same path `spotline teams apply` takes: a proposal per
team in the registry bucket, then ApplyTeamChange, which validates, writes and syncs the quota
shares. A refused seed fails the stack's start with the reasons, as a refused apply would."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from spotline.aws.common.clients import reset_clients
from spotline.aws.teams.team_registry import submit_changes
from spotline.core.teams.team_registry import Change, changes_in

if TYPE_CHECKING:
    from spotline_dev.harness.local.handles import LocalStack

APPLY_FUNCTION = "ApplyTeamChangeFunction"
REGISTRY_BUCKET = "TeamRegistryBucket"


class RegistryChangeRefused(RuntimeError):
    """ApplyTeamChange refused the change; the message names each field and reason."""


def policy_document(policy: str | Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(policy) if isinstance(policy, str) else dict(policy)


def apply_to_registry(stack: LocalStack, changes: list[Change], *, setup: bool = False) -> dict[str, Any]:
    """Propose and apply `changes`; ApplyTeamChange's answer. Raises RegistryChangeRefused when
    refused. With `setup`, the invocation is not recorded in `stack.invocations` (as custom
    resources are not): it is the stack's preparation, not the workflow's work."""
    before = len(stack.invocations)
    answer = submit_changes(
        changes, function_name=stack.functions[APPLY_FUNCTION], bucket_name=stack.physical[REGISTRY_BUCKET]
    )
    if setup:
        del stack.invocations[before:]
        # As after a custom resource: hooks a test registers on the session later (kill_after_call,
        # recorders) must reach the clients the functions create, not clients made for the setup.
        reset_clients()
    if answer.get("outcome") == "refused":
        shown = "; ".join(f"{e['path']}: {e['message']}" for e in answer.get("errors", []))
        raise RegistryChangeRefused(f"the team registry refused the change: {shown}")
    return answer


def seed_registry(stack: LocalStack, policy: str | Mapping[str, Any]) -> dict[str, Any]:
    """Every team of `policy` into the registry, in one change (nothing when it lists none)."""
    changes = changes_in(policy_document(policy))
    return apply_to_registry(stack, changes, setup=True) if changes else {}


def synthetic_registry(
    teams: int, *, per_share: int, instance_types: tuple[str, ...], account: str, region: str
) -> dict[str, Any]:
    """A registry of `teams` teams (`team-000`, ...) as a large company's platform holds them: each
    with its roles, S3 prefixes, images, a quota of one or two instance types, and a quota share
    shared with `per_share` teams (a queue holds at most 20 shares)."""
    entries = {}
    for n in range(teams):
        team = f"team-{n:03d}"
        first, second = instance_types[n % len(instance_types)], instance_types[(n + 1) % len(instance_types)]
        entries[team] = {
            "instanceFamilies": sorted({t.split(".")[1] for t in instance_types}),
            "maxInstances": 2,
            "maxPriority": 500,
            "roles": [f"arn:aws:iam::{account}:role/spotline/{team}/*"],
            "s3Prefixes": [f"s3://{team}-data/", f"s3://{team}-models/", f"s3://{team}-checkpoints/"],
            "images": [f"{account}.dkr.ecr.{region}.amazonaws.com/{team}/*"],
            "quotas": {first: 1, second: 1} if n % 3 == 0 else {first: 1},
            "quotaShare": f"org-{n // per_share:02d}",
            "maxRuntime": "30h",
        }
    return {"teams": entries}


def quota_totals(policy: Mapping[str, Any]) -> dict[str, int]:
    """The instances per type the policy's quotas add up to (a TrainingCapacity that holds them)."""
    totals: dict[str, int] = {}
    for entry in policy["teams"].values():
        for instance_type, n in (entry.get("quotas") or {}).items():
            totals[instance_type] = totals.get(instance_type, 0) + n
    return totals
