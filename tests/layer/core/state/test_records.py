"""The execution state's records: to_state() gives back exactly what from_state() read, and a
key the state lacks fails loudly, naming its section."""

from __future__ import annotations

import json
from typing import Any

import pytest
from state_samples import PLAN, previous_attempt_state, status_state, training_state

from spotline.core.state import (
    AttemptRecord,
    Outcome,
    RunStatus,
    Scoring,
    ScoringOutcome,
    StateError,
    StateKeyMissing,
    Training,
    history_of,
    state_keys,
)
from spotline.core.state.inputs import CleanupFailure, DependencyTimeout

SCORING = {
    "plan": {
        "valid": True,
        "problems": [],
        "job": "nightly",
        "instanceType": "ml.m5.xlarge",
        "summary": "1,000 records in 1 shard(s)",
        "startAt": "2026-12-01T01:00:00Z",
    },
    "run": {
        "runId": "r1",
        "model": "m",
        "input": "s3://in/",
        "output": "s3://out/r1/",
        "start": "2026-12-01T01:00:00Z",
        "due": "2026-12-01T05:00:00Z",
        "records": 1000,
        "sizing": {"instances": 1},
        "shards": [{"index": 0, "size": 10, "job": "j"}],
        "target": 1,
        "probing": True,
        "atRisk": None,
        "measuredRecordsPerSecond": None,
        "notifications": [],
        "jobsKey": "k",
        "projectedEnd": None,
        "nextCheckSeconds": 300,
        "done": False,
    },
}


def _same(record: Any, state: dict[str, Any]) -> None:
    """Equal, key order included: the state's size and what the console shows stay as they were."""
    assert json.dumps(record.to_state()) == json.dumps(state)


@pytest.mark.parametrize(
    ("record", "state"),
    [
        (Training, training_state()),
        (Training, training_state(trainingPlan=PLAN, capacity="training-plan", checkpointCopy=None)),
        (RunStatus, status_state()),
        (RunStatus, status_state(regionChoice=None, deadlineAtRisk=None, nextTrainingPlan=PLAN)),
        (Scoring, SCORING),
        (Scoring, SCORING | {"run": SCORING["run"] | {"checkedAt": "2026-12-01T01:05:00Z"}}),
        (Scoring, {"plan": {"valid": False, "problems": [], "summary": "no", "startAt": None}, "run": None}),
    ],
)
def test_a_section_comes_back_exactly_as_it_was_read(record: Any, state: dict[str, Any]) -> None:
    _same(record.from_state(state), state)


def test_nested_sections_are_records() -> None:
    status = RunStatus.from_state(status_state(nextTrainingPlan=PLAN))
    assert status.next_training_plan is not None and status.next_training_plan.instance_type == "ml.p4d.24xlarge"
    assert status.decision.escalation is not None and status.decision.escalation.raised == 400
    assert status.region_choice is not None and status.region_choice.considered[0].copy_seconds == 30
    assert status.progress.speeds is not None and status.progress.speeds[0].speed == 1.0
    training = Training.from_state(training_state())
    assert training.previous_attempts[0].final_status is not None
    assert training.previous_attempts[0].final_status.training_seconds == 5130
    assert training.checkpoint_copy is not None and training.checkpoint_copy.source_region == "us-east-1"


@pytest.mark.parametrize("missing", ["nextInstanceType", "decision", "checks", "links", "nextCapacity"])
def test_a_status_without_a_key_the_state_machine_keeps_is_refused_by_name(missing: str) -> None:
    state = status_state()
    del state[missing]
    with pytest.raises(StateKeyMissing, match=rf"\$\.status has no '{missing}'"):
        RunStatus.from_state(state)


def test_a_missing_key_deep_inside_names_where_it_was() -> None:
    state = status_state()
    del state["decision"]["priority"]
    with pytest.raises(StateKeyMissing, match=r"\$\.status\.decision has no 'priority'"):
        RunStatus.from_state(state)
    training = training_state()
    del training["previousAttempts"][0]["finalStatus"]["state"]
    with pytest.raises(StateKeyMissing, match=r"previousAttempts\[0\]\.finalStatus has no 'state'"):
        Training.from_state(training)


def test_what_is_not_an_object_is_refused() -> None:
    with pytest.raises(StateError, match=r"\$\.training is list"):
        Training.from_state([])
    with pytest.raises(StateError, match="previousAttempts is dict, not a list"):
        Training.from_state(training_state(previousAttempts={}))


