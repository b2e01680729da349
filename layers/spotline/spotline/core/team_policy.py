"""What each team may run: instance families, instance count, Batch priority (pure).

The stack is configured with it as JSON (template parameter TeamPolicy):
{"teams": {"search-ranking": {"instanceFamilies": ["g5", "p4d"], "maxInstances": 4, "maxPriority": 500}}}
A team that is not listed may not train: access is granted, never assumed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from spotline.core.catalog import family_of
from spotline.core.errors import ManifestError
from spotline.core.model import JobSpec


@dataclass(frozen=True, slots=True)
class TeamAllowance:
    instance_families: frozenset[str]
    max_instances: int
    max_priority: int


@dataclass(frozen=True, slots=True)
class TeamPolicy:
    teams: dict[str, TeamAllowance]

    @classmethod
    def from_json(cls, text: str) -> TeamPolicy:
        raw = json.loads(text or "{}")
        return cls(
            {
                team: TeamAllowance(
                    instance_families=frozenset(entry.get("instanceFamilies", [])),
                    max_instances=int(entry.get("maxInstances", 1)),
                    max_priority=int(entry.get("maxPriority", 100)),
                )
                for team, entry in raw.get("teams", {}).items()
            }
        )

    def check(self, spec: JobSpec) -> list[ManifestError]:
        allowance = self.teams.get(spec.team)
        if allowance is None:
            return [
                ManifestError(
                    "metadata.team",
                    f"team {spec.team!r} is not in this stack's team policy; "
                    "ask the platform team to add it (TeamPolicy parameter)",
                )
            ]
        errors = []
        family = family_of(spec.instance_type)
        if family not in allowance.instance_families:
            allowed = ", ".join(sorted(allowance.instance_families)) or "none"
            errors.append(
                ManifestError(
                    "spec.resources.instanceType",
                    f"family {family} is not allowed for team {spec.team} (allowed: {allowed})",
                )
            )
        if spec.instance_count > allowance.max_instances:
            errors.append(
                ManifestError(
                    "spec.resources.instanceCount",
                    f"{spec.instance_count} exceeds team {spec.team}'s limit of {allowance.max_instances}",
                )
            )
        if spec.priority > allowance.max_priority:
            errors.append(
                ManifestError(
                    "spec.priority",
                    f"{spec.priority} exceeds team {spec.team}'s maximum priority {allowance.max_priority}",
                )
            )
        return errors
