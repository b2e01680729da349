"""A scoring night as explain, runs and status read it from the run's state document: every
figure is the one the run's steps stored, and the window is said as it stands."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from spotline_dev.explain.scoring import scoring_headline, scoring_next_step, scoring_night


def _state(**run: Any) -> dict[str, Any]:
    shards = [
        {
            "index": 0,
            "size": 10,
            "job": "j-s000",
            "startedAt": "2026-12-05T00:08:00+00:00",
            "endedAt": "2026-12-05T00:20:00+00:00",
        },
        {"index": 1, "size": 10, "job": "j-s001", "startedAt": "2026-12-05T00:28:00+00:00"},
        {"index": 2, "size": 10},
    ]
    return {
        "team": "media-recs",
        "scoring": {
            "plan": {
                "valid": True,
                "problems": [],
                "job": "nightly-scores",
                "instanceType": "ml.c5.2xlarge",
                "summary": "...",
                "startAt": "2026-12-05T00:00:00Z",
            },
            "run": {
                "runId": "20261205T0000-abcdef",
                "model": "ranker-model",
                "input": "s3://data/nightly/",
                "start": "2026-12-05T00:00:00Z",
                "due": "2026-12-05T03:00:00Z",
                "records": 3_000_000,
                "sizing": {
                    "instances": 2,
                    "recordsPerSecond": 1500,
                    "throughputSource": "declared",
                    "headroomPercent": 30,
                    "objects": 30,
                },
                "shards": shards,
                "target": 3,
                "probing": False,
                "measuredRecordsPerSecond": 1400.0,
                "output": "s3://scores/nightly/20261205T0000-abcdef/",
                "atRisk": None,
                "notifications": [],
                "jobsKey": "abcdef",
                "projectedEnd": None,
                "nextCheckSeconds": 300,
                "done": False,
                "checkedAt": "2026-12-05T00:30:00Z",
            }
            | run,
        },
    }


def test_a_running_night_says_its_shards_and_its_projection_against_the_window() -> None:
    night = scoring_night(_state(projectedEnd="2026-12-05T02:40:00Z"))
    assert night is not None
    assert (night.shards, night.shards_scored, night.shards_scoring) == (3, 1, 1)
    assert night.state_in_words() == "scoring: 1 of 3 shards scored, 1 scoring"
    assert (
        night.window_note() == "2026-12-05T03:00:00Z: projected to finish 2026-12-05T02:40:00Z (20m before it closes)"
    )
    assert scoring_headline(night, "RUNNING", "WaitBeforeTheNextLook") == (
        "RUNNING, now in WaitBeforeTheNextLook: scoring: 1 of 3 shards scored, 1 scoring"
    )
    late = scoring_night(_state(projectedEnd="2026-12-05T03:10:00Z", atRisk="even 12 instances finish at 03:10"))
    assert late is not None and late.window_note().endswith("(10m late)")
    assert "WindowAtRisk" in str(scoring_next_step(late, "RUNNING", None, None))


def test_an_ended_night_says_met_or_missed_with_its_margin() -> None:
    state = _state()
    state["outcome"] = {
        "windowMet": False,
        "windowEnd": "2026-12-05T03:00:00Z",
        "finishedAt": "2026-12-05T03:05:00Z",
        "durationSeconds": 11100,
        "marginSeconds": -300,
        "instances": 2,
        "recordsPerSecond": 1400.0,
        "failedShards": [],
        "report": "s3://ingest/manifests/media-recs/nightly.report.json",
    }
    night = scoring_night(state)
    assert night is not None
    assert night.window_note() == "2026-12-05T03:00:00Z: MISSED (finished 2026-12-05T03:05:00Z, 5m late)"
    assert str(scoring_next_step(night, "SUCCEEDED", None, None)).startswith("The window was missed")
    assert night.window_note(datetime(2026, 12, 5, 4, tzinfo=UTC)).startswith("2026-12-05T03:00:00Z: MISSED")


def test_a_night_not_yet_planned_and_an_execution_that_is_not_scoring() -> None:
    refused = {"valid": False, "problems": [], "summary": "refused", "startAt": None}
    night = scoring_night({"scoring": {"plan": refused, "run": None}})
    assert night is not None and night.state_in_words() == "planning" and not night.valid
    assert night.window_note() == "not planned"
    assert scoring_night({"manifest": {}, "training": {}}) is None
