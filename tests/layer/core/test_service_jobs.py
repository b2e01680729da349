"""Whose a service job is, whether it is live, and which ones the clean-up stops (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import example_spec
from spotline.core.execution_state import continuation_name
from spotline.core.service_jobs import (
    LIVE_STATUSES,
    NO_SUCH_EXECUTION,
    ServiceJob,
    execution_arn,
    execution_name_of,
    job_ids_in_state,
    job_name_prefix,
    jobs_to_stop,
    live_run_problem,
    orphans,
    other_live_runs,
    run_job_name_pattern,
    state_machine_of,
    stop_reason,
)
from spotline.core.training_request import Attempt, service_job_request

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
    training = {"jobId": "j3", "previousAttempts": [{"jobId": "j1"}, {"jobId": "j2"}, {"jobId": None}]}
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
