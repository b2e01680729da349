"""The queue's quota shares planned from the TeamPolicy: one per team, named after it, as large as
its quotaInstances or else the whole service environment, created when missing, updated when
changed, disabled when the team leaves, re-enabled when it comes back, at most 20, and torn down
(disabled, then deleted) with the queue."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from spotline.core.quota_shares import (
    CAPACITY_UNIT,
    MAX_SHARES_PER_QUEUE,
    ExistingShare,
    QuotaSharesInvalid,
    ShareSpec,
    desired_shares,
    plan,
    quota_share_name,
    teardown,
)
from spotline.core.team_policy import TeamPolicy

QUEUE_ARN = "arn:aws:batch:us-east-1:123456789012:job-queue/spotline-training"


def _policy(**teams: dict[str, Any]) -> TeamPolicy:
    return TeamPolicy.from_json(json.dumps({"teams": {name.replace("_", "-"): entry for name, entry in teams.items()}}))


def _existing(name: str, capacity: int, state: str = "ENABLED", **overrides: Any) -> ExistingShare:
    """A share as ListQuotaShares describes it (QuotaShareDetail)."""
    detail = {
        "quotaShareName": name,
        "quotaShareArn": f"{QUEUE_ARN}/quota-share/{name}",
        "jobQueueArn": QUEUE_ARN,
        "capacityLimits": [{"maxCapacity": capacity, "capacityUnit": CAPACITY_UNIT}],
        "resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW", "borrowLimit": -1},
        "preemptionConfiguration": {"inSharePreemption": "ENABLED"},
        "state": state,
        "status": "VALID",
        **overrides,
    }
    return ExistingShare.from_detail(detail)


def _kinds(planned: Any) -> list[tuple[str, str]]:
    return [(action.kind, action.name) for action in planned.actions]


def test_one_share_per_team_named_after_it_with_its_quota_or_the_whole_environment() -> None:
    policy = _policy(search_ranking={"maxInstances": 4}, vision={"maxInstances": 2, "quotaInstances": 6}, nlp={})
    assert desired_shares(policy, capacity_instances=8) == [
        ShareSpec("nlp", "nlp", 8),  # no quotaInstances: the environment, shared first come, first served
        ShareSpec("search-ranking", "search-ranking", 8),
        ShareSpec("vision", "vision", 6),
    ]
    # Without the environment's size (never the case in the stack), a team's largest job.
    assert [s.capacity_instances for s in desired_shares(policy, capacity_instances=None)] == [1, 4, 6]
    share = ShareSpec("vision", "vision", 6)
    assert share.capacity_limits == [{"capacityUnit": "NUM_INSTANCES", "maxCapacity": 6}]
    assert share.resource_sharing == {"strategy": "LEND_AND_BORROW", "borrowLimit": -1}
    assert share.preemption == {"inSharePreemption": "ENABLED"}


def test_an_empty_queue_gets_every_teams_share() -> None:
    planned = plan(
        _policy(search_ranking={"quotaInstances": 4}, vision={"quotaInstances": 4}), [], capacity_instances=8
    )
    assert _kinds(planned) == [("create", "search-ranking"), ("create", "vision")]
    assert planned.actions[0].desired == ShareSpec("search-ranking", "search-ranking", 4)
    assert planned.summary == {"create": 2, "update": 0, "disable": 0, "delete": 0}
    assert planned.warnings == ()


def test_a_queue_in_step_needs_nothing() -> None:
    policy = _policy(search_ranking={"quotaInstances": 4}, vision={})
    planned = plan(policy, [_existing("search-ranking", 4), _existing("vision", 8)], capacity_instances=8)
    assert planned.actions == ()


def test_a_larger_service_environment_grows_the_shares_of_teams_without_a_quota() -> None:
    policy = _policy(search_ranking={"quotaInstances": 4}, vision={})
    planned = plan(policy, [_existing("search-ranking", 4), _existing("vision", 8)], capacity_instances=12)
    assert _kinds(planned) == [("update", "vision")]
    assert planned.actions[0].reason == "capacity 8 NUM_INSTANCES -> 12 NUM_INSTANCES"


def test_a_changed_quota_updates_the_share() -> None:
    policy = _policy(search_ranking={"maxInstances": 4, "quotaInstances": 6})
    (action,) = plan(policy, [_existing("search-ranking", 4)], capacity_instances=8).actions
    assert (action.kind, action.arn) == ("update", f"{QUEUE_ARN}/quota-share/search-ranking")
    assert action.desired == ShareSpec("search-ranking", "search-ranking", 6)
    assert action.reason == "capacity 4 NUM_INSTANCES -> 6 NUM_INSTANCES"


def test_a_share_changed_by_hand_is_put_back() -> None:
    by_hand = _existing(
        "vision",
        1,
        capacityLimits=[{"maxCapacity": 2, "capacityUnit": "ml.g5.2xlarge"}],
        resourceSharingConfiguration={"strategy": "RESERVE"},
        preemptionConfiguration={"inSharePreemption": "DISABLED"},
    )
    (action,) = plan(_policy(vision={"quotaInstances": 1}), [by_hand], capacity_instances=8).actions
    assert action.kind == "update"
    assert action.reason == (
        "capacity 2 ml.g5.2xlarge -> 1 NUM_INSTANCES; sharing RESERVE/-1 -> LEND_AND_BORROW/-1; "
        "in-share preemption -> ENABLED"
    )


def test_a_team_removed_from_the_policy_has_its_share_disabled_not_deleted() -> None:
    existing = [_existing("search-ranking", 8), _existing("vision", 1), _existing("old-team", 2, state="DISABLED")]
    planned = plan(_policy(search_ranking={"maxInstances": 4}), existing, capacity_instances=8)
    assert _kinds(planned) == [("disable", "vision")]  # old-team's share is disabled already
    assert planned.actions[0].arn == f"{QUEUE_ARN}/quota-share/vision"
    assert planned.actions[0].desired is None


def test_a_team_listed_again_gets_its_disabled_share_back() -> None:
    (action,) = plan(_policy(vision={}), [_existing("vision", 8, state="DISABLED")], capacity_instances=8).actions
    assert (action.kind, action.reason) == ("update", "DISABLED -> ENABLED (team vision is listed again)")


def test_a_queue_holds_at_most_twenty_shares_counting_disabled_ones() -> None:
    teams = {f"team-{n:02d}": {} for n in range(MAX_SHARES_PER_QUEUE)}
    policy = TeamPolicy.from_json(json.dumps({"teams": teams}))
    assert len(plan(policy, [], capacity_instances=None).actions) == MAX_SHARES_PER_QUEUE
    with pytest.raises(QuotaSharesInvalid, match="lists 20 teams, and a Batch job queue holds at most 20") as raised:
        plan(policy, [_existing("gone", 1, state="DISABLED")], capacity_instances=None)
    assert "the disabled shares of removed teams (gone) count too" in str(raised.value)
    assert "aws batch delete-quota-share" in str(raised.value)
    too_many = TeamPolicy.from_json(json.dumps({"teams": {**teams, "one-more": {}}}))
    with pytest.raises(QuotaSharesInvalid, match="lists 21 teams"):
        plan(too_many, [], capacity_instances=None)


def test_quotas_may_add_up_to_more_than_the_service_environment_with_a_warning() -> None:
    policy = _policy(search_ranking={"quotaInstances": 4}, vision={"quotaInstances": 10})
    planned = plan(policy, [], capacity_instances=8)
    assert _kinds(planned) == [("create", "search-ranking"), ("create", "vision")]  # not refused
    assert planned.warnings == (
        "team vision's quota of 10 instances exceeds the service environment's 8 (TrainingCapacityInstances): "
        "it can never be filled",
        "the teams' quotas add up to 14 instances, more than the service environment's 8 "
        "(TrainingCapacityInstances): not every team can have its whole quota at once",
    )
    assert plan(policy, [], capacity_instances=14).warnings == ()  # exactly the environment: no warning
    assert plan(policy, [], capacity_instances=None).warnings == ()


def test_a_declared_quota_next_to_a_team_without_one_is_warned_about() -> None:
    planned = plan(_policy(search_ranking={"quotaInstances": 2}, vision={}), [], capacity_instances=8)
    assert planned.warnings == (
        "the teams' quotas add up to 10 instances, more than the service environment's 8 "
        "(TrainingCapacityInstances): not every team can have its whole quota at once (teams without "
        "quotaInstances count as the whole environment: vision)",
    )


def test_no_declared_quota_means_one_shared_environment_without_warnings() -> None:
    assert plan(_policy(search_ranking={}, vision={}, nlp={}), [], capacity_instances=8).warnings == ()


def test_instances_in_no_teams_quota_are_warned_about() -> None:
    planned = plan(
        _policy(search_ranking={"quotaInstances": 2}, vision={"quotaInstances": 3}), [], capacity_instances=8
    )
    assert planned.warnings == (
        "the teams' quotas add up to 5 of the service environment's 8 instances: jobs borrow only other "
        "teams' idle quota, so 3 stay unused",
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
        capacity={CAPACITY_UNIT: 3},
        strategy="LEND_AND_BORROW",
        borrow_limit=-1,
        in_share_preemption=True,
        state="ENABLED",
    )
    assert share.matches(ShareSpec("vision", "vision", 3))
    assert not share.matches(ShareSpec("vision", "vision", 3, borrow_limit=100))
    assert not replace(share, state="DISABLED").matches(ShareSpec("vision", "vision", 3))
