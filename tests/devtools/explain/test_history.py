"""`read_section`: explain's one reader of the state's sections, tolerant where the records are strict."""

from __future__ import annotations

import json
from typing import Any

from state_samples import manifest_state, status_state, training_state

from spotline.core.state import ManifestCheck, Problem, RunStatus, Training
from spotline_dev.explain.history import job_in, manifest_in, read_section, walk_history


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


def test_manifest_in_reads_todays_manifest_as_its_record() -> None:
    state = {"manifest": manifest_state()}
    assert manifest_in(state) == ManifestCheck.from_state(state["manifest"])
    assert job_in({"manifest": manifest_state(valid=False, job=None, specRef=None)}) is None
    assert manifest_in({}) is None and manifest_in({"manifest": {"unexpected": "shape"}}) is None


def test_an_older_rejection_keeps_its_errors_and_report() -> None:
    """Before ManifestCheck: no `missing`, `errorCount`, `job` or `specRef`."""
    error = {"path": "spec.capacity.deadline", "message": "not a date"}
    older = {"valid": False, "errors": [error], "summary": "1 error", "report": "s3://b/reports/x.json", "spec": None}
    check = manifest_in({"manifest": older})
    assert check is not None
    assert (check.valid, check.errors, check.error_count) == (False, (Problem.from_state(error),), 1)
    assert (check.summary, check.report, check.job) == ("1 error", "s3://b/reports/x.json", None)


def test_an_older_manifest_with_the_whole_spec_tells_its_job() -> None:
    spec = {"team": "t", "name": "n", "strategy": "spot-only", "instance_type": "ml.g5.xlarge", "deadline": None}
    job = job_in({"manifest": {"valid": True, "errors": [], "summary": "valid", "report": None, "spec": spec}})
    assert job is not None
    assert (job.team, job.name, job.strategy, job.instance_type, job.instance_count) == (
        "t",
        "n",
        "spot-only",
        "ml.g5.xlarge",
        1,
    )
    assert (job.owner, job.output_s3_uri) == (None, None)  # what that spec lacked
