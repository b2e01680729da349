"""What a manifest the sandbox runs says of itself even when it is invalid: the team folder it is
uploaded under, its kind, its deadline or window, and the account its valid fields name. So a
rejected manifest's run shows only its own errors (not a team-folder mismatch the sandbox made),
its real deadline, and the account it names, not the sandbox's default in its place."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from spotline.core.common.json_schemas import clip, dig
from spotline.core.manifest.loader import ManifestLoadError, parse_manifest
from spotline.core.manifest.manifest import schema
from spotline.core.spec.model import to_rfc3339
from spotline_dev.harness.sandbox.account import PlayedAccount, account_named

FALLBACK_TEAM = "sandbox"
"""The folder of a manifest that names no team the sandbox can use as one."""
MAX_TEAM_FOLDER = 100
MAX_SHOWN = 60


@dataclass(frozen=True)
class Declared:
    """What an invalid manifest declares, as far as it can be read."""

    team: str  # the folder it is uploaded under: its metadata.team when that can be a folder
    kind: str  # TrainingJob, or ScoringJob
    deadline: str | None  # RFC 3339 when it reads as one, else as written; None: it has none
    window: str | None  # a scoring job's nightly window, `01:00-04:00 Europe/Berlin`
    account: PlayedAccount | None  # what its valid role and image name (None: neither)


def declared(body: bytes) -> Declared:
    """What the manifest `body` (rejected) declares. A role or an image its schema refuses names no
    account: the manifest's own error says what is wrong with it."""
    try:
        document: Any = parse_manifest(body)
    except ManifestLoadError:
        document = None
    scoring = dig(document, "kind") == "ScoringJob"
    team = dig(document, "metadata", "team")
    usable_team = isinstance(team, str) and 0 < len(team) <= MAX_TEAM_FOLDER and "/" not in team and team.isprintable()
    prefix = ("spec", "model") if scoring else ("spec",)

    def valid(key: str) -> str | None:
        value = dig(document, *prefix, key)
        return value if _field_validator(key).is_valid(value) else None

    deadline = dig(document, "spec", "deadline") if scoring else dig(document, "spec", "capacity", "deadline")
    return Declared(
        team=team if usable_team else FALLBACK_TEAM,
        kind="ScoringJob" if scoring else "TrainingJob",
        deadline=_moment(deadline),
        window=_window(dig(document, "spec", "window")) if scoring else None,
        account=account_named(valid("roleArn"), valid("image")),
    )


@cache
def _field_validator(key: str) -> Draft202012Validator:
    """The schema's own definition of a training spec's field (a scoring model's refers to it)."""
    return Draft202012Validator(schema()["$defs"]["trainingSpec"]["properties"][key])


def _moment(text: Any) -> str | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(str(text).upper())
        if moment.tzinfo is not None:
            return to_rfc3339(moment)
    except (ValueError, OverflowError):
        pass
    return clip(str(text), MAX_SHOWN)  # as written: its own error says what is wrong with it


def _window(window: Any) -> str | None:
    if not isinstance(window, dict):
        return None
    start, end, zone = (clip(str(window.get(k, "?")), MAX_SHOWN) for k in ("start", "end", "timeZone"))
    return f"{start}-{end} {zone}"


def rejected_run(found: Declared) -> dict[str, Any]:
    """The keys a rejected manifest's run takes from what it declares: its deadline, and for a
    scoring job its kind and its window, with the scoring keys a run has but nothing planned."""
    keys: dict[str, Any] = {"deadline": found.deadline}
    if found.kind == "ScoringJob":
        keys |= {
            "kind": "ScoringJob",
            "window": found.window,
            "instances": None,
            "peakInstances": None,
            "sizing": None,
            "windowEnd": None,
            "windowMet": None,
            "recordsPerSecond": None,
            "shards": 0,
        }
    return keys
