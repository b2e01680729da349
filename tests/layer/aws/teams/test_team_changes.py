"""ApplyTeamChange without reserved concurrency: two changes applied at once whose quotas together
exceed the service environment's capacity. The second to write `index.json` finds it changed
(S3's conditional write answers 412), validates again against the first's registry and is refused:
exactly one applies, and the refused one writes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from conftest import example_spec
from spotline.aws.teams import team_changes
from spotline.aws.teams.team_registry import approve, caller_id, pending_key, propose, read_registry, record_key
from spotline.core.teams.team_registry import Change
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.permissions.checker import running
from spotline_dev.harness.sandbox.account import team_allowance

QUOTA = {"ml.g5.2xlarge": 5}  # each alone fits the stack's TrainingCapacity (ml.g5.2xlarge=8); both do not


def _apply(stack: LocalStack, change: Change) -> dict[str, Any]:
    """`spotline teams apply`: propose, then invoke ApplyTeamChange (its handler, its environment)."""
    with running(None):  # the operator's call, even when made from inside a handler (meanwhile)
        version = propose(change, caller_id(), stack.physical["TeamRegistryBucket"])
    answer: dict[str, Any] = stack.invoke(
        "ApplyTeamChangeFunction", {"proposals": [{"team": change.team, "versionId": version}]}
    )
    return answer


def test_two_changes_at_once_whose_quotas_together_exceed_the_capacity_apply_exactly_one(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = {**team_allowance(example_spec()), "quotas": QUOTA}
    first, second = Change("search-ranking", entry), Change("vision", {"quotas": QUOTA})  # its own resources
    answers: dict[str, dict[str, Any]] = {}
    validate: Callable[..., Any] = team_changes.apply_changes

    def meanwhile(*args: Any, **kwargs: Any) -> Any:
        """The first change validated; before it writes, the second is applied whole."""
        result = validate(*args, **kwargs)
        if "vision" not in answers:
            monkeypatch.setattr(team_changes, "apply_changes", validate)
            answers["vision"] = _apply(stack, second)
        return result

    monkeypatch.setattr(team_changes, "apply_changes", meanwhile)
    answers["search-ranking"] = _apply(stack, first)

    assert answers["vision"]["outcome"] == "applied"
    refused = answers["search-ranking"]
    assert refused["outcome"] == "refused"
    assert any(
        e["path"] == "teams.search-ranking.quotas.ml.g5.2xlarge" and "would add up to 10" in e["message"]
        for e in refused["errors"]
    ), refused
    bucket = stack.physical["TeamRegistryBucket"]
    registry = read_registry(bucket)
    assert registry.entries["vision"]["quotas"] == QUOTA
    assert "quotas" not in registry.entries["search-ranking"] and registry.version_of("search-ranking") == 1
    record = json.loads(stack.client("s3").get_object(Bucket=bucket, Key=record_key("search-ranking"))["Body"].read())
    assert record["version"] == 1  # the refused change wrote no record either


def test_apply_team_change_refuses_a_lead_claiming_another_teams_file_system_and_writes_nothing(
    stack: LocalStack,
) -> None:
    """Issue 45's first attack: a lead lists another team's file system, prefix and image."""
    owner = {**team_allowance(example_spec()), "fileSystems": ["fs-0123456789abcdef0"]}
    assert _apply(stack, Change("search-ranking", owner))["outcome"] == "applied"
    claim = {"fileSystems": ["fs-0123456789abcdef0"], "s3Prefixes": owner["s3Prefixes"][:1], "images": owner["images"]}
    answer = _apply(stack, Change("vision", claim))
    assert answer["outcome"] == "refused"
    by_path = {e["path"]: e["message"] for e in answer["errors"]}
    assert by_path["teams.vision.fileSystems[0]"] == (
        "fs-0123456789abcdef0 belongs to search-ranking (not shared with vision: its entry's shares)"
    )
    assert {"teams.vision.s3Prefixes[0]", "teams.vision.images[0]"} <= set(by_path)
    assert "vision" not in read_registry(stack.physical["TeamRegistryBucket"]).entries


LEAD, PLATFORM = "AROALEADVISION:alice", "AROAPLATFORM:pat"


def _propose_as_lead(stack: LocalStack, change: Change) -> dict[str, Any]:
    with running(None):
        version = propose(change, LEAD, stack.physical["TeamRegistryBucket"], lead_of=change.team)
    answer: dict[str, Any] = stack.invoke(
        "ApplyTeamChangeFunction", {"proposals": [{"team": change.team, "versionId": version}]}
    )
    return answer | {"proposal": version}


def test_a_leads_widening_change_waits_for_a_platform_approval_and_a_narrowing_one_applies_at_once(
    stack: LocalStack,
) -> None:
    """Issue 45: a lead raising its own maxPriority to 9999 is not applied until the platform approves."""
    bucket = stack.physical["TeamRegistryBucket"]
    entry = {**team_allowance(example_spec()), "maxPriority": 100}
    assert _apply(stack, Change("search-ranking", entry))["outcome"] in ("applied", "unchanged")  # the platform

    wider = _propose_as_lead(stack, Change("search-ranking", {**entry, "maxPriority": 9999}))
    assert wider["outcome"] == "pending"
    assert wider["pending"] == [
        {"team": "search-ranking", "proposal": wider["proposal"], "proposedBy": LEAD, "fields": ["maxPriority"]}
    ]
    assert read_registry(bucket).entries["search-ranking"]["maxPriority"] == 100
    s3 = stack.client("s3")
    recorded = json.loads(s3.get_object(Bucket=bucket, Key=pending_key("search-ranking"))["Body"].read())
    assert recorded["proposedBy"] == LEAD and recorded["proposal"] == wider["proposal"]

    invoke = {"proposals": [{"team": "search-ranking", "versionId": wider["proposal"]}]}
    with running(None):
        approve("search-ranking", wider["proposal"], LEAD, bucket)  # the proposer approving itself
    assert stack.invoke("ApplyTeamChangeFunction", invoke)["outcome"] == "pending"
    with running(None):
        approve("search-ranking", wider["proposal"], PLATFORM, bucket)
    approved = stack.invoke("ApplyTeamChangeFunction", invoke)
    assert approved["outcome"] == "applied", approved
    record = json.loads(s3.get_object(Bucket=bucket, Key=record_key("search-ranking"))["Body"].read())
    assert (record["entry"]["maxPriority"], record["changedBy"], record["approvedBy"]) == (9999, LEAD, PLATFORM)

    narrower = _propose_as_lead(stack, Change("search-ranking", {**entry, "maxPriority": 50}))
    assert narrower["outcome"] == "applied"  # no approval needed; the old approval names another proposal
    again = _propose_as_lead(stack, Change("search-ranking", {**entry, "maxPriority": 9999}))
    assert again["outcome"] == "pending"  # an approval counts for its own proposal only
