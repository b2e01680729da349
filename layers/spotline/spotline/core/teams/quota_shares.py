"""The stack's job queue's AWS Batch quota shares, one per team or shared by teams (`quotaShare`),
planned from the team registry (pure).

ApplyTeamChange (on a registry change) and the template's SyncQuotaShares custom resource (on a
stack change) list the queue's shares, ask `plan` what to do and apply it
(`spotline.aws.teams.quota_shares`); SubmitTrainingJob names the team's share in every
submission (`quota_share_name`). Facts from the AWS Batch user guide ("Quota shares") and API
reference, as the choices below use them:

- A share is named like a team: the team pattern (^[a-z][a-z0-9-]{0,22}[a-z0-9]$) is within
  Batch's rule for quotaShareName (up to 128 letters, numbers, hyphens and underscores).
- Capacity is counted per instance type. botocore's batch model, CapacityLimit.capacityUnit: "For
  SAGEMAKER_TRAINING jobs in a quota management enabled service environment, specify the instance
  type (for example, ml.m5.large). Otherwise, use NUM_INSTANCES", and maxCapacity: "only
  ml.m5.large instances count against this limit, and jobs requiring other instance types wait
  until a matching capacity limit is configured". So the service environment (TrainingCapacity)
  and every share name instance types; a share has at least one and at most five capacity limits
  ("Creating quota shares").
- A share's limits are the team's quotas, or, without any, the whole service environment, every
  type of it: a team that declares no quota shares the environment first come, first served (a
  share's jobs use only its own and other shares' idle capacity, so anything smaller would cap the
  stack). A quota on a type the environment does not have is refused (its jobs would wait
  forever); a declared quota is kept for its team only while the quotas of its type add up to at
  most the environment's: more is allowed (AWS documents no rule against it) and warned about.
- A job queue holds at most 20 quota shares; disabled ones count (AWS Batch service quotas:
  "Maximum number of quota shares for each quota management job queue: 20"). So teams may name a
  shared share (`quotaShare`): its limit per type is the sum of its teams' quotas, kept for them
  together. `registry_problems` refuses a registry change the queue could not hold.
- LEND_AND_BORROW with borrowLimit -1 (unlimited): a team's idle instances are lent, and its
  jobs may borrow any idle instances; Batch gives lent capacity back by cross-share preemption
  when the lender's jobs wait. In-share preemption ENABLED lets a team's higher-priority job
  preempt its own lower-priority one (the manifest's `priority` is its schedulingPriority);
  Spotline resumes a preempted job from its checkpoint.
- A share no team counts in any more gets DISABLED, not deleted: a disabled share takes no
  new jobs "but jobs already submitted can finish", while DeleteQuotaShare terminates them. The
  share comes back ENABLED if a team counts in it again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from spotline.core.common.errors import ManifestError
from spotline.core.teams.team_policy import TeamPolicy

MAX_CAPACITY_LIMITS = 5  # per quota share ("Creating quota shares"); the template's TrainingCapacity too
CAPACITY_ENTRY = re.compile(r"^(ml\.[a-z0-9]+(?:-[a-z0-9]+)*\.[a-z0-9]+)=([0-9]{1,4})$")
STRATEGY = "LEND_AND_BORROW"
BORROW_LIMIT = -1  # unlimited: a team may use any idle instance of the queue
IN_SHARE_PREEMPTION = True
MAX_SHARES_PER_QUEUE = 20
_LENDING = ("LEND", "LEND_AND_BORROW")
SHARE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
TEAM_TAG = "spotline:team"

ActionKind = Literal["create", "update", "disable", "delete"]


class QuotaSharesInvalid(ValueError):
    """The policy cannot be made into the queue's quota shares (the reason says why and what to do)."""


def quota_share_name(team: str) -> str:
    """The team's quota share name: the team name itself, checked against Batch's naming rule."""
    if not SHARE_NAME.match(team):
        raise QuotaSharesInvalid(
            f"team {team!r} cannot name a quota share: up to 128 letters, numbers, hyphens and underscores"
        )
    return team


Capacity = Mapping[str, int]  # instance type -> instances (a service environment's or a share's limits)


