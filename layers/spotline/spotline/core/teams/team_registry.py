"""The team registry (pure): every team's policy entry as its own versioned document, and the
rules a change must pass before it takes effect.

The store (`spotline.aws.teams.team_registry`) keeps, in the stack's registry bucket:
- `teams/<team>.json`: the team's current record (`TeamRecord`); its S3 versions are the history;
- `index.json`: every team's current entry and version (`Registry`), read whole to validate a
  change against the others (quota totals, quota shares) and by `spotline teams list`;
- `proposed/<team>.json`: what a team lead or the platform team proposed, tagged with who did.

A change is applied only whole: every entry it names passes the JSON Schema, and the registry
after it passes the stack's checks (`spotline.core.teams.quota_shares.registry_problems`) and claims no
other team's resource (`spotline.core.teams.team_ownership`); otherwise
nothing changes and the refusal names each field (`teams.<team>.quotas.ml.g5.2xlarge`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spotline.core.common import json_schemas
from spotline.core.common.errors import ManifestError
from spotline.core.teams.quota_shares import Capacity, ExistingShare, registry_problems
from spotline.core.teams.team_ownership import ownership_problems
from spotline.core.teams.team_policy import SCHEMA_FILE, TeamAllowance, TeamPolicy, TeamPolicyInvalid

CHANGE_SCHEMA = {"$ref": f"https://spotline.dev/schemas/{SCHEMA_FILE}#/$defs/change"}
CHANGE_ROOT = "(change)"
MAX_HISTORY = 1000  # versions `history` lists (one ListObjectVersions page)


@dataclass(frozen=True, slots=True)
class Change:
    """One team's new entry (None: the team is removed), as proposed."""

    team: str
    entry: dict[str, Any] | None
    rollback_of: int | None = None

    def document(self) -> dict[str, Any]:
        body: dict[str, Any] = {"team": self.team}
        body |= {"entry": self.entry} if self.entry is not None else {"remove": True}
        return body | ({"rollbackOf": self.rollback_of} if self.rollback_of else {})

    @classmethod
    def parse(cls, body: Any) -> Change:
        """A proposal's body (`$defs/change` of the team policy schema); raises TeamPolicyInvalid."""
        errors = json_schemas.errors_against(CHANGE_SCHEMA, body, root=CHANGE_ROOT)
        if errors:
            raise TeamPolicyInvalid(errors)
        return cls(str(body["team"]), body.get("entry"), body.get("rollbackOf"))


def changes_in(document: Any) -> list[Change]:
    """The changes a policy file (`{"teams": {<team>: <entry>}}`, as `spotline teams apply` takes
    it) makes; raises TeamPolicyInvalid naming every bad field (`teams.<team>.roles[0]`)."""
    TeamPolicy.from_document(document)
    return [Change(team, entry) for team, entry in sorted(document.get("teams", {}).items())]


@dataclass(frozen=True, slots=True)
class TeamRecord:
    """A team's record at one version: its entry, who changed it and when. A removal keeps the
    last entry (`removed`): runs admitted before it go on under it; no new run is admitted."""

    team: str
    version: int
    entry: dict[str, Any] | None
    changed_by: str
    changed_at: str  # ISO 8601, UTC
    proposal: str = ""  # the S3 version id of the proposal it applied
    rollback_of: int | None = None
    removed: bool = False
    approved_by: str = ""  # the platform principal who approved a lead's widening change

    def document(self) -> dict[str, Any]:
        return {
            "team": self.team,
            "version": self.version,
            "entry": self.entry,
            **({"removed": True} if self.removed else {}),
            "changedBy": self.changed_by,
            "changedAt": self.changed_at,
            "proposal": self.proposal,
            **({"rollbackOf": self.rollback_of} if self.rollback_of else {}),
            **({"approvedBy": self.approved_by} if self.approved_by else {}),
        }

    @classmethod
    def from_document(cls, body: Mapping[str, Any]) -> TeamRecord:
        return cls(
            team=str(body["team"]),
            version=int(body["version"]),
            entry=body.get("entry"),
            changed_by=str(body.get("changedBy") or ""),
            changed_at=str(body.get("changedAt") or ""),
            proposal=str(body.get("proposal") or ""),
            rollback_of=body.get("rollbackOf"),
            removed=bool(body.get("removed")),
            approved_by=str(body.get("approvedBy") or ""),
        )

    def allowance(self, *, removed_too: bool = False) -> TeamAllowance | None:
        """The entry in force (None once removed, unless `removed_too`: then the last one)."""
        if self.entry is None or (self.removed and not removed_too):
            return None
        return TeamPolicy.from_document({"teams": {self.team: self.entry}}).teams[self.team]


