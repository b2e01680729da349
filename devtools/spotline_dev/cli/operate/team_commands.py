"""`spotline teams list | show | validate | diff | apply | history | rollback | approve | remove`: what
each prints (`--output table|json`) and the exit codes they keep (0 done, 1 refused or not found,
2 usage, 4 AWS)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from spotline.aws.teams.team_registry import read_registry
from spotline.core.common.errors import ManifestError
from spotline.core.teams.team_registry import Change, TeamRecord, diff_entries
from spotline_dev.cli.operate.commands import run_deployed
from spotline_dev.cli.operate.deployment import Deployment, OperateError
from spotline_dev.cli.operate.output import as_json, table
from spotline_dev.cli.operate.teams import (
    ChangeRefused,
    apply,
    approve_pending,
    check,
    current,
    read_changes,
    records,
    rollback_change,
)
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_USAGE


def cmd_teams_list(args: argparse.Namespace, deployment: Deployment) -> int:
    registry = read_registry(deployment.registry_bucket)
    rows = [
        {
            "team": team,
            "version": int(registry.versions.get(team, {}).get("version", 0)),
            "quotaShare": entry.get("quotaShare") or team,
            "quotas": entry.get("quotas") or {},
            "changedBy": registry.versions.get(team, {}).get("changedBy", ""),
            "changedAt": registry.versions.get(team, {}).get("changedAt", ""),
        }
        for team, entry in sorted(registry.entries.items())
    ]
    if args.output == "json":
        print(as_json(rows))
        return EXIT_OK
    if not rows:
        print(f"No team in the registry of stack {deployment.stack} (spotline teams apply FILE adds them)")
        return EXIT_OK
    shown = [
        [r["team"], str(r["version"]), r["quotaShare"], _quotas(r["quotas"]), r["changedAt"], r["changedBy"]]
        for r in rows
    ]
    print(table(shown, ["TEAM", "VERSION", "QUOTA SHARE", "QUOTAS", "CHANGED AT", "CHANGED BY"]))
    print(f"{len(rows)} teams")
    return EXIT_OK


def cmd_teams_show(args: argparse.Namespace, deployment: Deployment) -> int:
    record = current(deployment, args.team)
    if args.output == "json":
        print(as_json(record.document()))
        return EXIT_OK
    state = "removed: new runs are refused" if record.removed else "in force"
    approved = f", approved by {record.approved_by}" if record.approved_by else ""
    changed = f"changed {record.changed_at} by {record.changed_by}{approved}"
    print(f"{record.team} version {record.version} ({state}), {changed}")
    print(json.dumps(record.entry, indent=2, sort_keys=True))
    return EXIT_OK


def cmd_teams_validate(args: argparse.Namespace, deployment: Deployment | None = None) -> int:
    """Without a stack, offline: what needs no stack (the JSON Schema, each entry's own rules).
    With one, also the stack's checks; called without a deployment (a command that needs no
    stack), it connects only when --stack (or $SPOTLINE_STACK) names one."""
    if deployment is None:
        if args.stack:
            return run_deployed(cmd_teams_validate)(args)
        return _validated_offline(args)
    diff = _checked_diff(args, deployment)
    if isinstance(diff, int):
        return diff
    changed = [team for team, lines in diff.items() if lines]
    if args.output == "json":
        print(as_json({"file": args.file, "valid": True, "teams": len(diff), "changed": changed}))
    else:
        print(f"{args.file}: valid for stack {deployment.stack}: {len(diff)} teams, {len(changed)} would change")
    return EXIT_OK


OFFLINE_NOT_CHECKED = (
    "not checked without --stack: quota types and totals within TrainingCapacity, quota shares, "
    "resources other teams hold"
)


def _validated_offline(args: argparse.Namespace) -> int:
    try:
        changes = _changes(args.file)
    except OperateError as exc:
        print(f"spotline teams validate: usage error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(changes, int):
        return changes
    if args.output == "json":
        print(as_json({"file": args.file, "valid": True, "teams": len(changes), "stack": None}))
    else:
        print(f"{args.file}: valid offline: {len(changes)} teams ({OFFLINE_NOT_CHECKED})")
    return EXIT_OK


def cmd_teams_diff(args: argparse.Namespace, deployment: Deployment) -> int:
    diff = _checked_diff(args, deployment)
    if isinstance(diff, int):
        return diff
    if args.output == "json":
        print(as_json({team: lines for team, lines in diff.items() if lines}))
        return EXIT_OK
    for team, lines in diff.items():
        for line in lines:
            print(f"{team}: {line}")
    if not any(diff.values()):
        print(f"{args.file}: no change to the registry of stack {deployment.stack}")
    return EXIT_OK


def cmd_teams_apply(args: argparse.Namespace, deployment: Deployment) -> int:
    changes = _changes(args.file)
    if isinstance(changes, int):
        return changes
    return _applied(args, deployment, changes)


def cmd_teams_remove(args: argparse.Namespace, deployment: Deployment) -> int:
    current(deployment, args.team)
    if not args.yes and sys.stdin.isatty():
        answer = input(f"Remove team {args.team} (new runs refused; running jobs go on)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("Nothing removed.")
            return EXIT_OK
    return _applied(args, deployment, [Change(args.team, None)])


def cmd_teams_rollback(args: argparse.Namespace, deployment: Deployment) -> int:
    return _applied(args, deployment, [rollback_change(deployment, args.team, args.version)])


def cmd_teams_approve(args: argparse.Namespace, deployment: Deployment) -> int:
    try:
        answer = approve_pending(deployment, args.team)
    except ChangeRefused as refused:
        return _refused(args, refused.errors)
    return _answered(args, answer)


def cmd_teams_history(args: argparse.Namespace, deployment: Deployment) -> int:
    found = records(deployment, args.team)
    if args.output == "json":
        print(as_json([record.document() for record in found]))
        return EXIT_OK
    rows = [
        [str(r.version), r.changed_at, r.changed_by, _what_changed(r, older)]
        for r, older in zip(found, [*found[1:], None], strict=True)
    ]
    print(table(rows, ["VERSION", "CHANGED AT", "CHANGED BY", "CHANGE"]))
    return EXIT_OK


# --- helpers ----------------------------------------------------------------------------------


def _changes(path: str) -> list[Change] | int:
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as exc:
        raise OperateError(f"{path}: cannot read file: {exc.strerror or exc}", usage=True) from None
    try:
        return read_changes(data, path)
    except ChangeRefused as refused:
        for error in refused.errors:
            print(f"{path}: {error.path}: {error.message}", file=sys.stderr)
        print("spotline teams: refused; the registry is unchanged", file=sys.stderr)
        return EXIT_INVALID


def _checked_diff(args: argparse.Namespace, deployment: Deployment) -> dict[str, list[str]] | int:
    """What FILE would change, per team, checked against the stack; or a refusal's exit code."""
    changes = _changes(args.file)
    if isinstance(changes, int):
        return changes
    try:
        return check(deployment, changes).diff()
    except ChangeRefused as refused:
        return _refused(args, refused.errors)


