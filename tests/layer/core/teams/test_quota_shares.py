"""The queue's quota shares planned from the TeamPolicy: one per team, named after it, with its
quotas per instance type or else the whole service environment (every type of it), created when
missing, updated when changed, disabled when the team leaves, re-enabled when it comes back, at
most 20, and torn down (disabled, then deleted) with the queue."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from spotline.core.teams.quota_shares import (
    MAX_SHARES_PER_QUEUE,
    ExistingShare,
    QuotaSharesInvalid,
    ShareSpec,
    desired_shares,
    format_capacity,
    parse_capacity,
    plan,
    quota_share_name,
    share_problems,
    teardown,
)
from spotline.core.teams.team_policy import TeamPolicy

QUEUE_ARN = "arn:aws:batch:us-east-1:123456789012:job-queue/spotline-training"
G5, P4D = "ml.g5.2xlarge", "ml.p4d.24xlarge"
ENVIRONMENT = {G5: 8}


def _policy(**teams: dict[str, Any]) -> TeamPolicy:
    return TeamPolicy.from_json(json.dumps({"teams": {name.replace("_", "-"): entry for name, entry in teams.items()}}))


def _existing(name: str, capacity: int | dict[str, int], state: str = "ENABLED", **overrides: Any) -> ExistingShare:
    """A share as ListQuotaShares describes it (QuotaShareDetail)."""
    detail = {
        "quotaShareName": name,
        "quotaShareArn": f"{QUEUE_ARN}/quota-share/{name}",
        "jobQueueArn": QUEUE_ARN,
        "capacityLimits": [
            {"maxCapacity": n, "capacityUnit": unit}
            for unit, n in ({G5: capacity} if isinstance(capacity, int) else capacity).items()
        ],
        "resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW", "borrowLimit": -1},
        "preemptionConfiguration": {"inSharePreemption": "ENABLED"},
        "state": state,
        "status": "VALID",
        **overrides,
    }
    return ExistingShare.from_detail(detail)


def _kinds(planned: Any) -> list[tuple[str, str]]:
    return [(action.kind, action.name) for action in planned.actions]


def test_one_share_per_team_named_after_it_with_its_quotas_or_the_whole_environment() -> None:
    policy = _policy(search_ranking={"maxInstances": 4}, vision={"maxInstances": 2, "quotas": {G5: 6, P4D: 1}}, nlp={})
    environment = {G5: 8, P4D: 2}
    assert desired_shares(policy, environment) == [
        ShareSpec("nlp", "nlp", ((G5, 8), (P4D, 2))),  # no quotas: the environment, every type of it
        ShareSpec("search-ranking", "search-ranking", ((G5, 8), (P4D, 2))),
        ShareSpec("vision", "vision", ((G5, 6), (P4D, 1))),
    ]
    share = ShareSpec("vision", "vision", ((G5, 6), (P4D, 1)))
    assert share.capacity_limits == [{"capacityUnit": G5, "maxCapacity": 6}, {"capacityUnit": P4D, "maxCapacity": 1}]
    assert (share.limit(G5), share.limit("ml.g6.2xlarge")) == (6, None)
    assert share.resource_sharing == {"strategy": "LEND_AND_BORROW", "borrowLimit": -1}
    assert share.preemption == {"inSharePreemption": "ENABLED"}


def test_an_empty_queue_gets_every_teams_share() -> None:
    planned = plan(_policy(search_ranking={"quotas": {G5: 4}}, vision={"quotas": {G5: 4}}), [], ENVIRONMENT)
    assert _kinds(planned) == [("create", "search-ranking"), ("create", "vision")]
    assert planned.actions[0].desired == ShareSpec("search-ranking", "search-ranking", ((G5, 4),))
    assert planned.summary == {"create": 2, "update": 0, "disable": 0, "delete": 0}
    assert planned.warnings == ()


def test_a_queue_in_step_needs_nothing() -> None:
    policy = _policy(search_ranking={"quotas": {G5: 4}}, vision={})
    planned = plan(policy, [_existing("search-ranking", 4), _existing("vision", 8)], ENVIRONMENT)
    assert planned.actions == ()


def test_a_larger_service_environment_grows_the_shares_of_teams_without_a_quota() -> None:
    policy = _policy(search_ranking={"quotas": {G5: 4}}, vision={})
    planned = plan(policy, [_existing("search-ranking", 4), _existing("vision", 8)], {G5: 12})
    assert _kinds(planned) == [("update", "vision")]
    assert planned.actions[0].reason == "capacity ml.g5.2xlarge=8 -> ml.g5.2xlarge=12"


def test_a_changed_quota_updates_the_share() -> None:
    policy = _policy(search_ranking={"maxInstances": 4, "quotas": {G5: 6}})
    (action,) = plan(policy, [_existing("search-ranking", 4)], ENVIRONMENT).actions
    assert (action.kind, action.arn) == ("update", f"{QUEUE_ARN}/quota-share/search-ranking")
    assert action.desired == ShareSpec("search-ranking", "search-ranking", ((G5, 6),))
    assert action.reason == "capacity ml.g5.2xlarge=4 -> ml.g5.2xlarge=6"


def test_a_share_changed_by_hand_is_put_back() -> None:
    by_hand = _existing(
        "vision",
        1,
        capacityLimits=[{"maxCapacity": 2, "capacityUnit": "NUM_INSTANCES"}],
        resourceSharingConfiguration={"strategy": "RESERVE"},
        preemptionConfiguration={"inSharePreemption": "DISABLED"},
    )
    (action,) = plan(_policy(vision={"quotas": {G5: 1}}), [by_hand], ENVIRONMENT).actions
    assert action.kind == "update"
    assert action.reason == (
        "capacity NUM_INSTANCES=2 -> ml.g5.2xlarge=1; sharing RESERVE/-1 -> LEND_AND_BORROW/-1; "
        "in-share preemption -> ENABLED"
    )


def test_a_team_removed_from_the_policy_has_its_share_disabled_not_deleted() -> None:
    existing = [_existing("search-ranking", 8), _existing("vision", 1), _existing("old-team", 2, state="DISABLED")]
    planned = plan(_policy(search_ranking={"maxInstances": 4}), existing, ENVIRONMENT)
    assert _kinds(planned) == [("disable", "vision")]  # old-team's share is disabled already
    assert planned.actions[0].arn == f"{QUEUE_ARN}/quota-share/vision"
    assert planned.actions[0].desired is None


def test_a_team_listed_again_gets_its_disabled_share_back() -> None:
    (action,) = plan(_policy(vision={}), [_existing("vision", 8, state="DISABLED")], ENVIRONMENT).actions
    assert (action.kind, action.reason) == ("update", "DISABLED -> ENABLED (team vision is listed again)")


def test_a_queue_holds_at_most_twenty_shares_counting_disabled_ones() -> None:
    teams = {f"team-{n:02d}": {} for n in range(MAX_SHARES_PER_QUEUE)}
    policy = TeamPolicy.from_json(json.dumps({"teams": teams}))
    assert len(plan(policy, [], ENVIRONMENT).actions) == MAX_SHARES_PER_QUEUE
    with pytest.raises(
        QuotaSharesInvalid, match="needs 20 quota shares, and a Batch job queue holds at most 20"
    ) as raised:
        plan(policy, [_existing("gone", 1, state="DISABLED")], ENVIRONMENT)
    assert "the disabled shares of removed teams (gone) count too" in str(raised.value)
    assert "aws batch delete-quota-share" in str(raised.value)
    too_many = TeamPolicy.from_json(json.dumps({"teams": {**teams, "one-more": {}}}))
    with pytest.raises(QuotaSharesInvalid, match="needs 21 quota shares"):
        plan(too_many, [], ENVIRONMENT)


def test_quotas_may_add_up_to_more_than_the_service_environment_with_a_warning() -> None:
    policy = _policy(search_ranking={"quotas": {G5: 4}}, vision={"quotas": {G5: 10}})
    planned = plan(policy, [], ENVIRONMENT)
    assert _kinds(planned) == [("create", "search-ranking"), ("create", "vision")]  # not refused
    assert planned.warnings == (
        "quota share vision's 10 ml.g5.2xlarge exceed the service environment's 8 (TrainingCapacity): "
        "it can never be filled",
        "the quota shares of ml.g5.2xlarge add up to 14, more than the service environment's 8 "
        "(TrainingCapacity): not every share can have its whole quota at once",
    )
    assert plan(policy, [], {G5: 14}).warnings == ()  # exactly the environment: no warning


def test_a_declared_quota_next_to_a_team_without_one_is_warned_about() -> None:
    planned = plan(_policy(search_ranking={"quotas": {G5: 2}}, vision={}), [], ENVIRONMENT)
    assert planned.warnings == (
        "the quota shares of ml.g5.2xlarge add up to 10, more than the service environment's 8 "
        "(TrainingCapacity): not every share can have its whole quota at once (shares without "
        "quotas count as the whole environment: vision)",
    )


def test_no_declared_quota_means_one_shared_environment_without_warnings() -> None:
    assert plan(_policy(search_ranking={}, vision={}, nlp={}), [], ENVIRONMENT).warnings == ()


def test_instances_in_no_teams_quota_are_warned_about() -> None:
    planned = plan(_policy(search_ranking={"quotas": {G5: 2}}, vision={"quotas": {G5: 3}}), [], ENVIRONMENT)
    assert planned.warnings == (
        "the quota shares of ml.g5.2xlarge add up to 5 of the service environment's 8: jobs borrow only other "
        "shares' idle quota, so 3 ml.g5.2xlarge stay unused",
    )


def test_the_queue_going_away_disables_then_deletes_every_share() -> None:
    existing = [_existing("vision", 1), _existing("old-team", 2, state="DISABLED"), _existing("nlp", 1)]
    assert [(a.kind, a.name) for a in teardown(existing)] == [
        ("disable", "nlp"),
        ("disable", "vision"),
        ("delete", "nlp"),
        ("delete", "old-team"),
        ("delete", "vision"),
    ]
    assert all(a.arn == f"{QUEUE_ARN}/quota-share/{a.name}" for a in teardown(existing))
    assert teardown([]) == []


def test_a_share_is_named_after_its_team_within_batchs_rule() -> None:
    assert quota_share_name("search-ranking") == "search-ranking"
    longest = "a" + "b" * 22 + "c"  # the team pattern's longest name, well within 128
    assert quota_share_name(longest) == longest
    for bad in ("", "team b", "x" * 129, "team/b"):
        with pytest.raises(QuotaSharesInvalid, match="cannot name a quota share"):
            quota_share_name(bad)


def test_a_described_share_reads_its_batch_fields() -> None:
    share = _existing("vision", 3)
    assert share == ExistingShare(
        name="vision",
        arn=f"{QUEUE_ARN}/quota-share/vision",
        capacity={G5: 3},
        strategy="LEND_AND_BORROW",
        borrow_limit=-1,
        in_share_preemption=True,
        state="ENABLED",
    )
    assert share.matches(ShareSpec("vision", "vision", ((G5, 3),)))
    assert not share.matches(ShareSpec("vision", "vision", ((G5, 3),), borrow_limit=100))
    assert not share.matches(ShareSpec("vision", "vision", ((G5, 3), (P4D, 1))))
    assert not replace(share, state="DISABLED").matches(ShareSpec("vision", "vision", ((G5, 3),)))


def test_quotas_are_per_instance_type_and_each_type_must_be_the_environments() -> None:
    """CapacityLimit: "jobs requiring other instance types wait until a matching capacity limit is
    configured", so a quota on a type the environment lacks is refused, naming the team and type."""
    policy = _policy(vision={"quotas": {G5: 2, P4D: 1}})
    with pytest.raises(QuotaSharesInvalid, match=r"team vision's quotas name ml\.p4d\.24xlarge, which the service"):
        plan(policy, [], {G5: 8})
    planned = plan(policy, [], {G5: 8, P4D: 2})
    assert planned.warnings == (
        "the quota shares of ml.g5.2xlarge add up to 2 of the service environment's 8: jobs borrow only other "
        "shares' idle quota, so 6 ml.g5.2xlarge stay unused",
        "the quota shares of ml.p4d.24xlarge add up to 1 of the service environment's 2: jobs borrow only other "
        "shares' idle quota, so 1 ml.p4d.24xlarge stay unused",
    )


