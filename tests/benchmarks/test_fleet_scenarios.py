"""The fleet benchmarks' scenarios are what their comments say (the replays are `make bench`'s)."""

from __future__ import annotations

from collections import Counter

import pytest

from spotline_dev.harness.sandbox.fleet import uploads_of
from spotline_dev.harness.sandbox.scenario import PROJECT_ROOT, load_scenario


@pytest.mark.parametrize(
    ("scenario", "jobs", "teams", "capacity"),
    [
        ("fleet-week.yaml", 49, 3, {"ml.g5.2xlarge": 8}),
        ("fleet-month.yaml", 645, 5, {"ml.g5.2xlarge": 8, "ml.g6.xlarge": 8}),
    ],
)
def test_a_fleet_scenario_has_the_jobs_teams_and_capacity_it_says(
    scenario: str, jobs: int, teams: int, capacity: dict[str, int]
) -> None:
    loaded = load_scenario(PROJECT_ROOT / "benchmarks" / scenario)
    uploads = uploads_of(loaded)

    assert len(uploads) == jobs
    assert len({u.spec.team for u in uploads}) == teams
    assert loaded.capacity == capacity
    by_type = Counter(u.spec.instance_type for u in uploads)
    assert set(by_type) == set(capacity)
    assert all(u.spec.deadline for u in uploads if u.spec.team in ("search-ranking", "nlp"))
