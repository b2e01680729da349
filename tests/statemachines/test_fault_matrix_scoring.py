"""The fault matrix (issue 45) for the scoring run's Lambda tasks: each task x one error, one timeout,
one Lambda throttle and a burst of ten throttled AWS answers ends Scored with every shard's output
of the run without faults, each shard scored once and no transform job left running; a fault that
stays ends in a named state (ScoringStepFailed) with the run's transform jobs stopped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from ledger_checks import assert_reconciled
from statemachines.fault_cases import (
    FAULTS,
    SCORING_FAILURE_TASKS,
    SCORING_TASKS,
    case_ids,
    function_of,
    inject,
    invocation_times,
    task_failures,
)

from conftest import entered_states, scoring_stack_of, upload
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.template import PROJECT_ROOT

MANIFEST = (PROJECT_ROOT / "examples" / "scoring" / "scores-on-upload.yaml").read_bytes()
KEY = "manifests/media-recs/backfill-scores.yaml"
OBJECTS = 40  # the night's records in 40 objects (conftest's scoring_stack has 400): the same plan, 4 shards


def _scoring_stack() -> Any:
    """conftest's scoring_stack, in fewer objects: the same plan, 4 shards."""
    return scoring_stack_of(OBJECTS)


def _run(stack: LocalStack) -> dict[str, Any]:
    upload(stack, KEY, MANIFEST)
    (started,) = stack.deliver_events()
    execution = stack.wait_for_execution(started["executionArn"], timeout=600)
    history = stack.history(started["executionArn"])
    return {
        "execution": execution,
        "history": history,
        "failures": task_failures(history),
        "output": json.loads(execution.get("output") or "{}"),
        "times": invocation_times(stack),
    }


def _shard_outputs(stack: LocalStack) -> dict[str, bytes]:
    """Every scored object the run wrote, by its key under the output prefix's run folder."""
    s3, found = stack.client("s3"), {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="media-recs-scores"):
        for item in page.get("Contents", []):
            if item["Key"].endswith(".out"):
                # backfill/<run>/<shard>/<object>.out: the run folder is the execution's, the rest the plan's
                shard_key = item["Key"].split("/", 2)[2]
                found[shard_key] = s3.get_object(Bucket="media-recs-scores", Key=item["Key"])["Body"].read()
    return found


def _in_flight(stack: LocalStack) -> list[str]:
    """Transform jobs still scoring once SageMaker had time to stop what was stopped."""
    stack.clock.advance(600)
    now = stack.clock.now().timestamp()
    return [job.name for job in stack.standin.transforms.jobs.values() if job.status(now) in ("InProgress", "Stopping")]


@pytest.fixture(scope="module")
def scored() -> dict[str, Any]:
    with _scoring_stack() as stack:
        ran = _run(stack)
        assert ran["execution"]["status"] == "SUCCEEDED", ran["execution"].get("cause")
        assert ran["failures"] == [] and len(ran["times"]["AdvanceScoringRunFunction"]) >= 3
        ran["shards"] = _shard_outputs(stack)
        ran["jobs"] = len(stack.standin.transforms.jobs)
        assert len(ran["shards"]) == OBJECTS
        return ran


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize(("state", "nth"), SCORING_TASKS, ids=case_ids(SCORING_TASKS))
def test_one_transient_fault_in_any_scoring_task_is_absorbed(
    scored: dict[str, Any], state: str, nth: int, fault: str
) -> None:
    function = function_of("scoring_run", state)
    with _scoring_stack() as stack:
        inject(stack, function, fault, scored["times"][function][nth])
        ran = _run(stack)
        execution = ran["execution"]

        assert execution["status"] == "SUCCEEDED", (state, fault, execution.get("cause"))
        assert ran["failures"] == [FAULTS[fault]], ran["failures"]
        assert entered_states(ran["history"])[-1] == "Scored"
        outcome, expected = ran["output"]["outcome"], scored["output"]["outcome"]
        for figure in ("windowMet", "windowEnd", "instances", "failedShards"):
            assert outcome[figure] == expected[figure], figure
        # Every shard's output, as without the fault; no shard scored twice, nothing still scoring.
        assert _shard_outputs(stack) == scored["shards"]
        assert len(stack.standin.transforms.jobs) == scored["jobs"]
        assert _in_flight(stack) == []
        _reconcile(stack, execution["name"], outcome["report"])