@dataclass(frozen=True, slots=True)
class Registry:
    """Every team's current entry and record summary (`index.json`); removed teams keep their last
    version number in `removed`, so a team added again goes on counting."""

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    versions: dict[str, dict[str, Any]] = field(default_factory=dict)  # team -> version, changedBy, changedAt
    removed: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_document(cls, body: Mapping[str, Any] | None) -> Registry:
        body = body or {}
        return cls(dict(body.get("teams", {})), dict(body.get("versions", {})), dict(body.get("removed", {})))

    def document(self) -> dict[str, Any]:
        return {"teams": self.entries, "versions": self.versions, "removed": self.removed}

    def policy(self) -> TeamPolicy:
        """Every team's entry in force, validated (raises TeamPolicyInvalid: an index changed by hand)."""
        return TeamPolicy.from_document({"teams": self.entries})

    def version_of(self, team: str) -> int:
        if team in self.versions:
            return int(self.versions[team]["version"])
        return self.removed.get(team, 0)


@dataclass(frozen=True, slots=True)
class Applied:
    """What a change did: the records it wrote (none when refused or when nothing differs), the
    registry after it, and the refusal's field errors."""

    records: tuple[TeamRecord, ...]
    registry: Registry
    errors: tuple[ManifestError, ...] = ()
    unchanged: tuple[str, ...] = ()
    policy: TeamPolicy | None = None  # the registry after the change, validated (None when refused)


def apply_changes(
    registry: Registry,
    changes: Sequence[Change],
    *,
    capacity: Capacity,
    existing_shares: Iterable[ExistingShare],
    changed_by: str,
    changed_at: str,
    proposals: Mapping[str, str] | None = None,
    approvals: Mapping[str, str] | None = None,
) -> Applied:
    """The registry after `changes`, or the reasons it is refused (then `registry` is the one
    before, unchanged). An entry equal to the current one is no change (no new version)."""
    teams = [change.team for change in changes]
    if len(set(teams)) != len(teams):
        twice = sorted({team for team in teams if teams.count(team) > 1})
        return Applied(
            (), registry, tuple(ManifestError(f"teams.{t}", "is changed twice in one change") for t in twice)
        )
    entries = dict(registry.entries)
    for change in changes:
        if change.entry is None:
            entries.pop(change.team, None)
        else:
            entries[change.team] = change.entry
    try:
        after = TeamPolicy.from_document({"teams": entries})
    except TeamPolicyInvalid as exc:
        return Applied((), registry, tuple(exc.errors))
    errors = registry_problems(registry.policy(), after, capacity, existing_shares)
    errors += ownership_problems(registry.entries, entries, [c.team for c in changes])
    missing = [c.team for c in changes if c.entry is None and c.team not in registry.entries]
    errors += [ManifestError(f"teams.{team}", "is not in the registry: nothing to remove") for team in missing]
    if errors:
        return Applied((), registry, tuple(errors))
    records, unchanged = [], []
    versions, removed = dict(registry.versions), dict(registry.removed)
    for change in changes:
        if registry.entries.get(change.team) == change.entry:
            unchanged.append(change.team)
            continue
        version = registry.version_of(change.team) + 1
        record = TeamRecord(
            change.team,
            version,
            change.entry if change.entry is not None else registry.entries.get(change.team),
            changed_by,
            changed_at,
            (proposals or {}).get(change.team, ""),
            change.rollback_of,
            removed=change.entry is None,
            approved_by=(approvals or {}).get(change.team, ""),
        )
        records.append(record)
        if change.entry is None:
            versions.pop(change.team, None)
            removed[change.team] = version
        else:
            versions[change.team] = {"version": version, "changedBy": changed_by, "changedAt": changed_at}
            removed.pop(change.team, None)
    return Applied(tuple(records), Registry(entries, versions, removed), (), tuple(unchanged), after)


def diff_entries(current: Mapping[str, Any] | None, proposed: Mapping[str, Any] | None) -> list[str]:
    """What a change would do to one entry, a line per field: `+ field: value` (added),
    `- field: value` (removed), `~ field: old -> new` (changed); [] when nothing."""
    if current == proposed:
        return []
    if proposed is None:
        return ["- (the team is removed: new runs are refused; running jobs go on)"]
    lines = [] if current is not None else ["+ (a new team)"]
    current = current or {}
    for name in sorted(set(current) | set(proposed)):
        old, new = current.get(name), proposed.get(name)
        if old == new:
            continue
        if name not in current:
            lines.append(f"+ {name}: {_shown(new)}")
        elif name not in proposed:
            lines.append(f"- {name}: {_shown(old)}")
        else:
            lines.append(f"~ {name}: {_shown(old)} -> {_shown(new)}")
    return lines


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
