"""Applying proposed changes to the team registry (ApplyTeamChange, the registry's only writer):
read each proposal and who made it, validate the registry after the change against the schema and
the stack, write the index and the teams' new records, then bring the job queue's quota shares
in step. A refused change writes nothing: the previous versions stay in force.

Changes may run at once (the function has no reserved concurrency: an account's unreserved pool
cannot always give one). The index is written only if it is still the one the change was
validated against (S3 conditional write, IfMatch its ETag, IfNoneMatch "*" for the first); when
another change came first, the whole read-validate-write is done again against the new index,
so two changes never both pass the quota totals. Records only move forward in version."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from spotline.aws.common import clock
from spotline.aws.common.clients import client, error_code
from spotline.aws.teams import quota_shares
from spotline.aws.teams.quota_share_reads import existing_shares
from spotline.aws.teams.team_registry import (
    CHANGED_BY_TAG,
    INDEX_KEY,
    LEAD_TAG,
    MISSING,
    approval_key,
    pending_key,
    proposal_key,
    read_json_and_etag,
    read_registry_for_change,
    record_key,
)
from spotline.core.common.errors import ManifestError
from spotline.core.teams.quota_shares import Capacity
from spotline.core.teams.team_approval import widened
from spotline.core.teams.team_policy import TeamPolicyInvalid
from spotline.core.teams.team_registry import CHANGE_ROOT, Change, Registry, TeamRecord, apply_changes

TEAM_NAME = re.compile(r"^[a-z][a-z0-9-]{0,22}[a-z0-9]$")  # manifest-v1's metadata.team
ATTEMPTS = 5  # reads-validates-writes of one change before it gives up to concurrent ones
CONFLICTS = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "412", "409"})
"""S3 PutObject, IfMatch: "If the ETag values do not match, the operation returns a 412
Precondition Failed error. If a conflicting operation occurs during the upload S3 returns a 409
ConditionalRequestConflict response. On a 409 failure you should fetch the object's ETag and retry
the upload" (botocore's s3 model; IfNoneMatch likewise)."""


@dataclass(frozen=True, slots=True)
class Proposal:
    team: str
    version_id: str


@dataclass(frozen=True, slots=True)
class Proposed:
    """A proposal as read: its change, its author (aws:userid) and, for a lead's, the lead's team."""

    proposal: Proposal
    change: Change
    author: str
    lead_of: str | None


class ProposalRefused(Exception):
    """A proposal cannot be read as a change (stale, missing, malformed); `errors` say why."""

    def __init__(self, errors: list[ManifestError]) -> None:
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))
        self.errors = errors


def apply_proposals(
    proposals: Sequence[Proposal], *, bucket: str, job_queue: str, capacity: Capacity
) -> dict[str, Any]:
    """Apply the proposals together (all or nothing). The answer: `outcome` applied | unchanged |
    refused, `versions` (team -> its version now), `errors` (path, message), and for an applied
    change what it did to the quota shares, how long that took, and the shares no team counts in."""
    try:
        read = _read(proposals, bucket)
    except ProposalRefused as exc:
        return _refused(exc.errors)
    changes = [r.change for r in read]
    who = ", ".join(sorted({r.author for r in read}))
    shares = existing_shares(job_queue)
    changed_at = clock.now().isoformat(timespec="seconds").replace("+00:00", "Z")
    for _attempt in range(ATTEMPTS):
        registry, etag = read_registry_for_change(bucket)
        approvals, waiting = _approvals(read, registry, bucket)
        if waiting:
            return _pending(waiting, bucket, changed_at)
        applied = apply_changes(
            registry,
            changes,
            capacity=capacity,
            existing_shares=shares,
            changed_by=who,
            changed_at=changed_at,
            proposals={p.team: p.version_id for p in proposals},
            approvals=approvals,
        )
        if applied.errors:
            return _refused(list(applied.errors))
        if not applied.records or _put_if(bucket, INDEX_KEY, applied.registry.document(), etag):
            break
    else:
        return _refused([ManifestError("teams", f"{ATTEMPTS} other changes were applied meanwhile: apply it again")])
    for record in applied.records:
        _put_record(bucket, record)
    started = time.monotonic()
    policy = applied.policy or applied.registry.policy()
    planned = quota_shares.reconcile(job_queue, policy, capacity, shares)
    wanted = {share.name for share in planned.desired}
    return {
        "outcome": "applied" if applied.records else "unchanged",
        "versions": {team: applied.registry.version_of(team) for team in sorted(p.team for p in proposals)},
        "errors": [],
        "quotaShares": planned.summary,
        "quotaShareSeconds": round(time.monotonic() - started, 3),
        "quotaShareWarnings": list(planned.warnings),
        "sharesWithoutTeams": sorted(share.name for share in shares if share.name not in wanted),
    }


def _put_if(bucket: str, key: str, document: dict[str, Any], etag: str | None) -> bool:
    """Write `document` only if the object is still the one of `etag` (None: still missing);
    False when S3 answers that it is not."""
    condition = {"IfMatch": etag} if etag is not None else {"IfNoneMatch": "*"}
    try:
        client("s3").put_object(
            Bucket=bucket,
            Key=key,
            Body=json.dumps(document, sort_keys=True).encode(),
            ContentType="application/json",
            **condition,
        )
    except Exception as exc:
        if error_code(exc) in CONFLICTS:
            return False
        raise
    return True


def _put_record(bucket: str, record: TeamRecord) -> None:
    """Write the team's record unless a later change's is there already (changes applied at once
    may write their records in any order)."""
    for _attempt in range(ATTEMPTS):
        current, etag = read_json_and_etag(bucket, record_key(record.team))
        if current is not None and int(current.get("version", 0)) >= record.version:
            return
        if _put_if(bucket, record_key(record.team), record.document(), etag):
            return
    raise RuntimeError(f"{record_key(record.team)} kept changing: version {record.version} not written")


