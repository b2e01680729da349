"""The team registry in the stack's registry bucket (layout: `spotline.core.teams.team_registry`):
reading a team's entry, the whole registry, a team's history, and proposing a change.

The Lambdas read a team's entry through a cache of CACHE_SECONDS on the layer's clock: a change
reaches a warm function within that bound. ValidateResources, which admits a run, reads it fresh
(`admission_policy`), so a run started after a change is admitted under it, and a removed team's
runs are refused. Steps of runs already admitted (`policy_for`) read a removed team's last entry:
its running jobs are left alone. Nothing of the policy is in an environment variable: functions
know only the bucket's name (TEAM_REGISTRY_BUCKET).
"""

from __future__ import annotations

import json
import os
import unicodedata
from datetime import datetime
from typing import Any
from urllib.parse import quote

from spotline.aws.common import clock
from spotline.aws.common.clients import client, error_code
from spotline.core.teams.team_policy import TeamAllowance, TeamPolicy
from spotline.core.teams.team_registry import MAX_HISTORY, Change, Registry, TeamRecord

BUCKET_ENV = "TEAM_REGISTRY_BUCKET"
CACHE_SECONDS = 30.0
INDEX_KEY = "index.json"
CHANGED_BY_TAG = "spotline:changed-by"
"""On each proposal: who made it. The bucket policy refuses a proposal whose tag is not the
caller's own principal ARN, so the registry's "changed by" is AWS's word, not the caller's."""
LEAD_TAG = "spotline:lead-of"
"""On a team lead's proposal: the lead's team. The bucket policy (LeadProposalsSayTheirTeam)
refuses a proposal of a principal tagged spotline:team without it, so ApplyTeamChange knows a
lead's proposal: one that widens the team's entry waits for a platform approval."""
MISSING = frozenset({"NoSuchKey", "404", "NotFound"})
DENIED = frozenset({"AccessDenied", "403"})

_cache: dict[tuple[str, str], tuple[datetime, TeamRecord | None]] = {}  # (bucket, team) -> (read at, record)


def record_key(team: str) -> str:
    return f"teams/{team}.json"


def proposal_key(team: str) -> str:
    return f"proposed/{team}.json"


def approval_key(team: str) -> str:
    """Written only by the stack's PlatformApprovers (bucket policy OnlyPlatformApproversApprove)."""
    return f"approvals/{team}.json"


def pending_key(team: str) -> str:
    """A lead's widening proposal waiting for approval (written by ApplyTeamChange only)."""
    return f"pending/{team}.json"


def bucket() -> str:
    name = os.environ.get(BUCKET_ENV)
    if not name:
        raise RuntimeError(f"{BUCKET_ENV} is not set: the function does not know the stack's team registry")
    return name


def record_of(team: str, *, fresh: bool = False, bucket_name: str | None = None) -> TeamRecord | None:
    """The team's current record (None: never in the registry), at most CACHE_SECONDS old unless `fresh`."""
    now, key = clock.now(), (bucket_name or bucket(), team)
    cached = _cache.get(key)
    if not fresh and cached is not None and 0 <= (now - cached[0]).total_seconds() < CACHE_SECONDS:
        return cached[1]
    body = _read_json(key[0], record_key(team))
    record = None if body is None else TeamRecord.from_document(body)
    _cache[key] = (now, record)
    return record


def allowance_of(team: str) -> TeamAllowance | None:
    """The team's entry for a run already admitted (a removed team's last one; None: never listed)."""
    record = record_of(team)
    return None if record is None else record.allowance(removed_too=True)


def policy_for(team: str) -> TeamPolicy:
    """A policy holding the team's entry alone, for a run already admitted (`allowance_of`)."""
    allowance = allowance_of(team)
    return TeamPolicy({} if allowance is None else {team: allowance})


def admission_policy(team: str) -> TeamPolicy:
    """A policy holding the team's entry in force now, read fresh (empty: not listed, or removed)."""
    record = record_of(team, fresh=True)
    allowance = None if record is None else record.allowance()
    return TeamPolicy({} if allowance is None else {team: allowance})


def forget_cached() -> None:
    _cache.clear()


def read_registry(bucket_name: str | None = None) -> Registry:
    """The whole registry (`index.json`); empty before the first change."""
    return Registry.from_document(_read_json(bucket_name or bucket(), INDEX_KEY))


def read_registry_for_change(bucket_name: str) -> tuple[Registry, str | None]:
    """The whole registry and the ETag of the `index.json` it was read from (None before the
    first change): ApplyTeamChange writes the next index only if it is still that one."""
    body, etag = read_json_and_etag(bucket_name, INDEX_KEY)
    return Registry.from_document(body), etag


def history(team: str, bucket_name: str | None = None) -> list[TeamRecord]:
    """Every version of the team's record, newest first (at most MAX_HISTORY)."""
    s3, name = client("s3"), bucket_name or bucket()
    listed = s3.list_object_versions(Bucket=name, Prefix=record_key(team), MaxKeys=MAX_HISTORY)
    versions = [v for v in listed.get("Versions", []) if v["Key"] == record_key(team)]
    records = []
    for version in versions:
        body = s3.get_object(Bucket=name, Key=record_key(team), VersionId=version["VersionId"])["Body"].read()
        records.append(TeamRecord.from_document(json.loads(body)))
    return sorted(records, key=lambda r: r.version, reverse=True)


