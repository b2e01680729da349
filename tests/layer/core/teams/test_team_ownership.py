"""Ownership (issue 45): a team entry may not name another team's S3 prefix, replica, image
repository, file system, own quota share or training plan unless that team's entry shares it by
name; each refusal names the field and the owner."""

from __future__ import annotations

from typing import Any

import pytest

from spotline.core.teams.team_ownership import ownership_problems, shared_with_each_other
from spotline.core.teams.team_policy import TeamPolicyInvalid
from spotline.core.teams.team_registry import Change, Registry, apply_changes

G5 = "ml.g5.2xlarge"
ECR = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
PLANS = "arn:aws:sagemaker:us-east-1:123456789012:training-plan"
FS = "fs-0123456789abcdef0"
SEARCH = {
    "s3Prefixes": ["s3://ml-data/search-ranking/", "s3://search-ranking-models/"],
    "images": [f"{ECR}/search-ranking/*"],
    "fileSystems": [FS],
    "trainingPlans": [f"{PLANS}/search-*"],
    "quotas": {G5: 2},
    "replicas": {"s3://search-ranking-models/": {"us-west-2": "s3://search-ranking-models-usw2/"}},
}
VISION = {"s3Prefixes": ["s3://ml-data/vision/"], "images": [f"{ECR}/vision/*"]}


def _apply(registry: Registry, *changes: Change) -> Any:
    return apply_changes(
        registry, list(changes), capacity={G5: 8}, existing_shares=[], changed_by="AROA:x", changed_at="2026-12-06"
    )


def _registry(**teams: dict[str, Any]) -> Registry:
    applied = _apply(Registry(), *(Change(team.replace("_", "-"), entry) for team, entry in teams.items()))
    assert not applied.errors, applied.errors
    return applied.registry  # type: ignore[no-any-return]


def _refusals(entry: dict[str, Any]) -> dict[str, str]:
    registry = _registry(search_ranking=SEARCH, vision=VISION)
    applied = _apply(registry, Change("vision", entry))
    assert applied.records == () and applied.registry == registry  # nothing written
    return {e.path: e.message for e in applied.errors}


@pytest.mark.parametrize(
    ("field", "value", "path", "message"),
    [
        ("fileSystems", [FS], "fileSystems[0]", f"{FS} belongs to search-ranking (not shared with vision"),
        (
            "s3Prefixes",
            ["s3://ml-data/vision/", "s3://ml-data/search-ranking/clicks/"],
            "s3Prefixes[1]",
            "s3://ml-data/search-ranking/clicks/ overlaps s3://ml-data/search-ranking/, which belongs to search",
        ),
        (
            "s3Prefixes",
            ["s3://ml-data/"],  # containing another team's prefix is a claim on it
            "s3Prefixes[0]",
            "s3://ml-data/ overlaps s3://ml-data/search-ranking/, which belongs to search-ranking",
        ),
        (
            "images",
            [f"{ECR}/*"],
            "images[0]",
            f"{ECR}/* overlaps {ECR}/search-ranking/*, which belongs to search-ranking",
        ),
        ("quotaShare", "search-ranking", "quotaShare", "search-ranking belongs to search-ranking (not shared"),
        (
            "trainingPlans",
            [f"{PLANS}/*"],
            "trainingPlans[0]",
            f"{PLANS}/* overlaps {PLANS}/search-*, which belongs to search-ranking",
        ),
    ],
)
def test_a_lead_claiming_another_teams_resource_is_refused_naming_the_field_and_the_owner(
    field: str, value: Any, path: str, message: str
) -> None:
    refusals = _refusals({**VISION, field: value})
    assert path in {p.removeprefix("teams.vision.") for p in refusals}, refusals
    assert message in refusals[f"teams.vision.{path}"]


def test_a_replica_pointing_at_another_teams_bucket_is_refused_naming_the_field_and_the_owner() -> None:
    entry = {**VISION, "replicas": {"s3://ml-data/vision/": {"us-west-2": "s3://search-ranking-models-usw2/"}}}
    refusals = _refusals(entry)
    assert refusals == {
        "teams.vision.replicas.s3://ml-data/vision/.us-west-2": "s3://search-ranking-models-usw2/ belongs to "
        "search-ranking (not shared with vision: its entry's shares)"
    }


def test_a_resource_shared_by_name_may_be_named_and_only_the_shared_part() -> None:
    shared = {**SEARCH, "shares": {FS: ["vision"], "s3://ml-data/search-ranking/public/": ["vision"]}}
    registry = _registry(search_ranking=shared, vision=VISION)
    ok = _apply(
        registry,
        Change("vision", {**VISION, "fileSystems": [FS], "s3Prefixes": ["s3://ml-data/search-ranking/public/x/"]}),
    )
    assert not ok.errors
    wider = _apply(registry, Change("vision", {**VISION, "s3Prefixes": ["s3://ml-data/search-ranking/"]}))
    assert [e.path for e in wider.errors] == ["teams.vision.s3Prefixes[0]"]
    other = _apply(registry, Change("nlp", {"fileSystems": [FS]}))  # shared with vision, not nlp
    assert [e.path for e in other.errors] == ["teams.nlp.fileSystems[0]"]
    assert "belongs to search-ranking (not shared with nlp" in other.errors[0].message


def test_a_sharer_is_not_an_owner_and_a_new_resource_may_be_shared_in_the_same_change() -> None:
    shared = {**SEARCH, "shares": {"search-ranking": ["vision", "nlp"]}}
    registry = _registry(search_ranking=shared, vision={**VISION, "quotaShare": "search-ranking"})
    assert not _apply(registry, Change("nlp", {"quotaShare": "search-ranking"})).errors
    both = _apply(
        Registry(),
        Change("ads", {"fileSystems": [FS], "shares": {FS: ["media"]}}),
        Change("media", {"fileSystems": [FS]}),
    )
    assert not both.errors
    neither = _apply(Registry(), Change("ads", {"fileSystems": [FS]}), Change("media", {"fileSystems": [FS]}))
    assert sorted(e.path for e in neither.errors) == ["teams.ads.fileSystems[0]", "teams.media.fileSystems[0]"]


def test_what_a_team_held_before_stays_its_own_and_pools_belong_to_no_team() -> None:
    before = {"search-ranking": SEARCH, "vision": {**VISION, "fileSystems": [FS]}}  # held before the rule
    assert ownership_problems(before, {**before, "vision": {**before["vision"], "maxInstances": 2}}, ["vision"]) == []
    pool = _registry(ads={"quotaShare": "org-a"}, media={"quotaShare": "org-a"})
    assert "media" in pool.entries


def test_shares_is_checked_by_the_schema() -> None:
    with pytest.raises(TeamPolicyInvalid) as refused:
        Change.parse({"team": "vision", "entry": {"shares": {"not a resource": ["nlp"]}}})
    assert [e.path for e in refused.value.errors] == ["entry.shares.not a resource"]


def test_entries_generated_from_manifests_share_what_several_teams_name() -> None:
    image = f"{ECR}/ranker:*"
    entries = {
        "nlp": {"images": [image], "s3Prefixes": ["s3://shared/"]},
        "vision": {"images": [image], "s3Prefixes": ["s3://shared/vision/"]},
    }
    assert _apply(Registry(), *(Change(t, e) for t, e in entries.items())).errors  # each claims the other's
    shared = shared_with_each_other(entries)
    assert shared["nlp"]["shares"] == {image: ["vision"], "s3://shared/": ["vision"]}
    assert not _apply(Registry(), *(Change(t, e) for t, e in shared.items())).errors
