"""The outcome of runs that the clean-up touched: what UnexpectedError says about the training
job, and another live run of the job as a resource problem."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from state_samples import (
    cleanup_state,
    input_state,
    live_runs_state,
    manifest_state,
    resources_state,
    service_job_state,
)

from spotline.core.billing.outcome import (
    RESOURCE_VALIDATION_FAILED,
    UNEXPECTED_ERROR,
    RunSections,
    decide,
    resource_problems,
)

NOW = datetime(2026, 11, 29, tzinfo=UTC)
REGION = "us-east-1"  # the price table's
FAILURE = {"Error": "Lambda.Unknown", "Cause": "Task timed out after 60.00 seconds"}
STOPPED = service_job_state(
    jobId="j1", jobName="e-a1-spot", status="RUNNING", trainingJobName="ranker-v2-1a2b-a1-spot", execution="e"
)
LIVE_RUN = {"path": "metadata.name", "message": "a job of team search-ranking named ranker-v2 is still queued"}


def _state(**parts: Any) -> dict[str, Any]:
    return input_state(key="manifests/search-ranking/x.yaml", manifest=manifest_state()) | parts


def test_unexpected_error_says_which_training_job_was_stopped() -> None:
    outcome = decide(_state(failure=FAILURE, cleanup=cleanup_state([STOPPED])), NOW, region=REGION)
    assert outcome.name == UNEXPECTED_ERROR
    assert outcome.cause == (
        "Lambda.Unknown: Task timed out after 60.00 seconds Spotline stopped this run's training job: "
        "ranker-v2-1a2b-a1-spot (Batch job j1, was RUNNING)."
    )
    assert "resumes from the last checkpoint" in outcome.next_step


def test_unexpected_error_says_when_nothing_was_left_running_or_the_stop_failed() -> None:
    nothing = decide(_state(failure=FAILURE, cleanup=cleanup_state([])), NOW, region=REGION)
    assert nothing.cause.endswith("No training job of this run was still queued or running.")
    failed = decide(
        _state(failure=FAILURE, cleanupFailure={"Error": "ClientError", "Cause": "Throttling"}), NOW, region=REGION
    )
    assert "Spotline could not stop this run's training job (ClientError)" in failed.cause
    assert "reconciler" in failed.cause
    before_submission = decide(_state(failure=FAILURE), NOW, region=REGION)  # LoadManifest, ValidateResources, ...
    assert before_submission.cause == "Lambda.Unknown: Task timed out after 60.00 seconds"


def test_another_live_run_is_a_resource_problem_reported_with_the_others() -> None:
    resources = resources_state(
        valid=False, problems=[{"path": "spec.image", "message": "not found"}], summary="1 error(s)"
    )
    both = _state(resources=resources, liveRuns=live_runs_state(clear=False, problems=[LIVE_RUN]))
    outcome = decide(both, NOW, region=REGION)
    assert outcome.name == RESOURCE_VALIDATION_FAILED
    assert outcome.cause.startswith("2 error(s): spec.image: not found; metadata.name: a job of team search-ranking")
    assert [p.path for p in resource_problems(RunSections.of(both))] == ["spec.image", "metadata.name"]
    summary = f"1 error(s): metadata.name: {LIVE_RUN['message']}"
    only_live = _state(
        resources=resources_state(), liveRuns=live_runs_state(clear=False, problems=[LIVE_RUN], summary=summary)
    )
    assert decide(only_live, NOW, region=REGION).cause == f"1 error(s): metadata.name: {LIVE_RUN['message']}"
