"""A scenario's `teamChanges:`: a team's registry entry changed (or the team removed) at a moment
of the run, through ApplyTeamChange as `spotline teams apply` does, so runs admitted after it see
it. What each change did (applied, unchanged or refused, with the reasons) is kept for the
summary."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spotline.core.teams.team_policy import TeamPolicy, TeamPolicyInvalid
from spotline.core.teams.team_registry import Change
from spotline_dev.harness.local.registry import RegistryChangeRefused, apply_to_registry

if TYPE_CHECKING:
    from spotline_dev.harness.local.handles import LocalStack


class TeamChangeInvalid(ValueError):
    """A `teamChanges` entry cannot be a change; the message names it."""


@dataclass(frozen=True)
class TeamChangeSpec:
    at: float  # seconds after the scenario's start
    change: Change


def parse_team_changes(raw: list[dict[str, Any]], folder: Path, seconds: Any) -> list[TeamChangeSpec]:
    """`teamChanges: [{at, team, entry | file | remove: true}]` (shape checked by the scenario
    schema); each entry checked against the team policy schema, as the stack will."""
    specs = []
    for index, item in enumerate(raw):
        where, team = f"teamChanges[{index}]", str(item["team"])
        entry: dict[str, Any] | None = None
        if "file" in item:
            try:
                entry = json.loads((folder / str(item["file"])).read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise TeamChangeInvalid(f"{where}.file: cannot read {item['file']}: {exc}") from None
        elif "entry" in item:
            entry = dict(item["entry"])
        if entry is not None:
            try:
                TeamPolicy.from_document({"teams": {team: entry}})
            except TeamPolicyInvalid as exc:
                raise TeamChangeInvalid("; ".join(f"{where}: {e.path}: {e.message}" for e in exc.errors)) from None
        specs.append(TeamChangeSpec(seconds(item["at"], f"{where}.at"), Change(team, entry)))
    return specs


def schedule_team_changes(stack: LocalStack, start: datetime, changes: list[TeamChangeSpec]) -> list[dict[str, Any]]:
    """Have each change made at its moment on the stack's clock; returns the list its outcomes
    are added to as they happen."""
    played: list[dict[str, Any]] = []
    for spec in changes:

        def make(spec: TeamChangeSpec = spec) -> None:
            done: dict[str, Any] = {"at": spec.at, "team": spec.change.team, "remove": spec.change.entry is None}
            try:
                answer = apply_to_registry(stack, [spec.change])
                done |= {"outcome": answer["outcome"], "version": answer["versions"].get(spec.change.team)}
            except RegistryChangeRefused as refused:
                done |= {"outcome": "refused", "reason": str(refused)}
            played.append(done)

        stack.clock.at(start + timedelta(seconds=spec.at), make)
    return played
