"""The team registry's rules (pure): a change is applied whole or not at all, each changed team
gets a new version (an equal entry none), a removal keeps the last entry for runs already
admitted, and the stack's checks name the field of the team that changed."""

from __future__ import annotations

from typing import Any

import pytest

from spotline.core.teams.quota_shares import MAX_SHARES_PER_QUEUE, ExistingShare, desired_shares
from spotline.core.teams.team_policy import TeamPolicy, TeamPolicyInvalid
from spotline.core.teams.team_registry import Change, Registry, TeamRecord, apply_changes, changes_in, diff_entries

G5, P4D = "ml.g5.2xlarge", "ml.p4d.24xlarge"
CAPACITY = {G5: 8, P4D: 2}
WHEN = "2026-12-01T00:00:00Z"


def _apply(registry: Registry, *changes: Change, existing: list[ExistingShare] | None = None) -> Any:
    return apply_changes(
        registry,
        list(changes),
        capacity=CAPACITY,
        existing_shares=existing or [],
        changed_by="AROA:alice",
        changed_at=WHEN,
    )


def _seeded(**teams: dict[str, Any]) -> Registry:
    applied = _apply(Registry(), *(Change(team.replace("_", "-"), entry) for team, entry in teams.items()))
    assert not applied.errors, applied.errors
    return applied.registry  # type: ignore[no-any-return]


def test_a_change_writes_a_version_per_changed_team_and_an_equal_entry_is_no_change() -> None:
    registry = _seeded(vision={"maxInstances": 2}, nlp={})
    assert {t: v["version"] for t, v in registry.versions.items()} == {"vision": 1, "nlp": 1}
    applied = _apply(registry, Change("vision", {"maxInstances": 4}), Change("nlp", {}))
    assert [(r.team, r.version, r.entry) for r in applied.records] == [("vision", 2, {"maxInstances": 4})]
    assert applied.unchanged == ("nlp",)
    assert applied.records[0].changed_by == "AROA:alice" and applied.records[0].changed_at == WHEN


def test_a_removed_team_keeps_its_last_entry_for_admitted_runs_and_counts_on_when_added_again() -> None:
    registry = _seeded(vision={"maxInstances": 2})
    removed = _apply(registry, Change("vision", None))
    (record,) = removed.records
    assert (record.version, record.removed, record.entry) == (2, True, {"maxInstances": 2})
    assert record.allowance() is None  # no new run
    assert record.allowance(removed_too=True) is not None  # runs already admitted go on
    assert "vision" not in removed.registry.entries and removed.registry.removed == {"vision": 2}
    again = _apply(removed.registry, Change("vision", {"maxInstances": 1}))
    assert again.records[0].version == 3 and again.registry.removed == {}
    assert TeamRecord.from_document(record.document()) == record


def test_an_invalid_entry_refuses_the_whole_change_naming_the_field() -> None:
    registry = _seeded(vision={"maxInstances": 2})
    applied = _apply(registry, Change("nlp", {}), Change("vision", {"maxInstances": 0, "roles": ["x"]}))
    assert [e.path for e in applied.errors] == ["teams.vision.maxInstances", "teams.vision.roles[0]"]
    assert applied.records == () and applied.registry is registry
    twice = _apply(registry, Change("nlp", {}), Change("nlp", None))
    assert [(e.path, e.message) for e in twice.errors] == [("teams.nlp", "is changed twice in one change")]
    gone = _apply(registry, Change("nlp", None))
    assert [e.path for e in gone.errors] == ["teams.nlp"]


