"""One AWS Batch quota share per team on the stack's job queue, planned from the TeamPolicy (pure).

The template's SyncQuotaShares custom resource lists the queue's shares, asks `plan` what to do
and applies it (`spotline.aws.quota_shares`); SubmitTrainingJob names the team's share in every
submission (`quota_share_name`). Facts from the AWS Batch user guide ("Quota shares") and API
reference, as the choices below use them:

- A share is named like a team: the team pattern (^[a-z][a-z0-9-]{0,22}[a-z0-9]$) is within
  Batch's rule for quotaShareName (up to 128 letters, numbers, hyphens and underscores).
- Its size is the team's quotaInstances, or, without one, the whole service environment
  (TrainingCapacityInstances): a team that declares no quota shares the environment first come,
  first served, as before quota shares (a share's jobs use only its own and other shares' idle
  capacity, so maxInstances as the default would cap the whole stack at the sum of the teams'
  largest jobs). A declared quota is kept for its team only while all quotas add up to at most
  the environment: more is allowed (AWS documents no rule against it) and warned about.
- A job queue holds at most 20 quota shares; disabled ones count.
- LEND_AND_BORROW with borrowLimit -1 (unlimited): a team's idle instances are lent, and its
  jobs may borrow any idle instances; Batch gives lent capacity back by cross-share preemption
  when the lender's jobs wait. In-share preemption ENABLED lets a team's higher-priority job
  preempt its own lower-priority one (the manifest's `priority` is its schedulingPriority);
  Spotline resumes a preempted job from its checkpoint.
- A team removed from the policy gets its share DISABLED, not deleted: a disabled share takes no
  new jobs "but jobs already submitted can finish", while DeleteQuotaShare terminates them. The
  share comes back ENABLED if the team is listed again.
- The capacity unit is NUM_INSTANCES, the unit of the stack's service environment
  (TrainingCapacityInstances). The user guide describes quota management capacity limits per
  instance type; `CAPACITY_UNIT` is the one place to change when the stack moves to that.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from spotline.core.team_policy import TeamPolicy

CAPACITY_UNIT = "NUM_INSTANCES"
STRATEGY = "LEND_AND_BORROW"
BORROW_LIMIT = -1  # unlimited: a team may use any idle instance of the queue
IN_SHARE_PREEMPTION = True
MAX_SHARES_PER_QUEUE = 20
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


@dataclass(frozen=True, slots=True)
class ShareSpec:
    """A quota share as the policy wants it."""

    name: str
    team: str
    capacity_instances: int
    strategy: str = STRATEGY
    borrow_limit: int = BORROW_LIMIT
    in_share_preemption: bool = IN_SHARE_PREEMPTION

    @property
    def capacity_limits(self) -> list[dict[str, Any]]:
        return [{"capacityUnit": CAPACITY_UNIT, "maxCapacity": self.capacity_instances}]

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
            and dict(self.capacity) == {CAPACITY_UNIT: desired.capacity_instances}
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


def default_quota(capacity_instances: int | None, max_instances: int) -> int:
    """A team without quotaInstances: the whole service environment (its largest job if unknown)."""
    return capacity_instances if capacity_instances is not None else max_instances


def desired_shares(policy: TeamPolicy, capacity_instances: int | None) -> list[ShareSpec]:
    """One share per team of the policy, by team name."""
    return [
        ShareSpec(
            quota_share_name(team),
            team,
            allowance.quota_instances
            if allowance.quota_instances is not None
            else default_quota(capacity_instances, allowance.max_instances),
        )
        for team, allowance in sorted(policy.teams.items())
    ]


def plan(policy: TeamPolicy, existing: Iterable[ExistingShare], capacity_instances: int | None) -> Plan:
    """What turns the queue's `existing` shares into the policy's: create the missing, update the
    changed (capacity, sharing, preemption, or a disabled share of a team listed again), disable
    those of teams no longer listed. Raises QuotaSharesInvalid when the queue would need more
    than 20 shares. `capacity_instances` is the service environment's limit."""
    desired = desired_shares(policy, capacity_instances)
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
            f"TeamPolicy lists {len(wanted)} teams, and a Batch job queue holds at most {MAX_SHARES_PER_QUEUE} "
            f"quota shares (one per team){hint}"
        )
    actions: list[Action] = []
    for share in desired:
        current = have.get(share.name)
        if current is None:
            actions.append(Action("create", share.name, f"team {share.team} has no quota share", desired=share))
        elif not current.matches(share):
            actions.append(Action("update", share.name, _difference(current, share), desired=share, arn=current.arn))
    for name in sorted(set(have) - wanted):
        if have[name].state == "ENABLED":
            actions.append(Action("disable", name, f"{name} is not in the team policy any more", arn=have[name].arn))
    return Plan(tuple(actions), tuple(desired), tuple(_warnings(policy, desired, capacity_instances)))


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
    if dict(current.capacity) != {CAPACITY_UNIT: desired.capacity_instances}:
        shown = ", ".join(f"{n} {unit}" for unit, n in current.capacity.items()) or "none"
        changes.append(f"capacity {shown} -> {desired.capacity_instances} {CAPACITY_UNIT}")
    if current.strategy != desired.strategy or (
        desired.strategy == "LEND_AND_BORROW" and current.borrow_limit != desired.borrow_limit
    ):
        changes.append(
            f"sharing {current.strategy}/{current.borrow_limit} -> {desired.strategy}/{desired.borrow_limit}"
        )
    if current.in_share_preemption != desired.in_share_preemption:
        changes.append(f"in-share preemption -> {desired.preemption['inSharePreemption']}")
    return "; ".join(changes)


def _warnings(policy: TeamPolicy, desired: list[ShareSpec], capacity_instances: int | None) -> list[str]:
    """What the platform team should know: declared quotas that cannot all be kept, or instances no
    job can use. A policy that declares no quota (every team shares the whole environment) is fine."""
    declared = sorted(team for team, allowance in policy.teams.items() if allowance.quota_instances is not None)
    if capacity_instances is None or not declared:
        return []
    warnings = [
        f"team {share.team}'s quota of {share.capacity_instances} instances exceeds the service environment's "
        f"{capacity_instances} (TrainingCapacityInstances): it can never be filled"
        for share in desired
        if share.team in declared and share.capacity_instances > capacity_instances
    ]
    total = sum(share.capacity_instances for share in desired)
    undeclared = [share.team for share in desired if share.team not in declared]
    if total > capacity_instances:
        whole = f" (teams without quotaInstances count as the whole environment: {', '.join(undeclared)})"
        warnings.append(
            f"the teams' quotas add up to {total} instances, more than the service environment's "
            f"{capacity_instances} (TrainingCapacityInstances): not every team can have its whole quota at once"
            + (whole if undeclared else "")
        )
    elif total < capacity_instances:
        warnings.append(
            f"the teams' quotas add up to {total} of the service environment's {capacity_instances} instances: "
            f"jobs borrow only other teams' idle quota, so {capacity_instances - total} stay unused"
        )
    return warnings
