"""One timeline line per CheckTrainingStatus that changed something on-call should see."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from state_samples import status_state

from spotline.core.capacity.policy import JobClock, decide
from spotline.core.state import RunStatus
from spotline_dev.explain.timeline import status_line

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _quiet(**changes: Any) -> RunStatus:
    """A whole `$.status` saying nothing but `changes` (no interruption, slack, notice or move), as its record."""
    sample = status_state()
    quiet = status_state(
        reason="",
        trainingJobName=None,
        instanceType=None,
        interruptions=None,
        preemptions=None,
        capacityShort=False,
        finished=False,
        decision={**sample["decision"], "slackSeconds": None, "escalation": None},
        deadlineAtRisk=None,
    )
    return RunStatus.from_state(quiet | changes)


def _status(clock: JobClock) -> RunStatus:
    decision = decide(clock)
    sample = status_state()
    return _quiet(
        state="starting",
        action="keep-waiting",
        explanation=decision.reason,
        progress={**sample["progress"], "fraction": clock.progress},
        decision={
            **sample["decision"],
            "verdict": decision.verdict,
            "reason": decision.reason,
            "slackSeconds": None,
            "escalation": None,
        },
    )


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


def _check(**status: Any) -> RunStatus:
    sample = status_state()
    decision = {**sample["decision"], "slackSeconds": None, "escalation": None, **status.pop("decision", {})}
    defaults = {"state": "starting", "action": "keep-waiting", "explanation": ""}
    return _quiet(**defaults | status | {"progress": {**sample["progress"], "fraction": 0.5}, "decision": decision})


def test_a_wait_for_capacity_is_said_on_every_batch_attempt() -> None:
    waiting = "Insufficient capacity error from EC2 while launching instances, retrying!"
    spot = {"trainingJobName": "ranker-v2-5ad0fa2b-a1-spot"}
    assert "waiting for spot capacity" in status_line(_check(reason=waiting, **spot))
    assert "waiting for spot capacity" in status_line(_check(reason=f"Batch attempt 2: {waiting}", **spot))
    assert "waiting for" not in status_line(_check(reason="Downloading", **spot))
    queued = _check(state="queued", reason="CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY", capacityShort=True)
    assert "waiting for capacity" in status_line(queued)


def test_slack_is_shown_on_spot_attempts_only() -> None:
    decision = {"slackSeconds": 5400, "reason": "on track"}
    spot = _check(trainingJobName="ranker-v2-5ad0fa2b-a1-spot", decision=decision)
    on_demand = _check(trainingJobName="ranker-v2-5ad0fa2b-a2-od", decision={**decision, "slackSeconds": -60})
    assert status_line(spot).endswith("slack 1h30m")
    assert "slack" not in status_line(on_demand)