def _applied(args: argparse.Namespace, deployment: Deployment, changes: list[Change]) -> int:
    try:
        answer = apply(deployment, changes)
    except ChangeRefused as refused:
        return _refused(args, refused.errors)
    return _answered(args, answer)


def _answered(args: argparse.Namespace, answer: dict[str, Any]) -> int:
    if args.output == "json":
        print(as_json(answer))
        return EXIT_OK
    if answer["outcome"] == "pending":
        for item in answer.get("pending", []):
            print(
                f"Pending: {item['team']} widens {', '.join(item['fields'])}: proposed by {item['proposedBy']}, "
                f"waits for the platform team's approval (spotline teams approve {item['team']})"
            )
        return EXIT_OK
    versions = ", ".join(f"{team} version {version}" for team, version in answer["versions"].items())
    if answer["outcome"] == "unchanged":
        print(f"No change: {versions} already in force")
    else:
        print(f"Applied: {versions}")
    shares, seconds = answer.get("quotaShares") or {}, answer.get("quotaShareSeconds", 0.0)
    done = ", ".join(f"{n} {kind}d" for kind, n in shares.items() if n) or "none changed"
    print(f"Quota shares: {done} in {seconds:.0f} s")
    for warning in answer.get("quotaShareWarnings", []):
        print(f"Warning: {warning}")
    orphans = answer.get("sharesWithoutTeams") or []
    if orphans:
        print(f"Quota shares no team counts in (disabled; delete once their jobs end): {', '.join(orphans)}")
    return EXIT_OK


def _refused(args: argparse.Namespace, errors: list[ManifestError]) -> int:
    if args.output == "json":
        print(as_json({"valid": False, "errors": [e.to_dict() for e in errors]}))
    for error in errors:
        print(f"{error.path}: {error.message}", file=sys.stderr)
    print("spotline teams: refused; the registry is unchanged", file=sys.stderr)
    return EXIT_INVALID


def _quotas(quotas: dict[str, Any]) -> str:
    return ",".join(f"{t}={n}" for t, n in sorted(quotas.items())) or "-"


def _what_changed(record: TeamRecord, older: TeamRecord | None) -> str:
    if record.removed:
        return "removed"
    if older is None:
        return "added"
    lines = diff_entries(older.entry if older and not older.removed else None, record.entry)
    fields = ", ".join(line.split(":", 1)[0] for line in lines)
    rolled = f"rollback to {record.rollback_of}: " if record.rollback_of else ""
    return rolled + (fields or "(same entry)")