def propose(change: Change, changed_by: str, bucket_name: str | None = None, *, lead_of: str | None = None) -> str:
    """Put the change as the team's proposal, tagged with who makes it (and, for a team lead, its
    team: `lead_of`); returns its version id."""
    return _put_tagged(bucket_name or bucket(), proposal_key(change.team), change.document(), changed_by, lead_of)


def propose_as_caller(change: Change, changed_by: str, bucket_name: str) -> str:
    """`propose`, first as the platform team; when S3 denies it (a team lead's proposal must say
    its team, bucket policy LeadProposalsSayTheirTeam), again as the team's lead."""
    try:
        return propose(change, changed_by, bucket_name)
    except Exception as exc:
        if error_code(exc) not in DENIED:
            raise
    return propose(change, changed_by, bucket_name, lead_of=change.team)


def approve(team: str, proposal: str, changed_by: str, bucket_name: str) -> str:
    """Record a platform approval of the team's proposal `proposal` (its S3 version id)."""
    return _put_tagged(bucket_name, approval_key(team), {"team": team, "proposal": proposal}, changed_by, None)


def latest_proposal(team: str, bucket_name: str) -> str | None:
    """The version id of the team's latest proposal (None: it has none)."""
    try:
        answer = client("s3").head_object(Bucket=bucket_name, Key=proposal_key(team))
    except Exception as exc:
        if error_code(exc) in MISSING:
            return None
        raise
    return str(answer.get("VersionId") or "null")


def _put_tagged(bucket_name: str, key: str, document: Any, changed_by: str, lead_of: str | None) -> str:
    tags = {CHANGED_BY_TAG: changed_by} | ({LEAD_TAG: lead_of} if lead_of else {})
    answer = client("s3").put_object(
        Bucket=bucket_name,
        Key=key,
        Body=json.dumps(document, sort_keys=True).encode(),
        ContentType="application/json",
        Tagging="&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in tags.items()),
    )
    return str(answer.get("VersionId") or "null")


def _read_json(bucket_name: str, key: str) -> Any:
    return read_json_and_etag(bucket_name, key)[0]


def read_json_and_etag(bucket_name: str, key: str) -> tuple[Any, str | None]:
    """The object's JSON and ETag; (None, None) when it does not exist."""
    try:
        answer = client("s3").get_object(Bucket=bucket_name, Key=key)
    except Exception as exc:
        if error_code(exc) in MISSING:
            return None, None
        raise
    return json.loads(answer["Body"].read()), answer.get("ETag")


def caller_id() -> str:
    """The caller's aws:userid (GetCallerIdentity's UserId: `AROA...:<session>` for a role), the
    value the bucket policy requires in a proposal's spotline:changed-by tag."""
    return str(client("sts").get_caller_identity()["UserId"])


TAG_VALUE_SYMBOLS = frozenset("_.:/=+-@")
"""Besides letters, numbers and spaces, what an S3 object tag value may hold (S3 API reference,
S3Tag: Value "Pattern: ^([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*)$", "Maximum length of 256")."""


class AuthorNotTaggable(ValueError):
    """The caller's aws:userid cannot be an S3 tag value, so no proposal can name its author."""


def author_id() -> str:
    """The caller's aws:userid for a proposal's spotline:changed-by tag; raises AuthorNotTaggable
    before anything is uploaded when S3 would refuse it as a tag value. A role session name may
    hold `,` (STS RoleSessionName: `[\\w+=,.@-]*`), which a tag value may not."""
    who = caller_id()
    bad = sorted({c for c in who if not (c in TAG_VALUE_SYMBOLS or unicodedata.category(c)[0] in "LNZ")})
    if bad or len(who) > 256:
        reason = f"holds {', '.join(repr(c) for c in bad)}" if bad else "is longer than 256 characters"
        raise AuthorNotTaggable(
            f"your AWS identity {who} {reason}, which an S3 object tag value cannot, so the "
            f"proposal cannot name you in its {CHANGED_BY_TAG} tag; assume your role again with a "
            "session name of letters, digits and _ . : / = + - @ only (no commas)"
        )
    return who


def submit_changes(changes: list[Change], *, function_name: str, bucket_name: str) -> dict[str, Any]:
    """Propose `changes` (one proposal per team) and have ApplyTeamChange apply them together;
    its answer (`spotline.aws.teams.team_changes.apply_proposals`). Raises RuntimeError when the
    function fails (not when it refuses: a refusal is an answer), AuthorNotTaggable before
    proposing anything when the caller's id cannot be a tag value."""
    who = author_id()
    proposals = [{"team": c.team, "versionId": propose_as_caller(c, who, bucket_name)} for c in changes]
    return invoke_apply(proposals, function_name)


def invoke_apply(proposals: list[dict[str, str]], function_name: str) -> dict[str, Any]:
    """ApplyTeamChange's answer for `proposals` ({team, versionId}); RuntimeError when it fails."""
    response = client("lambda").invoke(FunctionName=function_name, Payload=json.dumps({"proposals": proposals}))
    answer = json.loads(response["Payload"].read() or b"null")
    if response.get("FunctionError"):
        raise RuntimeError(f"{function_name} failed: {answer.get('errorType')}: {answer.get('errorMessage')}")
    return answer  # type: ignore[no-any-return]
