"""`spotline explain` on real histories: the local stack (real state machine, handlers and the
Batch/SageMaker stand-in on a virtual clock) runs the executions, explain tells their story."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from state_samples import manifest_state, outcome_state

from conftest import EXAMPLE_KEY, EXAMPLE_MANIFEST, ROOT, entered_states, run_upload, upload
from spotline.core.common import links as console_links
from spotline.core.state import Fallback, Training
from spotline_dev.explain import Story, explain, render_text, timeline
from spotline_dev.explain import story as story_module
from spotline_dev.explain.history import AttemptRecord
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.sandbox.replay import Scenario, load_scenario, run_scenario

START = datetime(2026, 12, 1, tzinfo=UTC)
HOUR = 3600.0
URGENT = ROOT / "examples" / "manifests" / "urgent-retrain.yaml"


def _story(scenario: Scenario) -> Story:
    (run,) = run_scenario(scenario)["executions"]
    return run["story"]  # type: ignore[no-any-return]


# --- failed executions: the failing state, its error and cause ------------------------------


def test_training_failure_names_the_state_error_cause_and_where_to_look() -> None:
    story = _story(Scenario(name="t", start=START, manifests=[EXAMPLE_MANIFEST], fail_after=HOUR, duration=2 * HOUR))

    assert story.status == "FAILED"
    assert story.failure is not None
    assert (story.failure.state, story.failure.error) == ("TrainingFailed", "TrainingFailed")
    assert "failed (algorithm): AlgorithmError" in (story.failure.cause or "")
    assert story.next_step and "training logs" in story.next_step
    (attempt,) = story.attempts
    assert (attempt.number, attempt.capacity, attempt.state) == (1, "spot", "failed")
    assert attempt.training_job_name and attempt.training_job_name.startswith("AWSBatchranker-v2-a1-spot")
    assert attempt.ending.startswith("failed (algorithm): AlgorithmError")
    assert set(story.links) == {"execution", "trainingJob", "logs", "batchJob"}
    assert story.deadline_note.endswith("not reached (the training did not complete)")

    text = render_text(story)
    assert text.startswith(f"== {story.name}: FAILED in TrainingFailed")
    assert "  State      TrainingFailed" in text
    assert "  Error      TrainingFailed" in text
    assert "  Cause      " + story.failure.summary in text
    assert "SageMaker job  https://us-east-1.console.aws.amazon.com/sagemaker/" in text
    assert f"Manifest   s3://{story.manifest['bucket']}/manifests/search-ranking/ranker-v2.yaml (version " in text
    assert "Job        search-ranking/ranker-v2 (spot-first, ml.g5.2xlarge x1" in text


def test_missing_image_fails_in_resource_validation_naming_the_field() -> None:
    story = _story(load_scenario(ROOT / "examples" / "scenarios" / "missing-image.yaml"))

    assert story.failure is not None
    assert (story.failure.state, story.failure.error) == ("ResourceValidationFailed", "ResourceValidationFailed")
    assert "spec.image" in (story.failure.cause or "")
    assert [p.path for p in story.failure.problems] == ["spec.image"]
    assert story.attempts == []
    assert story.next_step and story.next_step.startswith("Fix the resources listed")
    text = render_text(story)
    assert "  State      ResourceValidationFailed" in text
    assert "No training job recorded in the execution." in text


def test_invalid_manifest_lists_every_error_and_the_rejection_report(
    stack: LocalStack, example_manifest: bytes
) -> None:
    body = example_manifest.replace(b"ranker:2026.11.28", b"ranker:latest").replace(
        b"intervalMinutes: 15", b"intervalMinutes: 90"
    )
    execution, history = run_upload(stack, body)
    story = explain(history, execution)

    assert story.failure is not None
    assert (story.failure.state, story.failure.error) == ("ManifestInvalid", "ManifestInvalid")
    assert story.failure.cause == execution["cause"]
    assert {p.path for p in story.failure.problems} == {"spec.image", "spec.checkpoint.intervalMinutes"}
    assert story.reports["rejected"].endswith("reports/manifests/search-ranking/ranker-v2.yaml.rejected.json")
    assert story.next_step and "upload the manifest again" in story.next_step
    assert "execution" in story.links  # built from the ARN: no step stored links
    text = render_text(story)
    assert "  State      ManifestInvalid" in text
    assert "    - spec.image: the tag 'latest' is not allowed" in text


def test_unexpected_error_names_the_task_that_failed(stack: LocalStack, example_manifest: bytes) -> None:
    stack.kill_after_call("batch.SubmitServiceJob", times=4)  # the first call and its three retries
    execution, history = run_upload(stack, example_manifest)
    story = explain(history, execution)

    assert story.failure is not None
    assert (story.failure.state, story.failure.error) == ("UnexpectedError", "UnexpectedError")
    assert (story.failure.failed_step, story.failure.failed_step_error) == ("SubmitTrainingJob", "Runtime.ExitError")
    assert story.failure.summary == (
        "SubmitTrainingJob failed with Runtime.ExitError: "
        "Runtime exited with error: signal: killed (after batch.SubmitServiceJob)"
    )
    assert "errorMessage" not in render_text(story)  # the Lambda error's JSON is read, not pasted


# --- a successful execution with an on-demand fallback -----------------------------------------


def test_fallback_to_on_demand_shows_attempts_interruptions_and_the_reason() -> None:
    story = _story(replace(load_scenario(None), manifests=[URGENT]))

    assert (story.status, story.failure) == ("SUCCEEDED", None)
    assert [(a.number, a.capacity) for a in story.attempts] == [(1, "spot"), (2, "on-demand")]
    assert story.attempts[0].ending.startswith("stopped by Spotline to move to on-demand at ")
    assert story.attempts[1].ending.startswith("completed at ")
    assert story.spot_interruptions == sum(a.interruptions for a in story.attempts) >= 2
    assert story.on_demand_fallback is True
    assert story.fallback_reason and "deadline at risk" in story.fallback_reason
    assert story.deadline_met is True
    assert story.deadline == "2026-12-01T11:00:00Z"
    assert story.next_step and story.next_step.startswith("Nothing to do: the model is in s3://")

    text = render_text(story)
    assert f"On-demand fallback  yes, at {story.fallback_at}: {story.fallback_reason}" in text
    assert "Deadline            2026-12-01T11:00:00Z: met (training finished " in text
    assert "T+00:00  SubmitTrainingJob    attempt 1 on spot: " in text

    data = json.loads(json.dumps(story.to_dict()))
    assert data["status"] == "SUCCEEDED"
    assert [(a["number"], a["capacity"]) for a in data["attempts"]] == [(1, "spot"), (2, "on-demand")]
    assert {"trainingJobName", "ending", "interruptions", "links"} <= set(data["attempts"][0])
    assert data["spotInterruptions"] == story.spot_interruptions
    assert (data["onDemandFallback"], data["fallbackReason"]) == (True, story.fallback_reason)
    assert (data["deadline"], data["deadlineMet"]) == ("2026-12-01T11:00:00Z", True)
    assert data["failure"] is None
    assert data["timeline"][0] == {
        "at": "2026-12-01T00:00:00Z",
        "offset": "T+00:00",
        "state": "LoadManifest",
        "text": data["timeline"][0]["text"],
    }
    assert set(data["links"]) == {"execution", "trainingJob", "logs", "batchJob"}


# --- unknown states and keys, a running execution --------------------------------------------


def _event(kind: str, **details: Any) -> dict[str, Any]:
    return {"type": kind, "timestamp": START, **details}


def _entered(kind: str, name: str, state: dict[str, Any]) -> dict[str, Any]:
    return _event(f"{kind}StateEntered", stateEnteredEventDetails={"name": name, "input": json.dumps(state)})


def _exited(kind: str, name: str, state: dict[str, Any]) -> dict[str, Any]:
    return _event(f"{kind}StateExited", stateExitedEventDetails={"name": name, "output": json.dumps(state)})


def test_unknown_states_and_keys_are_shown_generically() -> None:
    """States this module has never heard of (a dataset wait, a new Fail state) must not break it."""
    state: dict[str, Any] = {
        "bucket": "b",
        "key": "manifests/search-ranking/x.yaml",
        "receivedAt": "2026-12-01T00:00:00Z",
    }
    loaded = {**state, "manifest": manifest_state()}
    checked = {**loaded, "dependencies": {"ready": False, "datasets": ["clicks"], "missing": ["clicks"]}}
    timed_out = {**checked, "dependencyTimeout": {"Error": "States.Timeout", "Cause": "no ready event"}}
    outcome = outcome_state(
        name="DependencyTimeout", succeeded=False, cause="still waiting for clicks after 1d", next_step="Ask them."
    )
    recorded = {**timed_out, "outcome": outcome, "submitted": {"trainingJobName": "odd shape"}}
    history = [
        _event("ExecutionStarted", executionStartedEventDetails={"input": json.dumps(state)}),
        _entered("Task", "LoadManifest", state),
        _exited("Task", "LoadManifest", loaded),
        _entered("Choice", "AreDatasetsReady?", loaded),
        _exited("Choice", "AreDatasetsReady?", loaded),
        _entered("Task", "CheckDatasets", loaded),
        _exited("Task", "CheckDatasets", checked),
        _entered("Task", "WaitForDatasets", checked),
        _exited("Task", "WaitForDatasets", timed_out),
        _entered("Task", "SubmitTrainingJob", timed_out),
        _exited("Task", "SubmitTrainingJob", {**timed_out, "training": {"unexpected": "shape"}}),
        _entered("Task", "RecordOutcome", timed_out),
        _exited("Task", "RecordOutcome", recorded),
        _entered("Fail", "DependencyTimeout", recorded),
        _event(
            "ExecutionFailed",
            executionFailedEventDetails={"error": "DependencyTimeout", "cause": outcome["cause"]},
        ),
    ]
    arn = "arn:aws:states:eu-west-1:123456789012:execution:spotline-TrainingLifecycle:search-ranking-x-1"
    story = explain(history, {"executionArn": arn, "status": "FAILED", "startDate": START})

    assert story.failure is not None
    assert (story.failure.state, story.failure.error) == ("DependencyTimeout", "DependencyTimeout")
    assert story.failure.summary == "still waiting for clicks after 1d"
    assert (story.failure.failed_step, story.failure.failed_step_error) == ("WaitForDatasets", "States.Timeout")
    assert story.next_step == "Ask them."
    lines = timeline(history, START)
    assert [line[9:].split()[0] for line in lines] == [
        "LoadManifest",
        "CheckDatasets",
        "WaitForDatasets",
        "SubmitTrainingJob",
        "RecordOutcome",
    ]
    assert "dependencies: ready=False" in lines[1]
    assert "failed with States.Timeout: no ready event (kept in $.dependencyTimeout)" in lines[2]
    assert story.other == {
        "dependencies": checked["dependencies"],
        "dependencyTimeout": timed_out["dependencyTimeout"],
        "submitted": {"trainingJobName": "odd shape"},
    }
    assert story.links == {"execution": console_links.execution("eu-west-1", arn)}
    text = render_text(story)
    assert "Step       WaitForDatasets failed with States.Timeout" in text
    assert "Other results" in text


def test_older_executions_that_carried_the_whole_spec_tell_the_same_job() -> None:
    """Histories of executions started before the spec moved out of the state ($.manifest.spec)."""
    spec = {
        "team": "search-ranking",
        "name": "ranker-v2",
        "owner": "alice@example.com",
        "strategy": "spot-only",
        "instance_type": "ml.g5.2xlarge",
        "instance_count": 2,
        "deadline": None,
        "output_s3_uri": "s3://search-ranking-models/ranker-v2/",
        "hyperparameters": {"epochs": "12"},
    }
    state: dict[str, Any] = {"bucket": "b", "key": "manifests/search-ranking/x.yaml"}
    loaded = {**state, "manifest": {"valid": True, "errors": [], "summary": "valid", "report": None, "spec": spec}}
    history = [
        _event("ExecutionStarted", executionStartedEventDetails={"input": json.dumps(state)}),
        _entered("Task", "LoadManifest", state),
        _exited("Task", "LoadManifest", loaded),
        _event("ExecutionSucceeded", executionSucceededEventDetails={"output": json.dumps(loaded)}),
    ]
    arn = "arn:aws:states:eu-west-1:123456789012:execution:spotline-TrainingLifecycle:search-ranking-x-1"
    story = explain(history, {"executionArn": arn, "status": "SUCCEEDED", "startDate": START})

    assert (story.team, story.job, story.owner) == ("search-ranking", "ranker-v2", "alice@example.com")
    assert (story.strategy, story.instance) == ("spot-only", "ml.g5.2xlarge x2")
    assert story.next_step == "Nothing to do: the model is in s3://search-ranking-models/ranker-v2/."
    assert timeline(history, START)[0].endswith("manifest valid: search-ranking/ranker-v2, spot-only, deadline none")


def test_a_running_execution_says_where_it_is_and_that_there_is_nothing_to_do_yet(
    stack: LocalStack, example_manifest: bytes
) -> None:
    execution, history = run_upload(stack, example_manifest)
    training = next(
        i
        for i, e in enumerate(history)
        if e.get("stateExitedEventDetails", {}).get("name") == "CheckTrainingStatus"
        and json.loads(e["stateExitedEventDetails"]["output"])["status"]["state"] == "training"
    )
    cut = history[: training + 1]  # the history as GetExecutionHistory returns it mid-training
    story = explain(cut, {**execution, "status": "RUNNING", "stopDate": None})

    assert story.failure is None
    assert story.headline.startswith("RUNNING, now in ")
    assert story.attempts[0].ending.startswith("still running: training")
    assert story.next_step and story.next_step.startswith("Nothing to do yet")
    assert story.deadline_note.startswith("2026-12-02T06:00:00Z: not reached yet")


def test_a_dependency_timeout_from_the_state_machine_is_told_with_its_new_states(stack: LocalStack) -> None:
    """The dataset wait came after explain: its states and keys are shown generically."""
    body = (
        EXAMPLE_MANIFEST.read_text()
        .replace(
            "  priority: 100", "  priority: 100\n  dependsOn: [{dataset: clicks-2026-11-28}]\n  dependencyTimeout: 6h"
        )
        .encode()
    )
    upload(stack, EXAMPLE_KEY, body)
    (started,) = stack.deliver_events()
    arn = started["executionArn"]
    deadline = time.monotonic() + 30
    while "WaitForDatasets" not in entered_states(stack.history(arn)):
        assert time.monotonic() < deadline, "the execution never started waiting for its dataset"
        time.sleep(0.01)
    stack.clock.advance(6 * HOUR + 60)
    execution = stack.wait_for_execution(arn)
    story = explain(stack.history(arn), execution)

    assert story.failure is not None
    assert (story.failure.state, story.failure.error) == ("DependencyTimeout", "DependencyTimeout")
    assert story.failure.cause == execution["cause"]
    assert (story.failure.failed_step, story.failure.failed_step_error) == ("WaitForDatasets", "States.Timeout")
    assert story.next_step and "dataset" in story.next_step
    assert "dependencies" in story.other
    text = render_text(story)
    assert "  State      DependencyTimeout" in text
    assert "Step       WaitForDatasets failed with States.Timeout" in text
    assert "WaitForDatasets      failed with States.Timeout (kept in $.dependencyTimeout)" in text


def test_a_return_to_spot_told_from_its_stop_alone_is_a_return_not_a_move_between_types() -> None:
    """A history without the check that asked for the move (cut, or from an older execution): the
    stop's own words, and the tier of the job it stopped, tell what the move was."""
    training = Training(
        attempt=2,
        capacity="on-demand",
        instance_type="ml.g5.2xlarge",
        job_id="job-2",
        job_arn=None,
        job_name="ranker-a2",
        submitted_at="2026-12-01T06:46:00Z",
        first_poll_seconds=60,
        links={},
        previous_attempts=[],
    )
    reason = "Spotline: moving to spot again: spot capacity is back (the fleet just saw it)"
    stop = Fallback(
        job_id="job-2", capacity="spot", terminated=True, reason=reason, at="2026-12-01T07:17:00Z", notified=True
    )
    move = story_module._move(AttemptRecord(training=training, stop=stop))
    assert move is not None
    assert (move.kind, move.to, move.reason) == (
        "back-to-spot",
        "spot again",
        "spot capacity is back (the fleet just saw it)",
    )
    stopped_spot = story_module._move(AttemptRecord(training=replace(training, capacity="spot"), stop=stop))
    assert stopped_spot is not None and stopped_spot.kind == "spot"  # spot to spot: another type