def test_quotas_must_name_the_environments_types_and_fit_it_per_type_where_the_change_adds() -> None:
    registry = _seeded(vision={"quotas": {G5: 5}})
    unknown = _apply(registry, Change("nlp", {"quotas": {"ml.g6.2xlarge": 1}}))
    assert [e.path for e in unknown.errors] == ["teams.nlp.quotas.ml.g6.2xlarge"]
    over = _apply(registry, Change("nlp", {"quotas": {G5: 4}}))
    (error,) = over.errors
    assert error.path == f"teams.nlp.quotas.{G5}"
    assert "would add up to 9, more than the service environment's 8" in error.message
    assert not _apply(registry, Change("nlp", {"quotas": {G5: 3, P4D: 2}})).errors
    # A total already over (TrainingCapacity shrank) does not block a change that does not add to it.
    shrunk = apply_changes(
        _seeded(vision={"quotas": {G5: 8}}),
        [Change("vision", {"quotas": {G5: 8}, "maxInstances": 2})],
        capacity={G5: 4},
        existing_shares=[],
        changed_by="x",
        changed_at=WHEN,
    )
    assert not shrunk.errors


def test_more_than_twenty_shares_are_refused_and_teams_may_share_one() -> None:
    alone = {f"team-{n:02d}": {} for n in range(MAX_SHARES_PER_QUEUE)}
    registry = _seeded(**alone)
    (error,) = _apply(registry, Change("team-20", {})).errors
    assert error.path == "teams.team-20.quotaShare"
    assert "would be quota share 21 of the job queue, which holds at most 20" in error.message
    joining = Change("team-20", {"quotaShare": "team-00", "quotas": {G5: 1}})
    (claim,) = _apply(registry, joining).errors  # team-00's own share: it must share it by name
    assert claim.path == "teams.team-20.quotaShare" and "belongs to team-00" in claim.message
    grouped = _apply(registry, Change("team-00", {"shares": {"team-00": ["team-20"]}}), joining)
    assert not grouped.errors
    disabled = ExistingShare("old", "arn:old", {G5: 1}, "LEND_AND_BORROW", -1, True, "DISABLED")
    (error,) = _apply(_seeded(**dict(list(alone.items())[:19])), Change("team-19", {}), existing=[disabled]).errors
    assert "(disabled ones count: 1)" in error.message


def test_a_shared_share_sums_its_teams_quotas_per_type() -> None:
    policy = TeamPolicy.from_document(
        {
            "teams": {
                "ads": {"quotaShare": "org-a", "quotas": {G5: 2}},
                "ads-ranking": {"quotaShare": "org-a", "quotas": {G5: 1, P4D: 1}},
                "vision": {},
            }
        }
    )
    shares = {s.name: s for s in desired_shares(policy, CAPACITY)}
    assert set(shares) == {"org-a", "vision"}
    assert shares["org-a"].capacity == ((G5, 3), (P4D, 1)) and shares["org-a"].teams == ("ads", "ads-ranking")
    assert shares["vision"].capacity == ((G5, 8), (P4D, 2)) and not shares["vision"].declared
    assert policy.share_of("ads") == "org-a" and policy.share_of("vision") == "vision"


def test_a_change_document_and_a_policy_file_are_checked_by_the_schema() -> None:
    assert Change.parse({"team": "vision", "remove": True}) == Change("vision", None)
    assert Change.parse(Change("vision", {"maxInstances": 2}, rollback_of=3).document()).rollback_of == 3
    with pytest.raises(TeamPolicyInvalid) as raised:
        Change.parse({"team": "vision", "entry": {}, "remove": True})
    assert "needs exactly one of entry" in str(raised.value)
    assert changes_in({"teams": {"b-team": {}, "a-team": {}}}) == [Change("a-team", {}), Change("b-team", {})]
    with pytest.raises(TeamPolicyInvalid):
        changes_in({"teams": {"Bad Name": {}}})


def test_a_diff_names_each_field_added_removed_or_changed() -> None:
    assert diff_entries({"maxInstances": 2, "roles": ["a"]}, {"maxInstances": 4, "images": ["i"]}) == [
        '+ images: ["i"]',
        "~ maxInstances: 2 -> 4",
        '- roles: ["a"]',
    ]
    assert diff_entries(None, {"maxInstances": 1}) == ["+ (a new team)", "+ maxInstances: 1"]
    assert diff_entries({"maxInstances": 1}, None) == [
        "- (the team is removed: new runs are refused; running jobs go on)"
    ]
    assert diff_entries({}, {}) == []
