"""Who owns what a team entry names (pure): S3 prefixes (and replica prefixes), image
repositories, file systems, a team's own quota share and training plans belong to at most one
team, unless the owner's entry shares them by name (`shares: {<resource>: [<team>, ...]}`).

"The same resource":
- S3 prefixes overlap when one is inside the other (`s3://b/a/` and `s3://b/a/x/`, either way):
  a prefix inside or containing another team's is a claim on it;
- image and training plan patterns overlap when some name matches both (a literal against a
  pattern by matching; two patterns when one's literal start begins the other's);
- replica keys and targets count as the prefix, repository or file system they name;
- file systems by id; a quota share by name, owned by the team it is named after (its own
  share); a share named after no team is a pool the platform declares, owned by none.
A team keeps what its entry already held before the change (a holding is checked when claimed).
Roles are not here: a role is the team's when tagged `spotline:team` (ValidateResources).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from spotline.core.common.errors import ManifestError

S3, IMAGE, FILE_SYSTEM, QUOTA_SHARE, PLAN = "S3 prefix", "image", "file system", "quota share", "training plan"
WILDCARD = re.compile(r"[*?\[]")
FILE_SYSTEM_PATH = re.compile(r"^(?:fsx|efs)://(fs-[0-9a-f]+)/")


@dataclass(frozen=True, slots=True)
class Holding:
    kind: str
    resource: str  # as compared: an S3 prefix, an image or plan pattern, a file system id, a share name
    path: str  # the entry's field, relative to teams.<team> ("" for a team's own quota share)


def kind_of(resource: str) -> tuple[str, str]:
    """The kind of a resource as an entry writes it, and the resource as compared."""
    if resource.startswith("s3://"):
        return S3, resource
    found = FILE_SYSTEM_PATH.match(resource)
    if found:
        return FILE_SYSTEM, found.group(1)
    if resource.startswith("fs-"):
        return FILE_SYSTEM, resource
    if ".dkr.ecr." in resource:
        return IMAGE, resource + "*" if resource.endswith("/") else resource
    if ":training-plan/" in resource:
        return PLAN, resource
    return QUOTA_SHARE, resource


def holdings(team: str, entry: Mapping[str, Any]) -> list[Holding]:
    """Every resource the entry names, with its field."""
    found = [Holding(S3, prefix, f"s3Prefixes[{i}]") for i, prefix in enumerate(entry.get("s3Prefixes", ()))]
    found += [Holding(IMAGE, image, f"images[{i}]") for i, image in enumerate(entry.get("images", ()))]
    found += [Holding(FILE_SYSTEM, fs, f"fileSystems[{i}]") for i, fs in enumerate(entry.get("fileSystems", ()))]
    found += [Holding(PLAN, plan, f"trainingPlans[{i}]") for i, plan in enumerate(entry.get("trainingPlans", ()))]
    for key, by_region in entry.get("replicas", {}).items():
        found.append(Holding(*kind_of(key), f"replicas.{key}"))
        found += [Holding(*kind_of(target), f"replicas.{key}.{region}") for region, target in by_region.items()]
    found.append(Holding(QUOTA_SHARE, entry.get("quotaShare") or team, "quotaShare" if "quotaShare" in entry else ""))
    return found


def overlap(kind: str, a: str, b: str) -> bool:
    if kind == S3:
        return a.startswith(b) or b.startswith(a)
    if kind in (IMAGE, PLAN):
        return _patterns_overlap(a, b)
    return a == b


def covers(kind: str, shared: str, claim: str) -> bool:
    """Whether a share of `shared` reaches the whole of `claim`."""
    if kind == S3:
        return claim.startswith(shared)
    if kind in (IMAGE, PLAN):
        return claim == shared or (
            not WILDCARD.search(shared[:-1]) and shared.endswith("*") and _literal_start(claim).startswith(shared[:-1])
        )
    return claim == shared


def _literal_start(pattern: str) -> str:
    found = WILDCARD.search(pattern)
    return pattern if found is None else pattern[: found.start()]


def _patterns_overlap(a: str, b: str) -> bool:
    if not WILDCARD.search(a):
        return fnmatch.fnmatchcase(a, b) if WILDCARD.search(b) else a == b
    if not WILDCARD.search(b):
        return fnmatch.fnmatchcase(b, a)
    start_a, start_b = _literal_start(a), _literal_start(b)
    return start_a.startswith(start_b) or start_b.startswith(start_a)


def _owned(team: str, entry: Mapping[str, Any], teams: Iterable[str]) -> list[Holding]:
    """What the entry holds that a team could own: a quota share only when named after a team."""
    names = set(teams)
    return [h for h in holdings(team, entry) if h.kind != QUOTA_SHARE or h.resource in names]


def _shares(entry: Mapping[str, Any] | None, kind: str, claim: str, team: str) -> bool:
    for key, teams in ((entry or {}).get("shares") or {}).items():
        shared_kind, shared = kind_of(key)
        if shared_kind == kind and team in teams and covers(kind, shared, claim):
            return True
    return False


def _held(entry: Mapping[str, Any] | None, team: str, kind: str, resource: str) -> bool:
    """Whether `entry` (a team's before the change) already held `resource` (or a prefix of it)."""
    return entry is not None and any(
        h.kind == kind and covers(kind, h.resource, resource) for h in holdings(team, entry)
    )


def _overlapping(entry: Mapping[str, Any] | None, team: str, kind: str, resource: str) -> bool:
    return entry is not None and any(
        h.kind == kind and overlap(kind, h.resource, resource) for h in holdings(team, entry)
    )


def ownership_problems(
    before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]], changed: Iterable[str]
) -> list[ManifestError]:
    """Each resource a changed team's entry newly claims that another team holds and has not
    shared with it by name, naming the field and the owner:
    `teams.vision.fileSystems[0]: fs-... belongs to search-ranking (not shared with vision)`.
    A team adding a resource no one held before may share it at once with teams that take it in
    the same change; a resource its entry held before stays its own."""
    problems = []
    for team in sorted(set(changed) & set(after)):
        for claim in _owned(team, after[team], after):
            if not claim.path or _held(before.get(team), team, claim.kind, claim.resource):
                continue
            for other in sorted(set(after) - {team}):
                mine = [
                    h
                    for h in _owned(other, after[other], after)
                    if h.kind == claim.kind and overlap(claim.kind, claim.resource, h.resource)
                ]
                if not mine or _shares(after[other], claim.kind, claim.resource, team):
                    continue
                if any(_shares(after[p], claim.kind, mine[0].resource, other) for p in after if p != other):
                    continue  # shared with `other` too: its owner's word counts, not a sharer's
                theirs_before = _overlapping(before.get(other), other, claim.kind, claim.resource)
                if not theirs_before and _shares(after[team], claim.kind, mine[0].resource, other):
                    continue  # the team's new resource, shared in this change with `other`
                held = mine[0].resource
                what = claim.resource if held == claim.resource else f"{claim.resource} overlaps {held}, which"
                problems.append(
                    ManifestError(
                        f"teams.{team}.{claim.path}",
                        f"{what} belongs to {other} (not shared with {team}: its entry's shares)",
                    )
                )
    return problems


def shared_with_each_other(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The entries, each sharing by name every resource another of them names too (a registry
    generated from manifests, as the sandbox grants each team what its manifests ask for; a real
    registry states its shares)."""
    result = {team: dict(entry) for team, entry in entries.items()}
    for team, entry in entries.items():
        for held in _owned(team, entry, entries):
            others = sorted(
                other
                for other in entries
                if other != team
                and any(
                    h.kind == held.kind and overlap(held.kind, held.resource, h.resource)
                    for h in _owned(other, entries[other], entries)
                )
            )
            if others:
                key = held.resource[:-1] if held.kind == IMAGE and held.resource.endswith("/*") else held.resource
                shares = result[team].setdefault("shares", {})
                shares[key] = sorted(set(shares.get(key, [])) | set(others))
    return result
