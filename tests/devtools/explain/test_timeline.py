"""One timeline line per CheckTrainingStatus that changed something on-call should see."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from spotline.core.policy import JobClock, decide
from spotline_dev.explain.timeline import status_line

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _status(clock: JobClock) -> dict[str, Any]:
    decision = decide(clock)
    return {
        "state": "starting",
        "action": "keep-waiting",
        "explanation": decision.reason,
        "progress": {"fraction": clock.progress},
        "decision": {"verdict": decision.verdict, "reason": decision.reason, "escalation": None},
    }


def test_a_deadline_out_of_reach_says_the_job_stays_on_spot_and_why() -> None:
    late = JobClock(
        now=NOW,
        started_at=NOW - timedelta(hours=9),
        deadline=NOW + timedelta(hours=1),
        total_work_seconds=8 * 3600,
        progress=0.5,
        capacity="spot",
        spot_missing=True,
    )

    line = status_line(_status(late))

    assert line.startswith("starting, 50% done, -> stays on spot: deadline out of reach: 1h left")


def test_a_job_on_track_shows_no_decision() -> None:
    on_track = JobClock(
        now=NOW,
        started_at=NOW,
        deadline=NOW + timedelta(days=2),
        total_work_seconds=8 * 3600,
        progress=0.5,
        capacity="spot",
        spot_missing=False,
    )

    assert status_line(_status(on_track)) == "starting, 50% done"