def parse_capacity(text: str) -> dict[str, int]:
    """The template's TrainingCapacity, `ml.g5.2xlarge=8,ml.p4d.24xlarge=1`: the service
    environment's capacity limits, one instance type each (at most five, each at least 1)."""
    entries = [part.strip() for part in (text or "").split(",") if part.strip()]
    if not 1 <= len(entries) <= MAX_CAPACITY_LIMITS:
        raise QuotaSharesInvalid(
            f"TrainingCapacity needs 1 to {MAX_CAPACITY_LIMITS} entries <instance type>=<instances> "
            f"separated by commas, e.g. ml.g5.2xlarge=8 (got {text!r})"
        )
    capacity: dict[str, int] = {}
    for entry in entries:
        match = CAPACITY_ENTRY.match(entry)
        if match is None or int(match.group(2)) < 1:
            raise QuotaSharesInvalid(
                f"TrainingCapacity entry {entry!r} is not <instance type>=<instances>, e.g. ml.g5.2xlarge=8"
            )
        if match.group(1) in capacity:
            raise QuotaSharesInvalid(f"TrainingCapacity names {match.group(1)} twice")
        capacity[match.group(1)] = int(match.group(2))
    return capacity


def format_capacity(capacity: Capacity) -> str:
    """`ml.g5.2xlarge=8,ml.p4d.24xlarge=1`, as TrainingCapacity writes it."""
    return ",".join(f"{unit}={n}" for unit, n in sorted(capacity.items()))


@dataclass(frozen=True, slots=True)
class ShareSpec:
    """A quota share as the policy wants it: `capacity` is (instance type, instances) per limit."""

    name: str
    team: str  # what its spotline:team tag says: the share's name (a team's own share is named like it)
    capacity: tuple[tuple[str, int], ...]
    # What Spotline knows of it beyond what Batch holds (not compared: a share is what Batch sees):
    teams: tuple[str, ...] = field(default=(), compare=False)  # the teams whose jobs count in it
    declared: bool = field(default=True, compare=False)  # its limits are its teams' quotas (not the environment)
    strategy: str = STRATEGY
    borrow_limit: int = BORROW_LIMIT
    in_share_preemption: bool = IN_SHARE_PREEMPTION

    @property
    def capacity_limits(self) -> list[dict[str, Any]]:
        return [{"capacityUnit": unit, "maxCapacity": n} for unit, n in self.capacity]

    def limit(self, instance_type: str) -> int | None:
        """The share's limit for the type; None when the share has none (its jobs would wait forever)."""
        return dict(self.capacity).get(instance_type)

    @property
    def resource_sharing(self) -> dict[str, Any]:
        sharing: dict[str, Any] = {"strategy": self.strategy}
        if self.strategy == "LEND_AND_BORROW":
            sharing["borrowLimit"] = self.borrow_limit
        return sharing

    @property
    def preemption(self) -> dict[str, str]:
        return {"inSharePreemption": "ENABLED" if self.in_share_preemption else "DISABLED"}


@dataclass(frozen=True, slots=True)
class ExistingShare:
    """A quota share the queue has (from ListQuotaShares' QuotaShareDetail)."""

    name: str
    arn: str
    capacity: Mapping[str, int]  # capacityUnit -> maxCapacity
    strategy: str
    borrow_limit: int
    in_share_preemption: bool
    state: str  # ENABLED | DISABLED

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any]) -> ExistingShare:
        sharing = detail.get("resourceSharingConfiguration") or {}
        limit = sharing.get("borrowLimit")
        return cls(
            name=str(detail["quotaShareName"]),
            arn=str(detail["quotaShareArn"]),
            capacity={str(c["capacityUnit"]): int(c["maxCapacity"]) for c in detail.get("capacityLimits") or []},
            strategy=str(sharing.get("strategy") or ""),
            borrow_limit=-1 if limit is None else int(limit),
            in_share_preemption=(detail.get("preemptionConfiguration") or {}).get("inSharePreemption") == "ENABLED",
            state=str(detail.get("state") or "ENABLED"),
        )

    def matches(self, desired: ShareSpec) -> bool:
        """Whether the share is already as `desired` wants it (and ENABLED)."""
        return (
            self.state == "ENABLED"
            and dict(self.capacity) == dict(desired.capacity)
            and self.strategy == desired.strategy
            and (self.borrow_limit == desired.borrow_limit or desired.strategy != "LEND_AND_BORROW")
            and self.in_share_preemption == desired.in_share_preemption
        )


