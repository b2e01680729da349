"""A crowded queue and a deadline: the queue wait now, and when a queued job's priority is raised."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from spotline.core.capacity.policy import JobClock, decide
from spotline.core.capacity.queue import escalation, queue_wait_now
from spotline.core.training.status import CAPACITY_REASON, normalize

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def _waiting(minutes_ago: float, reason: str = "") -> dict[str, Any]:
    created = NOW - timedelta(minutes=minutes_ago)
    return {
        "jobId": f"j-{minutes_ago}",
        "status": "RUNNABLE",
        "createdAt": int(created.timestamp() * 1000),
        "statusReason": reason,
    }


def _queued(reason: str = "") -> Any:
    return normalize({"jobId": "j-1", "status": "RUNNABLE", "statusReason": reason}, None, NOW)


def test_the_queue_wait_now_is_the_longest_wait_for_room_so_far() -> None:
    assert queue_wait_now([], NOW) == 0.0
    assert queue_wait_now([_waiting(5), _waiting(40), _waiting(12)], NOW) == 40 * 60


def test_jobs_waiting_for_spot_capacity_do_not_count() -> None:
    jobs = [_waiting(300, f"{CAPACITY_REASON} - Unable to provision requested compute resources"), _waiting(3)]
    assert queue_wait_now(jobs, NOW) == 3 * 60


def test_a_job_whose_slack_is_no_longer_than_its_wait_is_raised_to_the_team_maximum() -> None:
    raised = escalation(_queued(), current_priority=100, max_priority=500, slack_seconds=1800, waited_seconds=1800)
    assert raised is not None and (raised.current, raised.raised) == (100, 500)
    assert "30m of slack left after 30m waiting for room" in raised.reason
    assert raised.to_dict() == {"from": 100, "to": 500, "reason": raised.reason}


@pytest.mark.parametrize(
    ("status_reason", "current", "slack", "waited"),
    [
        ("", 100, 3600, 1800),  # slack to spare: waiting as long again still makes it
        ("", 500, 60, 7200),  # already at the team's maximum
        (f"{CAPACITY_REASON} - Unable to provision", 100, 60, 7200),  # waits for spot, not for room
    ],
)
def test_no_raise_when_it_would_not_help(status_reason: str, current: int, slack: float, waited: float) -> None:
    assert (
        escalation(
            _queued(status_reason),
            current_priority=current,
            max_priority=500,
            slack_seconds=slack,
            waited_seconds=waited,
        )
        is None
    )


def test_no_raise_for_a_job_without_a_deadline_or_already_running() -> None:
    assert escalation(_queued(), current_priority=1, max_priority=9, slack_seconds=None, waited_seconds=9e9) is None
    running = normalize(
        {"jobId": "j", "status": "RUNNING"}, {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"}, NOW
    )
    assert escalation(running, current_priority=1, max_priority=9, slack_seconds=0, waited_seconds=9e9) is None


def test_the_queue_wait_is_part_of_the_restart_estimate_and_of_the_reason() -> None:
    crowded = JobClock(
        now=NOW,
        started_at=NOW - timedelta(hours=1),
        deadline=NOW + timedelta(hours=3),
        total_work_seconds=4 * 3600,
        progress=0.5,
        capacity="spot",
        spot_missing=False,
        restart_overhead_seconds=600 + 3600,
        queue_wait_seconds=3600,
    )
    decision = decide(crowded)
    assert decision.verdict == "switch-to-on-demand"  # 2h of work + 1h10m restart + 12m margin > 3h left
    assert "1h10m restart incl. 1h queue wait" in decision.reason
    empty = replace(crowded, restart_overhead_seconds=600, queue_wait_seconds=0)
    assert decide(empty).verdict == "continue"  # 2h + 10m + 12m: the same job in an empty queue is on track
