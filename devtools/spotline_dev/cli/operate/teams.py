"""`spotline teams`: the stack's team registry read and changed as the stack itself does it
(`spotline.aws.teams.team_registry`, ApplyTeamChange). A change is checked here first, against the
JSON Schema and the registry and queue as they are now, so a refusal costs no proposal; the
stack checks it again, against the registry as it is when it writes, before it takes effect."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from spotline.aws.teams.quota_share_reads import existing_shares
from spotline.aws.teams.team_registry import (
    AuthorNotTaggable,
    approve,
    author_id,
    history,
    invoke_apply,
    latest_proposal,
    read_registry,
    record_of,
    submit_changes,
)
from spotline.core.common.errors import ManifestError
from spotline.core.teams.quota_shares import QuotaSharesInvalid, parse_capacity
from spotline.core.teams.team_policy import TeamPolicyInvalid
from spotline.core.teams.team_registry import (
    Applied,
    Change,
    Registry,
    TeamRecord,
    apply_changes,
    changes_in,
    diff_entries,
)
from spotline_dev.cli.operate.deployment import SURROUNDINGS, Deployment, OperateError


class ChangeRefused(Exception):
    """A change is refused; `errors` name each field (`teams.<team>.quotas.<type>`) and why."""

    def __init__(self, errors: list[ManifestError]) -> None:
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))
        self.errors = errors


def read_changes(data: bytes, where: str) -> list[Change]:
    """The changes a policy file makes (`{"teams": {<team>: <entry>}}`, JSON)."""
    try:
        document = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ChangeRefused([ManifestError("(team policy)", f"{where} is not JSON: {exc}")]) from None
    try:
        changes = changes_in(document)
    except TeamPolicyInvalid as exc:
        raise ChangeRefused(exc.errors) from None
    if not changes:
        raise ChangeRefused([ManifestError("teams", f"{where} lists no team")])
    return changes


@dataclass(frozen=True)
class Checked:
    """A change as the stack would take it now: the registry before, and what it would do."""

    before: Registry
    applied: Applied
    changes: list[Change]

    def diff(self) -> dict[str, list[str]]:
        return {c.team: diff_entries(self.before.entries.get(c.team), c.entry) for c in self.changes}


def check(deployment: Deployment, changes: list[Change]) -> Checked:
    """The change against the registry, the stack's TrainingCapacity and the queue's shares;
    raises ChangeRefused naming each field."""
    try:
        capacity = parse_capacity(deployment.training_capacity)
    except QuotaSharesInvalid as exc:
        raise OperateError(f"the stack's TrainingCapacity cannot be read: {exc}") from None
    registry = read_registry(deployment.registry_bucket)
    applied = apply_changes(
        registry,
        changes,
        capacity=capacity,
        existing_shares=existing_shares(deployment.job_queue_arn, deployment.region),
        changed_by="(not applied)",
        changed_at=SURROUNDINGS.now().isoformat(timespec="seconds").replace("+00:00", "Z"),
    )
    if applied.errors:
        raise ChangeRefused(list(applied.errors))
    return Checked(registry, applied, changes)


def apply(deployment: Deployment, changes: list[Change]) -> dict[str, Any]:
    """Check, then have the stack apply the change (ApplyTeamChange's answer); raises ChangeRefused."""
    check(deployment, changes)
    try:
        answer = submit_changes(
            changes, function_name=deployment.apply_function, bucket_name=deployment.registry_bucket
        )
    except AuthorNotTaggable as exc:
        raise OperateError(f"nothing proposed: {exc}", usage=True) from None
    if answer.get("outcome") == "refused":
        raise ChangeRefused([ManifestError(e["path"], e["message"]) for e in answer.get("errors", [])])
    return answer


def current(deployment: Deployment, team: str) -> TeamRecord:
    """The team's record now (a removed team's too); raises OperateError when it never was listed."""
    record = record_of(team, fresh=True, bucket_name=deployment.registry_bucket)
    if record is None:
        raise OperateError(f"team {team} is not in the registry of stack {deployment.stack}", not_found=True)
    return record


def records(deployment: Deployment, team: str) -> list[TeamRecord]:
    """Every version of the team's record, newest first."""
    found = history(team, deployment.registry_bucket)
    if not found:
        raise OperateError(f"team {team} has no history in the registry of stack {deployment.stack}", not_found=True)
    return found


def rollback_change(deployment: Deployment, team: str, version: int) -> Change:
    """The change that restores `version` of the team's entry (a removal, if that version was one)."""
    for record in records(deployment, team):
        if record.version == version:
            return Change(team, None if record.removed else record.entry, rollback_of=version)
    raise OperateError(f"team {team} has no version {version} (see spotline teams history {team})", not_found=True)


def approve_pending(deployment: Deployment, team: str) -> dict[str, Any]:
    """Approve the team's latest proposal (a platform principal's second, recorded step: the
    approval names the proposal's version and its author), then have the stack apply it;
    ApplyTeamChange's answer. Raises ChangeRefused, OperateError when there is no proposal."""
    version = latest_proposal(team, deployment.registry_bucket)
    if version is None:
        raise OperateError(f"team {team} has no proposal in the registry of stack {deployment.stack}", not_found=True)
    try:
        approve(team, version, author_id(), deployment.registry_bucket)
    except AuthorNotTaggable as exc:
        raise OperateError(f"nothing approved: {exc}", usage=True) from None
    answer = invoke_apply([{"team": team, "versionId": version}], deployment.apply_function)
    if answer.get("outcome") == "refused":
        raise ChangeRefused([ManifestError(e["path"], e["message"]) for e in answer.get("errors", [])])
    return answer
