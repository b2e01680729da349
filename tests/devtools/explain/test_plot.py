"""The picture of a run: the default sandbox scenario's two histories (spot riding out the
interruptions and the capacity gap; the hotfix moved to on-demand), a rejected manifest, and
small hand-built histories for the paths the scenario does not take (a resubmission after a
back-off, a run continued in a fresh execution, a stopped execution, a damaged history)."""

from __future__ import annotations

import itertools
import json
import struct
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from state_samples import continued_as_state, outcome_state, previous_attempt_state, status_state, training_state

from conftest import run_upload
from spotline_dev.explain.plot import RunPicture, heading, plot_run, run_picture
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario

T0 = datetime(2026, 12, 1, tzinfo=UTC)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def default_runs() -> dict[str, list[dict[str, Any]]]:
    """The default scenario's histories by job name (ranker-v2, urgent-retrain), run once."""
    runs = run_scenario(load_scenario(None))["executions"]
    return {run["name"].split("-", 2)[2].rsplit("-", 1)[0]: run["history"] for run in runs}


def _hours(picture: RunPicture, moment: datetime) -> float:
    assert picture.start is not None
    return (moment - picture.start).total_seconds() / 3600


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    return width, height


# --- the default scenario ---------------------------------------------------------------------


def test_spot_run_shows_its_interruptions_and_the_capacity_gap_and_never_on_demand(
    default_runs: dict[str, list[dict[str, Any]]],
) -> None:
    picture = run_picture(default_runs["ranker-v2"])

    assert picture.start == T0
    assert picture.deadline == datetime(2026, 12, 2, 6, tzinfo=UTC)
    assert (picture.status, picture.outcome, picture.deadline_met) == ("SUCCEEDED", "TrainingSucceeded", True)
    assert picture.job == "search-ranking/ranker-v2"
    assert picture.name and picture.name.startswith("search-ranking-ranker-v2-")
    assert picture.attempts == ((1, "spot"),)
    kinds = {segment.kind for segment in picture.segments}
    assert "on-demand" not in kinds
    interrupted = [s for s in picture.segments if s.kind == "interrupted"]
    assert len(interrupted) >= 2
    assert [round(_hours(picture, s.start)) for s in interrupted][:2] == [2, 5]
    (gap,) = [s for s in picture.segments if s.kind == "waiting for capacity" and s.end - s.start > timedelta(hours=5)]
    assert 6 <= _hours(picture, gap.start) <= 6.5
    assert 12 <= _hours(picture, gap.end) <= 12.5
    assert picture.segments[-1].kind == "spot"
    assert picture.end is not None and picture.segments[-1].end == picture.end
    assert [(d.kind, d.label) for d in picture.decisions] == [("submit", "attempt 1 on spot"), ("end", "completed")]


def test_segments_follow_each_other_in_time_without_overlapping(
    default_runs: dict[str, list[dict[str, Any]]],
) -> None:
    for history in default_runs.values():
        segments = run_picture(history).segments
        assert all(s.start < s.end for s in segments)
        assert all(a.end <= b.start for a, b in itertools.pairwise(segments))


def test_hotfix_run_switches_to_on_demand_for_its_deadline(default_runs: dict[str, list[dict[str, Any]]]) -> None:
    picture = run_picture(default_runs["urgent-retrain"])

    assert picture.deadline == datetime(2026, 12, 1, 11, tzinfo=UTC)
    assert picture.attempts == ((1, "spot"), (2, "on-demand"))
    (switch,) = [d for d in picture.decisions if d.kind == "switch"]
    assert switch.label.startswith("switch to on-demand: deadline at risk")
    labels = [d.label for d in picture.decisions]
    assert labels[0] == "attempt 1 on spot"
    assert "attempt 2 on on-demand" in labels
    assert labels[-1] == "completed"
    on_demand = [s for s in picture.segments if s.kind == "on-demand"]
    assert on_demand and all(s.attempt == 2 and s.start >= switch.at for s in on_demand)
    assert all(s.end <= switch.at for s in picture.segments if s.attempt == 1)
    assert any(s.kind == "interrupted" for s in picture.segments)
    assert picture.deadline_met is True
    first_line = heading(picture).splitlines()[0]
    assert first_line == f"{picture.name}: TrainingSucceeded, deadline met"
    assert heading(picture, "hotfix").startswith(
        "hotfix: TrainingSucceeded, deadline met\nsearch-ranking/ranker-hotfix"
    )