@dataclass(frozen=True, slots=True)
class Action:
    """One call to make: CreateQuotaShare, UpdateQuotaShare (to `desired`, ENABLED), UpdateQuotaShare
    to DISABLED, or DeleteQuotaShare. `arn` is None only for "create"."""

    kind: ActionKind
    name: str
    reason: str
    desired: ShareSpec | None = None
    arn: str | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    actions: tuple[Action, ...]
    desired: tuple[ShareSpec, ...]
    warnings: tuple[str, ...] = ()

    @property
    def summary(self) -> dict[str, int]:
        counts = {"create": 0, "update": 0, "disable": 0, "delete": 0}
        for action in self.actions:
            counts[action.kind] += 1
        return counts


def desired_shares(policy: TeamPolicy, capacity: Capacity) -> list[ShareSpec]:
    """One share per quota share name of the policy (a team's own, or the `quotaShare` it names
    with others), its limits the sum of its teams' quotas per type, or the whole service
    environment when none of them declares any; raises QuotaSharesInvalid for a quota on an
    instance type the service environment has no capacity limit for."""
    members: dict[str, list[str]] = {}
    for team in sorted(policy.teams):
        members.setdefault(quota_share_name(policy.share_of(team)), []).append(team)
    shares = []
    for name, teams in sorted(members.items()):
        limits: dict[str, int] = {}
        for team in teams:
            quotas = policy.teams[team].quotas or ()
            unknown = [unit for unit, _ in quotas if unit not in capacity]
            if unknown:
                raise QuotaSharesInvalid(
                    f"team {team}'s quotas name {', '.join(unknown)}, which the service environment has no capacity "
                    f"limit for (TrainingCapacity {format_capacity(capacity)}): Batch would keep its jobs waiting "
                    "until one is configured; add the type to TrainingCapacity or remove it from the team's quotas"
                )
            for unit, n in quotas:
                limits[unit] = limits.get(unit, 0) + n
        declared = any(policy.teams[team].quotas is not None for team in teams)
        chosen = tuple(sorted(limits.items())) if declared else tuple(sorted(capacity.items()))
        shares.append(ShareSpec(name, name, chosen, teams=tuple(teams), declared=declared))
    return shares


def plan(policy: TeamPolicy, existing: Iterable[ExistingShare], capacity: Capacity) -> Plan:
    """What turns the queue's `existing` shares into the policy's: create the missing, update the
    changed (capacity, sharing, preemption, or a disabled share of a team listed again), disable
    those of teams no longer listed. Raises QuotaSharesInvalid when the queue would need more
    than 20 shares or a quota names a type the environment lacks. `capacity` is the service
    environment's limits (TrainingCapacity)."""
    desired = desired_shares(policy, capacity)
    have = {share.name: share for share in existing}
    wanted = {share.name for share in desired}
    needed = len(wanted | set(have))
    if needed > MAX_SHARES_PER_QUEUE:
        removed = sorted(set(have) - wanted)
        hint = (
            f"; the disabled shares of removed teams ({', '.join(removed)}) count too: delete those whose jobs "
            "have ended (aws batch delete-quota-share) and deploy again"
            if removed
            else ""
        )
        raise QuotaSharesInvalid(
            f"the team registry needs {len(wanted)} quota shares, and a Batch job queue holds at most "
            f"{MAX_SHARES_PER_QUEUE}: teams name a shared one in quotaShare{hint}"
        )
    actions: list[Action] = []
    for share in desired:
        current = have.get(share.name)
        if current is None:
            actions.append(Action("create", share.name, f"quota share {share.name} does not exist", desired=share))
        elif not current.matches(share):
            actions.append(Action("update", share.name, _difference(current, share), desired=share, arn=current.arn))
    for name in sorted(set(have) - wanted):
        if have[name].state == "ENABLED":
            actions.append(
                Action("disable", name, f"no team of the registry counts in {name} any more", arn=have[name].arn)
            )
    return Plan(tuple(actions), tuple(desired), tuple(_warnings(policy, desired, capacity)))


