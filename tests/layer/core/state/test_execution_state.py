"""What the execution state carries about a job: bounded, whatever the manifest says."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from state_samples import final_status_state, previous_attempt_state, status_state, training_state

from builders import example_spec
from spotline.core.common.errors import ManifestError
from spotline.core.state import AttemptRecord, RunStatus, Training, history_of
from spotline.core.state.execution_state import (
    MAX_ERROR_MESSAGE,
    MAX_ERROR_PATH,
    MAX_ERRORS_IN_STATE,
    MAX_EXECUTION_NAME,
    MAX_REASON,
    JobSummary,
    continuation_input,
    continuation_name,
    job_summary_of,
    rejection_for_state,
)

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def test_the_summary_round_trips_and_is_read_from_older_states_too() -> None:
    spec = example_spec(NOW)
    job = JobSummary.of(spec)
    assert JobSummary.from_state(json.loads(json.dumps(job.to_state()))) == job
    assert job_summary_of({"valid": True, "job": job.to_state()}) == job
    assert job_summary_of({"valid": True, "spec": spec.to_dict()}) == job  # started before specRef existed
    assert job_summary_of({"valid": False, "job": None}) is None
    assert (job.uses_spot, job.deadline_at) == (True, datetime(2026, 12, 2, 6, tzinfo=UTC))
    assert job.depends_on_datasets is False


def test_a_rejection_keeps_the_first_errors_each_bounded_and_counts_them_all() -> None:
    errors = [ManifestError(f"spec.environment.{'A' * 2000}{i}", "x" * 5000) for i in range(45)]
    kept = rejection_for_state(errors)
    assert kept["errorCount"] == 45
    assert len(kept["errors"]) == MAX_ERRORS_IN_STATE
    assert all(len(e["path"]) == MAX_ERROR_PATH and e["path"].endswith("…") for e in kept["errors"])
    assert all(len(e["message"]) == MAX_ERROR_MESSAGE for e in kept["errors"])
    assert kept["summary"].startswith("45 error(s): ") and kept["summary"].endswith("... and 25 more (see the report)")
    assert len(json.dumps(kept)) < 40 * 1024

    short = rejection_for_state([ManifestError("spec.image", "the tag 'latest' is not allowed")])
    assert short == {
        "errors": [{"path": "spec.image", "message": "the tag 'latest' is not allowed"}],
        "errorCount": 1,
        "summary": "1 error(s): spec.image: the tag 'latest' is not allowed",
    }


def test_an_attempt_record_keeps_what_later_steps_read_and_bounds_the_reason() -> None:
    training = Training.from_state(
        training_state(
            attempt=2,
            jobId="j-2",
            region=None,
            checkpointCopy=None,
            previousAttempts=[previous_attempt_state(attempt=1, finalStatus=final_status_state(state="failed"))],
        )
    )
    status = RunStatus.from_state(
        status_state(
            state="failed",
            reasonClass="spot-wait-exceeded",
            reason="r" * 10_000,
            trainingSeconds=600,
            billableSeconds=180,
            interruptions=1,
            queueWaitSeconds=300,
            endedAt="2026-12-01T02:00:00Z",
        )
    )
    record = AttemptRecord.of(training, status).to_state()
    assert set(record) == {
        "attempt",
        "capacity",
        "instanceType",
        "jobId",
        "trainingJobName",
        "submittedAt",
        "finalStatus",
    }
    assert set(record["finalStatus"]) == {
        "state",
        "reasonClass",
        "reason",
        "trainingSeconds",
        "billableSeconds",
        "interruptions",
        "queueWaitSeconds",
        "endedAt",
        "instanceType",
    }
    assert len(record["finalStatus"]["reason"]) == MAX_REASON
    assert AttemptRecord.of(training, None).final_status is None
    assert [a.attempt for a in history_of(training, status)] == [1, 2]
    assert history_of(None, status) == ()


def test_a_continuation_carries_the_run_and_restarts_the_check_count() -> None:
    state = {
        "manifest": {"job": {"team": "t"}},
        "training": {"jobId": "j", "attempt": 2},
        "status": status_state(state="training", checks=600),
        "wakeUp": {"Error": "States.Timeout"},
        "continuedAs": {"executionName": "old"},
    }
    carried = continuation_input(state, execution="run-a")
    assert carried["training"] == state["training"] and carried["manifest"] == state["manifest"]
    assert carried["status"] == status_state(state="training", checks=0)
    assert "wakeUp" not in carried and "continuedAs" not in carried
    assert carried["continuedFrom"] == {"execution": "run-a", "first": "run-a", "number": 1}
    again = continuation_input(carried, execution="run-a-c1")
    assert again["continuedFrom"] == {"execution": "run-a-c1", "first": "run-a", "number": 2}
    assert state["status"]["checks"] == 600  # the state itself is left as it was


def test_continuation_names_stay_within_step_functions_limit() -> None:
    assert continuation_name("search-ranking-ranker-v2-2a265c01", 3) == "search-ranking-ranker-v2-2a265c01-c3"
    long = "x" * 80
    assert continuation_name(long, 12) == "x" * 76 + "-c12"
    assert len(continuation_name(long, 12)) == MAX_EXECUTION_NAME
