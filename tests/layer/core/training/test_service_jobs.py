"""Whose a service job is, whether it is live, and which ones the clean-up stops (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from state_samples import previous_attempt_state, training_state

from conftest import example_spec
from spotline.core.state import Training
from spotline.core.state.execution_state import continuation_name
from spotline.core.training.service_jobs import (
    LIVE_STATUSES,
    NO_SUCH_EXECUTION,
    UNSETTLED,
    KnownJobs,
    ServiceJob,
    execution_arn,
    execution_name_of,
    intruder_reason,
    intruders,
    job_ids_by_region,
    job_ids_in_state,
    job_name_prefix,
    jobs_to_stop,
    known_jobs,
    live_run_problem,
    orphans,
    other_live_runs,
    run_job_name_pattern,
    state_machine_of,
    stop_reason,
)
from spotline.core.training.training_request import Attempt, service_job_request

MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:spotline-training-lifecycle"
EXECUTION = "search-ranking-ranker-v2-1a2b3c4d"


def job(job_id: str = "j1", status: str = "RUNNING", *, execution: str | None = EXECUTION, **extra: Any) -> ServiceJob:
    tags = {"spotline:team": "search-ranking", "spotline:job": "ranker-v2"}
    if execution is not None:
        tags["spotline:execution"] = execution
    return ServiceJob(job_id, f"{execution}-a1-spot", status, extra.pop("terminating", False), tags | extra)


def test_every_service_job_spotline_submits_carries_the_prefix_and_tag_the_clean_up_looks_for() -> None:
    arn = execution_arn(MACHINE, EXECUTION)
    for number, capacity in ((1, "spot"), (4, "on-demand")):
        request = service_job_request(example_spec(), Attempt(arn, number, capacity), "queue")  # type: ignore[arg-type]
        assert request["jobName"].startswith(job_name_prefix(EXECUTION))
        assert request["tags"]["spotline:execution"] == execution_name_of(arn) == EXECUTION


def test_a_description_becomes_a_job_with_its_tags_and_training_job() -> None:
    described = {
        "jobId": "j1",
        "jobName": f"{EXECUTION}-a1-spot",
        "status": "RUNNABLE",
        "isTerminated": False,
        "tags": {"spotline:execution": EXECUTION, "spotline:team": "search-ranking"},
        "latestAttempt": {
            "serviceResourceId": {
                "name": "TrainingJobArn",
                "value": "arn:aws:sagemaker:us-east-1:123456789012:training-job/ranker-v2-1a2b3c4d-a1-spot",
            }
        },
    }
    parsed = ServiceJob.from_description(described)
    assert (parsed.execution, parsed.team, parsed.training_job_name) == (
        EXECUTION,
        "search-ranking",
        "ranker-v2-1a2b3c4d-a1-spot",
    )
    assert parsed.live and parsed.needs_stopping
    assert ServiceJob.from_description({"jobId": "j2", "status": "SUCCEEDED"}).training_job_name is None


@pytest.mark.parametrize("status", [*LIVE_STATUSES, "SUCCEEDED", "FAILED"])
def test_only_queued_or_running_jobs_not_yet_terminated_are_stopped(status: str) -> None:
    assert jobs_to_stop([job(status=status)], EXECUTION) == ([job(status=status)] if status in LIVE_STATUSES else [])
    assert jobs_to_stop([job(status=status, terminating=True)], EXECUTION) == []


def test_the_tag_decides_whose_a_job_is() -> None:
    assert jobs_to_stop([job(execution=f"{EXECUTION}-other"), job(execution=None)], EXECUTION) == []


def test_orphans_are_live_jobs_whose_execution_is_known_not_to_run() -> None:
    running, aborted, gone, unchecked = (job(str(i), execution=e) for i, e in enumerate("rago"))
    statuses = {"r": "RUNNING", "a": "ABORTED", "g": NO_SUCH_EXECUTION}
    assert orphans([running, aborted, gone, unchecked, job("x", "SUCCEEDED", execution="a")], statuses) == [
        aborted,
        gone,
    ]


def test_execution_names_and_arns() -> None:
    arn = execution_arn(MACHINE, EXECUTION)
    assert arn == f"arn:aws:states:us-east-1:123456789012:execution:spotline-training-lifecycle:{EXECUTION}"
    assert execution_name_of(arn) == EXECUTION
    with pytest.raises(ValueError, match="not a state machine ARN"):
        execution_arn(arn, EXECUTION)
    with pytest.raises(ValueError, match="names no execution"):
        execution_name_of("arn:aws:states:us-east-1:1:execution:m:")


def test_another_live_run_of_the_same_job_is_refused_naming_the_execution_to_cancel() -> None:
    mine, same_name, other_team, ended = (
        job("a"),
        job("b", "RUNNABLE", execution="search-ranking-ranker-v2-99999999"),
        job("c", execution="x", **{"spotline:team": "vision"}),
        job("d", "SUCCEEDED", execution="y"),
    )
    runs = other_live_runs(
        [mine, same_name, other_team, ended], team="search-ranking", name="ranker-v2", execution_name=EXECUTION
    )
    assert runs == [same_name]
    problem = live_run_problem("search-ranking", "ranker-v2", runs)
    assert problem.path == "metadata.name"
    assert problem.message.startswith(
        "a job of team search-ranking named ranker-v2 is still queued or running "
        "(execution search-ranking-ranker-v2-99999999, Batch job b, RUNNABLE): cancel it"
    )
    assert "and 1 more" in live_run_problem("search-ranking", "ranker-v2", [same_name, same_name]).message


def test_the_state_knows_every_attempts_job_and_reasons_stay_within_bounds() -> None:
    earlier = [previous_attempt_state(jobId=job) for job in ("j1", "j2", None)]
    training = Training.from_state(training_state(jobId="j3", previousAttempts=earlier))
    assert job_ids_in_state(training) == ["j1", "j2", "j3"]
    assert job_ids_in_state(None) == []
    assert len(stop_reason("e" * 80, "x" * 500)) == 256


def test_the_jobs_of_a_continued_run_are_listed_under_the_first_executions_name() -> None:
    assert run_job_name_pattern("search-ranking-ranker-v2-2a265c01") == "search-ranking-ranker-v2-2a265c01-a*"
    assert run_job_name_pattern("search-ranking-ranker-v2-2a265c01-c3") == "search-ranking-ranker-v2-2a265c01*"
    truncated = continuation_name("x" * 80, 12)  # the first name cut to fit: still a prefix of its jobs
    assert run_job_name_pattern(truncated) == "x" * 76 + "*"


def test_an_execution_arn_names_its_state_machine() -> None:
    machine = "arn:aws:states:us-east-1:123456789012:stateMachine:spotline-training-lifecycle"
    assert state_machine_of(execution_arn(machine, "run-a-c1")) == machine
    with pytest.raises(ValueError):
        state_machine_of(machine)


# --- jobs Spotline did not submit (issue 26) ------------------------------------------------


def _entered(name: str, state: dict[str, Any], event_id: int) -> dict[str, Any]:
    return {"id": event_id, "stateEnteredEventDetails": {"name": name, "input": json.dumps(state)}}


def test_an_executions_latest_state_says_which_jobs_it_submitted() -> None:
    state = {"training": training_state(jobId="j2", previousAttempts=[previous_attempt_state(jobId="j1")])}
    newest_first = [
        {"id": 9, "taskScheduledEventDetails": {"parameters": "{}"}},  # no state here: look further back
        _entered("CheckTrainingStatus", state, 8),
        _entered("WaitForJobToStart", {}, 7),
    ]
    assert known_jobs(newest_first) == KnownJobs(frozenset({"j1", "j2"}), settled=True)
    exited = {"id": 3, "stateExitedEventDetails": {"name": "SubmitTrainingJob", "output": json.dumps(state)}}
    assert known_jobs([exited]) == KnownJobs(frozenset({"j1", "j2"}), settled=True)
    started = {"id": 1, "executionStartedEventDetails": {"input": json.dumps({"continuedFrom": {}, **state})}}
    assert known_jobs([started]) == KnownJobs(frozenset({"j1", "j2"}), settled=True)  # a continuation's input
    assert known_jobs([{"id": 5, "taskStartedEventDetails": {}}]) is None


def test_while_an_execution_submits_or_its_state_cannot_be_read_no_job_is_judged_by_it() -> None:
    assert known_jobs([_entered("SubmitTrainingJob", {}, 4)]) == UNSETTLED
    assert known_jobs([_entered("StopTrainingJobAfterError", {}, 4)]) == UNSETTLED
    truncated = {"stateEnteredEventDetails": {"name": "X", "input": "{", "inputDetails": {"truncated": True}}}
    assert known_jobs([truncated]) == UNSETTLED
    assert known_jobs([{"stateExitedEventDetails": {"name": "X", "output": "not json"}}]) == UNSETTLED
    older = {"training": {"jobId": "j2", "previousAttempts": [{"jobId": "j1"}]}}  # not today's $.training
    assert known_jobs([_entered("CheckTrainingStatus", older, 4)]) == UNSETTLED
    assert known_jobs([_entered("ValidateResources", {"manifest": {}}, 4)]) == KnownJobs(frozenset(), settled=True)


def test_the_jobs_a_state_knows_by_region() -> None:
    earlier = [previous_attempt_state(jobId="j1", region="us-east-1"), previous_attempt_state(jobId="j2")]
    del earlier[1]["region"]  # an attempt recorded before regions ran at home
    training = Training.from_state(training_state(jobId="j3", previousAttempts=earlier))
    assert job_ids_by_region(training, "us-east-1") == {"": ["j1", "j2"], "us-west-2": ["j3"]}
    assert job_ids_by_region(None, "us-east-1") == {}


def test_jobs_without_spotlines_tags_or_unknown_to_the_execution_they_name_are_intruders() -> None:
    mine = job("j1")
    untagged = ServiceJob("u1", "by-hand", "RUNNABLE", False, {"owner": "someone"})
    half_tagged = ServiceJob("u2", "by-hand", "RUNNING", False, {"spotline:execution": EXECUTION})
    copied = job("c1")  # the running execution's tags, copied onto another job
    ended = ServiceJob("u3", "by-hand", "FAILED", False, {})
    being_stopped = ServiceJob("u4", "by-hand", "RUNNING", True, {})
    known = {EXECUTION: KnownJobs(frozenset({"j1"}), settled=True)}

    found = intruders([mine, untagged, half_tagged, copied, ended, being_stopped], known)

    assert [(i.job.job_id, i.why) for i in found] == [
        ("u1", "it carries no spotline:team and spotline:execution tags"),
        ("u2", "it carries no spotline:team and spotline:execution tags"),
        ("c1", f"its tags name execution {EXECUTION}, which did not submit it"),
    ]
    assert intruders([copied], {EXECUTION: UNSETTLED}) == []  # submitting right now: judged next time
    assert intruders([copied], {}) == []  # an execution not looked up (not running): the orphan rule's
    assert orphans([half_tagged], {EXECUTION: "ABORTED"}) == []  # never both an orphan and an intruder
    reason = intruder_reason("x" * 500)
    assert reason.startswith("Spotline: not submitted by Spotline (") and len(reason) == 256


def test_a_description_names_the_role_and_quota_share_its_payload_asks_for() -> None:
    described = {
        "jobId": "u1",
        "jobName": "by-hand",
        "status": "RUNNABLE",
        "serviceRequestPayload": json.dumps({"RoleArn": "arn:aws:iam::123456789012:role/spotline/team-b/training"}),
        "quotaShareName": "team-b",
    }
    parsed = ServiceJob.from_description(described)
    assert parsed.role_arn == "arn:aws:iam::123456789012:role/spotline/team-b/training"
    assert parsed.quota_share == "team-b"
    assert ServiceJob.from_description({"jobId": "u2", "serviceRequestPayload": "{not json"}).role_arn is None