def test_checkpointed_progress_never_goes_back_and_ends_at_100_percent(
    default_runs: dict[str, list[dict[str, Any]]],
) -> None:
    for history in default_runs.values():
        points = run_picture(history).progress
        fractions = [p.fraction for p in points]
        assert len(points) > 10
        assert fractions == sorted(fractions)  # checkpoints restored, no work lost between them
        assert fractions[-1] == 1.0
        assert [p.at for p in points] == sorted(p.at for p in points)


def test_the_switch_line_is_where_the_policy_would_move_to_on_demand(
    default_runs: dict[str, list[dict[str, Any]]],
) -> None:
    picture = run_picture(default_runs["urgent-retrain"])
    (switch,) = [d for d in picture.decisions if d.kind == "switch"]

    assert picture.switch_line  # one point per spot check: its time plus its slack, at its progress
    assert all(point.at <= picture.deadline for point in picture.switch_line)  # type: ignore[operator]
    # The switch happened where the clock met the line: the last spot check's point is its own moment.
    assert picture.switch_line[-1].at == switch.at
    assert all(point.at >= T0 for point in picture.switch_line)


def test_plot_writes_a_png_of_a_sensible_size(default_runs: dict[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    for name, history in default_runs.items():
        path = plot_run(history, tmp_path / "plots" / f"{name}.png", title=name)
        assert path == tmp_path / "plots" / f"{name}.png"
        width, height = _png_size(path)
        assert 900 <= width <= 1600
        assert 450 <= height <= 1000
        assert width > height


# --- rejected, damaged and hand-built histories -----------------------------------------------


def test_rejected_manifest_gives_an_empty_picture_that_still_draws(
    stack: LocalStack, example_manifest: bytes, tmp_path: Path
) -> None:
    body = example_manifest.replace(b"ranker:2026.11.28", b"ranker:latest")
    _, history = run_upload(stack, body)
    picture = run_picture(history)

    assert (picture.status, picture.outcome) == ("FAILED", "ManifestInvalid")
    assert (picture.segments, picture.progress, picture.attempts) == ((), (), ())
    assert picture.job is None
    assert [(d.kind, d.label) for d in picture.decisions] == [("end", "failed (ManifestInvalid)")]
    assert _png_size(plot_run(history, tmp_path / "rejected.png"))[0] > 0


def test_damaged_or_empty_history_gives_an_empty_picture(tmp_path: Path) -> None:
    damaged: list[dict[str, Any]] = [
        {"type": "ExecutionStarted", "timestamp": T0, "executionStartedEventDetails": {"input": '{"receivedAt": "'}},
        {"type": "TaskStateExited", "stateExitedEventDetails": {"name": "SubmitTrainingJob", "output": "[1, 2"}},
        {
            "type": "TaskStateExited",
            "stateExitedEventDetails": {"name": "CheckTrainingStatus", "output": '{"status": 3}'},
        },
        {"type": "TaskStateExited", "stateExitedEventDetails": {"name": "CheckTrainingStatus"}},
    ]
    for history in (damaged, []):
        picture = run_picture(history)
        assert (picture.segments, picture.progress, picture.decisions, picture.switch_line) == ((), (), (), ())
        assert picture.status == "RUNNING"
        assert _png_size(plot_run(history, tmp_path / f"empty-{len(history)}.png"))[0] > 0


def _at(hours: float) -> str:
    return (T0 + timedelta(hours=hours)).isoformat().replace("+00:00", "Z")


def _training(attempt: int, capacity: str, submitted: float, previous: tuple[int, ...] = ()) -> dict[str, Any]:
    earlier = [previous_attempt_state(attempt=n, capacity="spot", submittedAt=_at(0)) for n in previous]
    return training_state(
        attempt=attempt, capacity=capacity, submittedAt=_at(submitted), previousAttempts=earlier, links={}
    )


def _status(hours: float, state: str, fraction: float, action: str = "keep-waiting", **more: Any) -> dict[str, Any]:
    """A whole `$.status` that says only `state`, `fraction`, `action` and `more` (no slack, no move)."""
    sample = status_state()
    return status_state(
        state=state,
        checkedAt=_at(hours),
        progress={**sample["progress"], "fraction": fraction},
        action=action,
        decision={**sample["decision"], "slackSeconds": None, "escalation": None},
        **{**QUIET, **more},
    )


QUIET: dict[str, Any] = {
    "explanation": "",
    "nextCapacity": None,
    "nextRegion": None,
    "regionChoice": None,
    "deadlineAtRisk": None,
    "backoffSeconds": 0,
}


def _exited(name: str, state: dict[str, Any]) -> dict[str, Any]:
    return {"type": "TaskStateExited", "stateExitedEventDetails": {"name": name, "output": json.dumps(state)}}


def _started(state: dict[str, Any], at: datetime) -> dict[str, Any]:
    return {"type": "ExecutionStarted", "timestamp": at, "executionStartedEventDetails": {"input": json.dumps(state)}}


JOB = {"valid": True, "job": {"team": "t", "name": "n", "deadline": _at(10)}}


def _resubmitted_and_continued() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A spot job that capacity ended at 2 h, resubmitted after a 2-minute back-off, whose watch
    continued in a second execution at 2.5 h, completing at 4 h: the two executions' histories."""
    base = {"receivedAt": _at(0), "manifest": JOB}
    first_try, second_try = _training(1, "spot", 0), _training(2, "spot", 2 + 2 / 60, previous=(1,))
    last_of_first = _status(2.5, "starting", 0.4)
    first = [
        _started({"receivedAt": _at(0), "continuedFrom": None}, T0),
        _exited("SubmitTrainingJob", {**base, "training": first_try}),
        _exited("CheckTrainingStatus", {**base, "training": first_try, "status": _status(1, "training", 0.2)}),
        _exited(
            "CheckTrainingStatus",
            {
                **base,
                "training": first_try,
                "status": _status(2, "failed", 0.4, "resubmit-on-spot", backoffSeconds=120),
            },
        ),
        _exited("SubmitTrainingJob", {**base, "training": second_try}),
        _exited("CheckTrainingStatus", {**base, "training": second_try, "status": last_of_first}),
        _exited("ContinueInNewExecution", {**base, "continuedAs": continued_as_state(executionName="run-1-c1")}),
        {"type": "ExecutionSucceeded", "timestamp": T0 + timedelta(hours=2.5)},
    ]
    carried = {
        **base,
        "training": second_try,
        "status": last_of_first,
        "continuedFrom": {"execution": "run-1", "first": "run-1", "number": 1},
    }
    finish = _status(4, "completed", 1.0, "finish", finishReason="completed")
    outcome = outcome_state(name="TrainingSucceeded", figures={"deadline_met": True})
    second = [
        _started(carried, T0 + timedelta(hours=2.5)),
        _exited("CheckTrainingStatus", {**carried, "status": _status(3, "training", 0.6)}),
        _exited("CheckTrainingStatus", {**carried, "status": finish}),
        _exited("RecordOutcome", {**carried, "status": finish, "outcome": outcome}),
        {"type": "ExecutionSucceeded", "timestamp": T0 + timedelta(hours=4)},
    ]
    return first, second


def test_resubmission_after_a_back_off_and_a_continued_run(tmp_path: Path) -> None:
    first, second = _resubmitted_and_continued()
    picture = run_picture(first + second)

    assert (picture.name, picture.status, picture.outcome, picture.deadline_met) == (
        "run-1",
        "SUCCEEDED",
        "TrainingSucceeded",
        True,
    )
    assert [(d.kind, d.label, _hours(picture, d.at)) for d in picture.decisions] == [
        ("submit", "attempt 1 on spot", 0),
        ("resubmit", "resubmit on spot after 2m back-off", 2),
        ("submit", "attempt 2 on spot", 2 + 2 / 60),
        ("end", "completed", 4),
    ]
    assert [(s.kind, s.attempt, _hours(picture, s.start), _hours(picture, s.end)) for s in picture.segments] == [
        ("waiting for capacity", 1, 0, 1),
        ("spot", 1, 1, 2),
        ("waiting for capacity", 1, 2, 2 + 2 / 60),
        ("waiting for capacity", 2, 2 + 2 / 60, 3),
        ("spot", 2, 3, 4),
    ]
    assert [p.fraction for p in picture.progress] == [0.2, 0.4, 0.4, 0.6, 1.0]  # the carried check once

    alone = run_picture(second)  # the continuation's history only: the run so far, from its input
    assert alone.attempts == ((1, "spot"), (2, "spot"))
    assert alone.start == T0
    assert [d.label for d in alone.decisions] == ["attempt 1 on spot", "attempt 2 on spot", "completed"]
    assert _png_size(plot_run(first + second, tmp_path / "continued.png"))[0] > 0


def test_first_execution_of_a_continued_run_ends_by_naming_its_successor() -> None:
    first, _ = _resubmitted_and_continued()
    picture = run_picture(first)

    assert picture.status == "SUCCEEDED"
    assert picture.decisions[-1].label == "continues in run-1-c1"


@pytest.mark.parametrize(
    ("clock_offset", "ends_at", "last_lane"),
    [(timedelta(0), 1.5, "spot"), (timedelta(days=3), 1.0, "waiting for capacity")],  # 3 days: a replay's wall clock
)
def test_stopped_execution_ends_when_stopped_if_the_events_share_the_handlers_clock(
    clock_offset: timedelta, ends_at: float, last_lane: str
) -> None:
    training = _training(1, "spot", 0)
    base = {"receivedAt": _at(0), "manifest": JOB, "training": training}
    history = [
        _started({"receivedAt": _at(0)}, T0 + clock_offset),
        _exited("SubmitTrainingJob", base),
        _exited("CheckTrainingStatus", {**base, "status": _status(1, "training", 0.3)}),
        {"type": "ExecutionAborted", "timestamp": T0 + clock_offset + timedelta(hours=1.5)},
    ]
    picture = run_picture(history)

    assert picture.status == "ABORTED"
    assert picture.end is not None and _hours(picture, picture.end) == ends_at
    assert picture.decisions[-1].label == "stopped"
    assert (picture.segments[-1].kind, picture.segments[-1].end) == (last_lane, picture.end)


def test_importing_the_module_does_not_import_matplotlib() -> None:
    code = "import sys, spotline_dev.explain.plot; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_the_scenarios_capacity_gaps_are_hatched_across_both_panels(
    default_runs: dict[str, list[dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib.axes

    shaded: list[tuple[float, float, str | None]] = []
    original = matplotlib.axes.Axes.axvspan

    def axvspan(self: Any, xmin: float, xmax: float, **kwargs: Any) -> Any:
        shaded.append((xmin, xmax, kwargs.get("hatch")))
        return original(self, xmin, xmax, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "axvspan", axvspan)
    gap = (T0 + timedelta(hours=6), T0 + timedelta(hours=12))  # the default scenario's
    plot_run(default_runs["urgent-retrain"], tmp_path / "gap.png", capacity_gaps=[gap])

    assert shaded == [(6.0, 12.0, "///")] * 2  # the capacity lanes and the progress panel
    shaded.clear()
    plot_run(default_runs["urgent-retrain"], tmp_path / "no-gap.png")  # a deployed stack: gaps unknown
    assert shaded == []
