"""Which changes of a team's entry widen what the team may use (pure): those need the platform
team's approval when a team lead proposes them; narrowing changes apply at once.

Widening: a higher limit (maxPriority, maxInstances, maxVolumeSizeGB, maxRuntime, maxKeepAlive,
maxConcurrentJobs) or a limit dropped (no maxRuntime is no limit); a resource added (roles,
s3Prefixes, images, fileSystems, trainingPlans, instanceFamilies, replicas, deepLearningContainers);
more quota or a quota share joined; a resource shared with another team (`shares`); a new team.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spotline.core.common.durations import parse_duration

LIMITS = ("maxPriority", "maxInstances", "maxVolumeSizeGB", "maxConcurrentJobs")
DURATIONS = ("maxRuntime", "maxKeepAlive")
UNLIMITED_WITHOUT = ("maxRuntime", "maxVolumeSizeGB", "maxConcurrentJobs")  # absent: no limit
DEFAULTS = {"maxPriority": 100, "maxInstances": 1}  # TeamAllowance's defaults when absent
LISTS = ("roles", "s3Prefixes", "images", "fileSystems", "trainingPlans", "instanceFamilies")


def widened(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    """The fields of `after` that let the team use more than `before` did ([] for a removal)."""
    if after is None:
        return []
    if before is None:
        return ["(a new team)"]
    fields = [name for name in LIMITS + DURATIONS if _limit_raised(name, before, after)]
    fields += [name for name in LISTS if set(after.get(name, ())) - set(before.get(name, ()))]
    if after.get("deepLearningContainers") and not before.get("deepLearningContainers"):
        fields.append("deepLearningContainers")
    if _mapping_grew(before.get("replicas") or {}, after.get("replicas") or {}):
        fields.append("replicas")
    if _mapping_grew(before.get("shares") or {}, after.get("shares") or {}):
        fields.append("shares")
    quotas_before, quotas_after = before.get("quotas") or {}, after.get("quotas") or {}
    if any(n > quotas_before.get(t, 0) for t, n in quotas_after.items()):
        fields.append("quotas")
    if after.get("quotaShare") != before.get("quotaShare"):
        fields.append("quotaShare")
    return sorted(fields)


def _value(name: str, entry: Mapping[str, Any]) -> float | None:
    """The limit as a number; None when the entry sets none (no limit, or none allowed)."""
    raw = entry.get(name, DEFAULTS.get(name))
    if raw is None:
        return None
    return float(parse_duration(raw)) if name in DURATIONS else float(raw)


def _limit_raised(name: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    old, new = _value(name, before), _value(name, after)
    if new is None:
        return old is not None and name in UNLIMITED_WITHOUT  # a limit dropped
    if old is None:
        return name not in UNLIMITED_WITHOUT  # maxKeepAlive: none allowed before
    return new > old


def _mapping_grew(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """A key added, or a value holding more (a replica region, a team shared with)."""
    for key, value in after.items():
        old = before.get(key)
        if old is None:
            return True
        if isinstance(value, Mapping) and set(value.items()) - set(old.items()):
            return True
        if isinstance(value, list) and set(value) - set(old):
            return True
    return False
