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

from spotline.aws import clock, quota_shares
from spotline.aws.clients import client, error_code
from spotline.aws.quota_share_reads import existing_shares
from spotline.aws.team_registry import (
    CHANGED_BY_TAG,
    INDEX_KEY,
    proposal_key,
    read_json_and_etag,
    read_registry_for_change,
    record_key,
)
from spotline.core.errors import ManifestError
from spotline.core.quota_shares import Capacity
from spotline.core.team_policy import TeamPolicyInvalid
from spotline.core.team_registry import CHANGE_ROOT, Change, TeamRecord, apply_changes

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
        changes, who = _read(proposals, bucket)
    except ProposalRefused as exc:
        return _refused(exc.errors)
    shares = existing_shares(job_queue)
    changed_at = clock.now().isoformat(timespec="seconds").replace("+00:00", "Z")
    for _attempt in range(ATTEMPTS):
        registry, etag = read_registry_for_change(bucket)
        applied = apply_changes(
            registry,
            changes,
            capacity=capacity,
            existing_shares=shares,
            changed_by=who,
            changed_at=changed_at,
            proposals={p.team: p.version_id for p in proposals},
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


def _read(proposals: Sequence[Proposal], bucket: str) -> tuple[list[Change], str]:
    """Each proposal's change, and who made them; refused when a proposal is not the team's latest
    (an older one replayed would undo a newer change) or is not a change."""
    s3, changes, authors, errors = client("s3"), [], set(), []
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
        tags = s3.get_object_tagging(Bucket=bucket, Key=key, VersionId=proposal.version_id).get("TagSet", [])
        authors.add(unquote(next((t["Value"] for t in tags if t["Key"] == CHANGED_BY_TAG), "unknown")))
        changes.append(change)
    if errors:
        raise ProposalRefused(errors)
    return changes, ", ".join(sorted(authors))


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
