"""`read_section`: explain's one reader of the state's sections, tolerant where the records are strict."""

from __future__ import annotations

import json
from typing import Any

from state_samples import status_state, training_state

from spotline.core.state import RunStatus, Training
from spotline_dev.explain.history import read_section, walk_history


def test_a_section_is_read_as_its_record() -> None:
    training = read_section(Training, {"training": training_state()})
    assert training is not None and (training.attempt, training.job_name) == (2, "ranker-v2-1-a2-spot")


def test_a_section_absent_or_of_another_age_is_none() -> None:
    older = training_state()
    del older["firstPollSeconds"]  # a key the record needs
    assert read_section(Training, {}) is None
    assert read_section(Training, {"training": None}) is None
    assert read_section(Training, {"training": older}) is None
    assert read_section(Training, {"training": {"unexpected": "shape"}}) is None
    assert read_section(RunStatus, {"status": 3}) is None
    assert read_section(RunStatus, {"status": status_state(regionChoice={"considered": "not a list"})}) is None


def _exited(name: str, state: dict[str, Any]) -> dict[str, Any]:
    return {"type": "TaskStateExited", "stateExitedEventDetails": {"name": name, "output": json.dumps(state)}}


def test_the_walk_lists_only_the_attempts_and_checks_it_could_read() -> None:
    older = training_state()
    del older["jobName"]
    history = [
        _exited("SubmitTrainingJob", {"training": training_state(attempt=1)}),
        _exited("CheckTrainingStatus", {"status": status_state(action="switch-to-on-demand")}),
        _exited("CheckTrainingStatus", {"status": {"state": "training"}}),  # of another age: not a check
        _exited("SubmitTrainingJob", {"training": older}),  # not an attempt this reader can tell
    ]
    walk = walk_history(history)
    assert [a.training.attempt for a in walk.attempts] == [1]
    assert [s.action for s in walk.attempts[0].statuses] == ["switch-to-on-demand"]
    assert [s.checked_at for s in walk.switches] == ["2026-12-01T07:40:00Z"]