def test_keys_an_older_attempt_lacks_read_as_none_and_come_back() -> None:
    """An attempt submitted before regions and plans (carried into a continuation) lacks these."""
    older = {k: v for k, v in training_state().items() if k not in ("region", "trainingPlan", "regionChoice")}
    training = Training.from_state(older)
    assert (training.region, training.training_plan, training.region_choice) == (None, None, None)
    assert set(training.to_state()) == set(training_state())


def test_the_check_s_answer_names_its_job_which_the_state_does_not_keep() -> None:
    answer = {"jobId": "job-2", **status_state()}
    status = RunStatus.from_state(answer)
    assert status.job_id == "job-2" and status.to_state() == answer
    assert "jobId" not in RunStatus.from_state(status_state()).to_state()
    assert "jobId" not in state_keys(RunStatus) and len(state_keys(RunStatus)) == 35  # jobId: the answer only


def test_an_attempt_record_is_what_the_outcome_report_lists() -> None:
    training, status = training_state(), status_state()
    typed = history_of(Training.from_state(training), RunStatus.from_state(status))
    current = previous_attempt_state(
        attempt=2,
        jobId="job-2",
        trainingJobName="AWSBatchranker-a2-spot2",
        submittedAt="2026-12-01T07:30:00Z",
        region="us-west-2",
        checkpointCopy=training["checkpointCopy"],
    )
    assert [a.to_state() for a in typed] == [previous_attempt_state(), current]
    previous_check = status_state(checkedAt="2026-12-01T07:00:00Z")  # before this attempt was submitted
    record = AttemptRecord.of(Training.from_state(training), RunStatus.from_state(previous_check))
    unchecked = current | {"instanceType": None, "trainingJobName": None, "finalStatus": None}
    assert record.final_status is None and record.to_state() == unchecked
    assert record.instance_type is None and record.region == "us-west-2"
    assert history_of(None, None) == ()


def test_an_attempt_record_bounds_the_reason() -> None:
    status = RunStatus.from_state(status_state(reason="r" * 10_000))
    record = AttemptRecord.of(Training.from_state(training_state()), status)
    assert record.final_status is not None and len(record.final_status.reason) == 1024
    assert AttemptRecord.from_state(previous_attempt_state()).to_state() == previous_attempt_state()


def test_outcomes() -> None:
    outcome = {
        "name": "TrainingSucceeded",
        "succeeded": True,
        "cause": "done",
        "next_step": "none",
        "figures": {"attempts": 2},
        "report": "s3://b/reports/x.outcome.json",
        "notified": False,
    }
    _same(Outcome.from_state(outcome), outcome)
    order = ["name", "succeeded", "cause", "next_step", "figures", "prices", "report", "notified"]
    answer = {k: (outcome | {"prices": {"source": "table"}})[k] for k in order}
    _same(Outcome.from_state(answer), answer)  # RecordOutcome's answer, before its ResultSelector
    scored = {
        "windowMet": True,
        "windowEnd": "2026-12-01T05:00:00Z",
        "finishedAt": "2026-12-01T03:00:00Z",
        "durationSeconds": 7200,
        "marginSeconds": 7200,
        "instances": 2,
        "recordsPerSecond": 12.5,
        "failedShards": [],
        "report": "s3://b/reports/x.r1.scoring.json",
    }
    _same(ScoringOutcome.from_state(scored), scored)
    with pytest.raises(StateKeyMissing, match=r"\$\.outcome has no 'next_step'"):
        Outcome.from_state({k: v for k, v in outcome.items() if k != "next_step"})


def test_an_error_caught_into_its_own_section_keeps_step_functions_keys() -> None:
    caught = {"Error": "ClientError", "Cause": "Throttling"}
    found = CleanupFailure.in_state({"cleanupFailure": caught})
    assert found == CleanupFailure(error="ClientError", cause="Throttling") and found.to_state() == caught
    assert CleanupFailure.from_state({"Error": "States.Timeout"}).to_state() == {"Error": "States.Timeout"}
    assert DependencyTimeout.in_state({"failure": caught}) is None  # each reads its own section only
    with pytest.raises(StateKeyMissing, match=r"\$\.cleanupFailure has no 'Error'"):
        CleanupFailure.in_state({"cleanupFailure": {"Cause": "x"}})
