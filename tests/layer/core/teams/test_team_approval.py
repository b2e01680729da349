"""Which changes of a team's entry widen what it may use (a lead's need the platform's approval)
and which narrow it (applied at once)."""

from __future__ import annotations

import pytest

from spotline.core.teams.team_approval import widened

ENTRY = {
    "maxPriority": 500,
    "maxInstances": 2,
    "maxRuntime": "30h",
    "s3Prefixes": ["s3://ml-data/vision/"],
    "fileSystems": ["fs-0123456789abcdef0"],
    "quotas": {"ml.g5.2xlarge": 2},
}


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        ({"maxPriority": 9999}, ["maxPriority"]),
        ({"maxPriority": 100, "maxInstances": 1}, []),
        ({"maxInstances": 8}, ["maxInstances"]),
        ({"maxRuntime": None}, ["maxRuntime"]),  # no maxRuntime: no limit
        ({"maxRuntime": "2d"}, ["maxRuntime"]),
        ({"maxRuntime": "1h"}, []),
        ({"maxKeepAlive": "10m"}, ["maxKeepAlive"]),  # none allowed before
        ({"s3Prefixes": ["s3://ml-data/vision/", "s3://other/"]}, ["s3Prefixes"]),
        ({"s3Prefixes": []}, []),
        ({"fileSystems": ["fs-0fedcba9876543210"]}, ["fileSystems"]),
        ({"quotas": {"ml.g5.2xlarge": 3}}, ["quotas"]),
        ({"quotas": {"ml.g5.2xlarge": 1}}, []),
        ({"quotaShare": "search-ranking"}, ["quotaShare"]),
        ({"shares": {"s3://ml-data/vision/": ["nlp"]}}, ["shares"]),
        ({"replicas": {"s3://ml-data/vision/": {"us-west-2": "s3://vision-usw2/"}}}, ["replicas"]),
        ({"deepLearningContainers": True}, ["deepLearningContainers"]),
    ],
)
def test_widening_fields_are_named_and_narrowing_changes_name_none(
    change: dict[str, object], fields: list[str]
) -> None:
    after = {k: v for k, v in (ENTRY | change).items() if v is not None}
    assert widened(ENTRY, after) == fields


def test_a_new_team_widens_and_a_removal_does_not() -> None:
    assert widened(None, ENTRY) == ["(a new team)"]
    assert widened(ENTRY, None) == []