def _read(proposals: Sequence[Proposal], bucket: str) -> list[Proposed]:
    """Each proposal's change, and who made it; refused when a proposal is not the team's latest
    (an older one replayed would undo a newer change) or is not a change."""
    s3, read, errors = client("s3"), [], []
    for proposal in proposals:
        key, path = proposal_key(proposal.team), f"teams.{proposal.team}"
        latest = s3.head_object(Bucket=bucket, Key=key).get("VersionId") or "null"
        if latest != proposal.version_id:
            errors.append(ManifestError(path, f"proposal {proposal.version_id} is not the team's latest ({latest})"))
            continue
        body = s3.get_object(Bucket=bucket, Key=key, VersionId=proposal.version_id)["Body"].read()
        try:
            change = Change.parse(json.loads(body))
        except TeamPolicyInvalid as exc:
            errors += [ManifestError(_field(path, e.path), e.message) for e in exc.errors]
            continue
        except json.JSONDecodeError as exc:
            errors.append(ManifestError(path, f"the proposal is not JSON: {exc}"))
            continue
        if change.team != proposal.team:
            errors.append(ManifestError(path, f"the proposal at {key} names team {change.team}"))
            continue
        tags = _tags(s3.get_object_tagging(Bucket=bucket, Key=key, VersionId=proposal.version_id))
        lead_of = tags.get(LEAD_TAG)
        if lead_of is not None and lead_of != proposal.team:
            errors.append(ManifestError(path, f"a lead of team {lead_of} proposed a change of team {proposal.team}"))
            continue
        read.append(Proposed(proposal, change, tags.get(CHANGED_BY_TAG, "unknown"), lead_of))
    if errors:
        raise ProposalRefused(errors)
    return read


def _tags(answer: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: unquote(t["Value"]) for t in answer.get("TagSet", [])}


def _approvals(
    read: Sequence[Proposed], registry: Registry, bucket: str
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Who approved each lead's widening proposal (team -> approver), and the proposals still
    waiting for approval. An approval counts only for the very proposal (its version id) and
    when its author (written only by the stack's PlatformApprovers) is not the proposer."""
    approvals, waiting = {}, []
    for proposed in read:
        fields = widened(registry.entries.get(proposed.proposal.team), proposed.change.entry)
        if proposed.lead_of is None or not fields:
            continue
        approver = _approver(proposed, bucket)
        if approver is not None:
            approvals[proposed.proposal.team] = approver
            continue
        waiting.append(
            {
                "team": proposed.proposal.team,
                "proposal": proposed.proposal.version_id,
                "proposedBy": proposed.author,
                "fields": fields,
            }
        )
    return approvals, waiting


def _approver(proposed: Proposed, bucket: str) -> str | None:
    s3, key = client("s3"), approval_key(proposed.proposal.team)
    try:
        answer = s3.get_object(Bucket=bucket, Key=key)
    except Exception as exc:
        if error_code(exc) in MISSING:
            return None
        raise
    try:
        body = json.loads(answer["Body"].read())
    except json.JSONDecodeError:
        return None
    if not isinstance(body, dict) or body.get("proposal") != proposed.proposal.version_id:
        return None
    version = answer.get("VersionId")
    tagging = s3.get_object_tagging(Bucket=bucket, Key=key, **({"VersionId": version} if version else {}))
    approver = _tags(tagging).get(CHANGED_BY_TAG)
    return approver if approver and approver != proposed.author else None


def _pending(waiting: list[dict[str, Any]], bucket: str, at: str) -> dict[str, Any]:
    """Record each waiting proposal in the registry (pending/<team>.json) and answer `pending`:
    nothing of the change is applied until the platform team approves (`spotline teams approve`)."""
    for item in waiting:
        client("s3").put_object(
            Bucket=bucket,
            Key=pending_key(item["team"]),
            Body=json.dumps(item | {"at": at}, sort_keys=True).encode(),
            ContentType="application/json",
        )
    return {"outcome": "pending", "versions": {}, "errors": [], "pending": waiting}


def _field(team_path: str, change_path: str) -> str:
    """A proposal's field as the registry's: entry.maxInstances -> teams.<team>.maxInstances."""
    inner = change_path.removeprefix("entry").lstrip(".")
    return f"{team_path}.{inner}" if inner and inner != CHANGE_ROOT else team_path


def _refused(errors: list[ManifestError]) -> dict[str, Any]:
    return {"outcome": "refused", "versions": {}, "errors": [{"path": e.path, "message": e.message} for e in errors]}


def proposals_of(event: Mapping[str, Any]) -> list[Proposal]:
    """The ApplyTeamChange event's proposals: {"proposals": [{"team", "versionId"}]} (at most 500)."""
    raw = event.get("proposals")
    if not isinstance(raw, list) or not 1 <= len(raw) <= 500:
        raise ValueError("proposals must be a list of 1 to 500 {team, versionId}")
    proposals = []
    for item in raw:
        team = item.get("team") if isinstance(item, Mapping) else None
        version = item.get("versionId") if isinstance(item, Mapping) else None
        if (
            not isinstance(team, str)
            or not TEAM_NAME.match(team)
            or not isinstance(version, str)
            or len(version) > 1024
        ):
            raise ValueError(
                f"each proposal is {{team: <a team name>, versionId: <S3 version id>}}, got {item!r}"[:300]
            )
        proposals.append(Proposal(team, version))
    return proposals