def test_training_capacity_is_read_and_written_per_instance_type() -> None:
    assert parse_capacity("ml.g5.2xlarge=8, ml.p4d.24xlarge=1") == {G5: 8, P4D: 1}
    assert format_capacity({P4D: 1, G5: 8}) == "ml.g5.2xlarge=8,ml.p4d.24xlarge=1"
    for bad, reason in [
        ("", "needs 1 to 5 entries"),
        ("8", "is not <instance type>=<instances>"),
        ("ml.g5.2xlarge=0", "is not <instance type>=<instances>"),
        ("ml.g5.2xlarge=1,ml.g5.2xlarge=2", "names ml.g5.2xlarge twice"),
        (",".join(f"ml.g5.{n}xlarge=1" for n in range(2, 8)), "needs 1 to 5 entries"),
    ]:
        with pytest.raises(QuotaSharesInvalid, match=reason):
            parse_capacity(bad)


def test_a_job_its_share_cannot_admit_is_named_by_field() -> None:
    """A job of a type the team's share has no limit for, or larger than its quota plus what it may
    borrow (the other lending shares' limits of that type), would wait RUNNABLE forever."""
    shares = [
        _existing("vision", {G5: 2}),
        _existing("nlp", {G5: 3, P4D: 1}),
        _existing("ads", {G5: 1}, state="DISABLED"),
    ]
    assert share_problems("vision", G5, 6, shares) == []  # 2 + 3 + 1 lent
    (too_many,) = share_problems("vision", G5, 7, shares)
    assert too_many.path == "spec.resources.instanceCount"
    assert too_many.message == (
        "7 ml.g5.2xlarge exceed team vision's quota of 2 plus the 4 it may borrow from other teams: "
        "Batch would keep the job waiting forever"
    )
    (other_type,) = share_problems("vision", P4D, 1, shares)
    assert other_type.path == "spec.resources.instanceType"
    assert other_type.message.startswith("team vision's quota share has no capacity limit for ml.p4d.24xlarge (it has")
    capped = [
        _existing("vision", {G5: 2}, resourceSharingConfiguration={"strategy": "LEND_AND_BORROW", "borrowLimit": 50})
    ]
    assert share_problems("vision", G5, 3, capped + shares[1:]) == []  # 50 % of 2: one more
    assert [p.path for p in share_problems("vision", G5, 4, capped + shares[1:])] == ["spec.resources.instanceCount"]
    reserved = [_existing("vision", {G5: 2}, resourceSharingConfiguration={"strategy": "RESERVE"}), *shares[1:]]
    assert [p.path for p in share_problems("vision", G5, 3, reserved)] == ["spec.resources.instanceCount"]
    assert [p.path for p in share_problems("search-ranking", G5, 1, shares)] == ["metadata.team"]
    assert [p.path for p in share_problems("ads", G5, 1, shares)] == ["metadata.team"]  # disabled