def _reconcile(stack: LocalStack, name: str, report_uri: str) -> None:
    """A scoring run reports no cost or billed training time, and the ledger has no training of it."""
    bucket, key = report_uri.removeprefix("s3://").split("/", 1)
    report = json.loads(stack.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())
    assert report["kind"] == "ScoringJob"
    run = {"kind": "ScoringJob", "name": name, "ledger": stack.standin.ledger().get(name)}
    assert_reconciled(run | {"costUsd": report.get("costUsd"), "billableSeconds": report.get("billableSeconds", 0)})


# --- StopTheRunsTransformJobs: the clean-up after a step that stays failed ------------------------


@contextmanager
def _failing_look_stack(scored: dict[str, Any]) -> Iterator[LocalStack]:
    """AdvanceScoringRun fails at every try from its second look on (a bug), the shards scoring:
    StopTheRunsTransformJobs stops them and the run ends in ScoringStepFailed (UnexpectedError)."""
    with _scoring_stack() as stack:
        inject(stack, "AdvanceScoringRunFunction", "error", scored["times"]["AdvanceScoringRunFunction"][1], 100_000)
        yield stack


def _ends_in_scoring_step_failed(stack: LocalStack, ran: dict[str, Any]) -> None:
    execution = ran["execution"]
    assert (execution["status"], execution["error"]) == ("FAILED", "UnexpectedError"), execution
    assert entered_states(ran["history"])[-2:] == ["StopTheRunsTransformJobs", "ScoringStepFailed"]
    assert "AdvanceScoringRunFunction failed unexpectedly" in execution["cause"]
    assert stack.standin.transforms.jobs  # the shards had started


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize(("state", "nth"), SCORING_FAILURE_TASKS, ids=case_ids(SCORING_FAILURE_TASKS))
def test_one_transient_fault_in_the_scoring_clean_up_still_stops_every_shard_and_ends_named(
    scored: dict[str, Any], state: str, nth: int, fault: str
) -> None:
    assert nth == 0  # its function's first invocation here: the retries before it wait with jitter, at random
    with _failing_look_stack(scored) as stack:
        inject(stack, function_of("scoring_run", state), fault, stack.clock.now())
        ran = _run(stack)

        _ends_in_scoring_step_failed(stack, ran)
        assert ran["failures"] == ["InjectedFault"] * 3 + [FAULTS[fault]], ran["failures"]
        assert _in_flight(stack) == []  # stopped by the clean-up itself, before the execution's end


def test_a_scoring_clean_up_that_keeps_failing_still_ends_named_and_the_end_stops_the_shards(
    scored: dict[str, Any],
) -> None:
    """StopTheRunsTransformJobs failing past its retries once ended the execution in no state at all,
    its error the task's (Step Functions, "Handling errors": "When a state reports an error, Step
    Functions defaults to failing the entire state machine execution"; a Catch is scanned when
    "retries fail to resolve the error"). It ends in ScoringStepFailed, and the rule on the
    execution's end (StopExecutionJobs) stops the transform jobs still in flight."""
    with _failing_look_stack(scored) as stack:
        inject(stack, "RecordScoringRunFunction", "error", stack.clock.now(), 100_000)
        ran = _run(stack)

        _ends_in_scoring_step_failed(stack, ran)
        assert ran["failures"] == ["InjectedFault"] * 6  # 3 tries of the look, 3 of the clean-up
        now = stack.clock.now().timestamp()
        assert any(job.status(now) == "InProgress" for job in stack.standin.transforms.jobs.values())
        (ended,) = stack.deliver_events(sources=("aws.states",))  # the end-of-execution rule
        assert ended["stoppedTransformJobs"]
        assert _in_flight(stack) == []