def share_problems(
    team: str, instance_type: str, count: int, shares: Iterable[ExistingShare], share_name: str | None = None
) -> list[ManifestError]:
    """Why a job of `count` `instance_type` instances of `team` would wait forever in the queue's
    quota shares ("Jobs stuck in RUNNABLE due to misconfiguration"): no capacity limit for its type
    in its share, or more instances than its share's limit plus what it may borrow (the idle limits
    of the other lending shares of that type, within its borrowLimit). [] when it can start.
    `share_name`: the share the team counts in (its entry's quotaShare; default its own)."""
    shares = list(shares)
    name = quota_share_name(share_name or team)
    own = next((share for share in shares if share.name == name), None)
    if own is None or own.state != "ENABLED":
        message = (
            f"team {team}'s quota share {name} is not enabled on the job queue; page the platform team "
            "(spotline teams apply syncs it)"
        )
        return [ManifestError("metadata.team", message)]
    limit = own.capacity.get(instance_type)
    if limit is None:
        return [
            ManifestError(
                "spec.resources.instanceType",
                f"team {team}'s quota share has no capacity limit for {instance_type} (it has "
                f"{format_capacity(own.capacity)}): Batch would keep the job waiting until one is configured; ask the "
                "platform team for a quota of this type (its registry entry's quotas) or choose one of those types",
            )
        ]
    borrowable = 0
    if own.strategy == "LEND_AND_BORROW":
        lent = sum(s.capacity.get(instance_type, 0) for s in shares if s is not own and s.strategy in _LENDING)
        borrowable = lent if own.borrow_limit < 0 else min(lent, limit * own.borrow_limit // 100)
    if count > limit + borrowable:
        return [
            ManifestError(
                "spec.resources.instanceCount",
                f"{count} {instance_type} exceed team {team}'s quota of {limit} plus the {borrowable} it may "
                "borrow from other teams: Batch would keep the job waiting forever",
            )
        ]
    return []


def teardown(existing: Iterable[ExistingShare]) -> list[Action]:
    """Before the queue goes (stack deletion, or a replaced queue): disable every enabled share, as
    DeleteQuotaShare requires, then delete every share."""
    shares = sorted(existing, key=lambda s: s.name)
    disable = [
        Action("disable", s.name, "the queue is being deleted", arn=s.arn) for s in shares if s.state == "ENABLED"
    ]
    delete = [Action("delete", s.name, "the queue is being deleted", arn=s.arn) for s in shares]
    return disable + delete


def _difference(current: ExistingShare, desired: ShareSpec) -> str:
    changes = []
    if current.state != "ENABLED":
        changes.append(f"{current.state} -> ENABLED (team {desired.team} is listed again)")
    if dict(current.capacity) != dict(desired.capacity):
        shown = format_capacity(current.capacity) or "none"
        changes.append(f"capacity {shown} -> {format_capacity(dict(desired.capacity))}")
    if current.strategy != desired.strategy or (
        desired.strategy == "LEND_AND_BORROW" and current.borrow_limit != desired.borrow_limit
    ):
        changes.append(
            f"sharing {current.strategy}/{current.borrow_limit} -> {desired.strategy}/{desired.borrow_limit}"
        )
    if current.in_share_preemption != desired.in_share_preemption:
        changes.append(f"in-share preemption -> {desired.preemption['inSharePreemption']}")
    return "; ".join(changes)


def _warnings(policy: TeamPolicy, desired: list[ShareSpec], capacity: Capacity) -> list[str]:
    """What the platform team should know, per instance type: declared quotas that cannot all be
    kept, or instances no job can use. A policy that declares no quota is fine."""
    if not any(share.declared for share in desired):
        return []
    warnings = []
    for unit, available in sorted(capacity.items()):
        limits = [(share, share.limit(unit)) for share in desired]
        for share, n in limits:
            if share.declared and n is not None and n > available:
                warnings.append(
                    f"quota share {share.name}'s {n} {unit} exceed the service environment's {available} "
                    f"(TrainingCapacity): it can never be filled"
                )
        total = sum(n for _, n in limits if n is not None)
        undeclared = [share.name for share, n in limits if n is not None and not share.declared]
        if total > available:
            whole = f" (shares without quotas count as the whole environment: {', '.join(undeclared)})"
            warnings.append(
                f"the quota shares of {unit} add up to {total}, more than the service environment's {available} "
                f"(TrainingCapacity): not every share can have its whole quota at once" + (whole if undeclared else "")
            )
        elif total < available:
            warnings.append(
                f"the quota shares of {unit} add up to {total} of the service environment's {available}: jobs "
                f"borrow only other shares' idle quota, so {available - total} {unit} stay unused"
            )
    return warnings


def registry_problems(
    before: TeamPolicy, after: TeamPolicy, capacity: Capacity, existing: Iterable[ExistingShare]
) -> list[ManifestError]:
    """Why the registry `after` a change cannot be made into the queue's quota shares, each naming
    the field of a team whose entry changed (`teams.<team>.quotas.<type>`, `teams.<team>.quotaShare`):
    a quota on a type the service environment lacks; more shares than a queue holds (the disabled
    shares of removed teams count); declared quotas of a type adding up to more than the
    environment's instances of it, where the change adds to them (a total already over, after the
    stack's capacity shrank, does not block other changes)."""
    changed = sorted(
        team for team in set(before.teams) | set(after.teams) if before.teams.get(team) != after.teams.get(team)
    )
    present = [team for team in changed if team in after.teams]
    problems: list[ManifestError] = []
    for team in present:
        for unit, _ in after.teams[team].quotas or ():
            if unit not in capacity:
                problems.append(
                    ManifestError(
                        f"teams.{team}.quotas.{unit}",
                        f"the service environment has no capacity limit for {unit} (TrainingCapacity "
                        f"{format_capacity(capacity)}): Batch would keep the team's jobs waiting forever",
                    )
                )
    if problems:
        return problems
    wanted = {quota_share_name(after.share_of(team)) for team in after.teams}
    kept = {share.name for share in existing if share.name not in wanted}
    if len(wanted | kept) > MAX_SHARES_PER_QUEUE:
        new = [team for team in present if quota_share_name(after.share_of(team)) not in _names(before)]
        for team in new or present[:1]:
            problems.append(
                ManifestError(
                    f"teams.{team}.quotaShare",
                    f"would be quota share {len(wanted | kept)} of the job queue, which holds at most "
                    f"{MAX_SHARES_PER_QUEUE} (disabled ones count: {len(kept)}): name a shared one "
                    f"({', '.join(sorted(wanted & _names(before))[:SHOWN_SHARES]) or 'none yet'})",
                )
            )
        return problems
    for unit, available in sorted(capacity.items()):
        old, new_total = _declared_total(before, unit), _declared_total(after, unit)
        if new_total <= available or new_total <= old:
            continue
        for team in present:
            if dict(after.teams[team].quotas or ()).get(unit, 0) > dict(_quotas(before, team)).get(unit, 0):
                problems.append(
                    ManifestError(
                        f"teams.{team}.quotas.{unit}",
                        f"the registry's quotas of {unit} would add up to {new_total}, more than the service "
                        f"environment's {available} (TrainingCapacity): lower it, or raise TrainingCapacity first",
                    )
                )
    return problems


SHOWN_SHARES = 5


def _names(policy: TeamPolicy) -> set[str]:
    return {quota_share_name(policy.share_of(team)) for team in policy.teams}


def _quotas(policy: TeamPolicy, team: str) -> tuple[tuple[str, int], ...]:
    allowance = policy.teams.get(team)
    return (allowance.quotas or ()) if allowance is not None else ()


def _declared_total(policy: TeamPolicy, unit: str) -> int:
    return sum(n for allowance in policy.teams.values() for u, n in allowance.quotas or () if u == unit)
