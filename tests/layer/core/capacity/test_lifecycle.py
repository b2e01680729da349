"""What the workflow does after a status check: keep waiting, resubmit on spot, switch to
on-demand, or finish; and the rules that must never bend (training errors are never retried,
spot-only never touches on-demand, on-demand goes back to spot only when the policy says it pays,
at most MAX_RETURNS_TO_SPOT times)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builders import example_spec
from spotline.core.capacity.lifecycle import (
    CHECKS_PER_EXECUTION,
    MAX_RETURNS_TO_SPOT,
    SPOT_ENDINGS,
    Action,
    CapacityWait,
    NextStep,
    next_step,
    returns_to_spot,
    within_history_budget,
)
from spotline.core.capacity.policy import Capacity, Decision, JobClock, backoff_seconds, decide
from spotline.core.spec.model import JobSpec, Strategy
from spotline.core.training.status import ReasonClass, State, TrainingStatus, normalize

VALIDATED_AT = datetime(2026, 11, 29, tzinfo=UTC)
SEED = "arn:aws:states:us-east-1:123456789012:execution:TrainingLifecycle:search-ranking-ranker-v2:1"


SPOT_FIRST = example_spec(VALIDATED_AT)
SPOT_ONLY = replace(SPOT_FIRST, strategy="spot-only")
ON_DEMAND = replace(SPOT_FIRST, strategy="on-demand")
SPECS: dict[Strategy, JobSpec] = {"spot-first": SPOT_FIRST, "spot-only": SPOT_ONLY, "on-demand": ON_DEMAND}

CONTINUE = Decision("continue", "on track: 61h16m of slack on-demand would not need", 221_760.0)
SWITCH = Decision(
    "switch-to-on-demand",
    "deadline at risk: 2h30m left, on-demand needs 2h44m (2h of work + 20m restart + 24m margin)",
    -840.0,
)
RETURN = Decision(
    "return-to-spot",
    "spot capacity is back (the fleet just saw it) and 1h of slack covers a 20m spot start-up with 40m to spare",
    3600.0,
)
DECISIONS = (CONTINUE, SWITCH, RETURN)

STATES: tuple[State, ...] = get_args(State)
RUNNING_STATES: tuple[State, ...] = ("queued", "starting", "training", "interrupted")
REASON_CLASSES: tuple[ReasonClass | None, ...] = (*get_args(ReasonClass), None)
TRAINING_FAILURES: tuple[ReasonClass | None, ...] = tuple(r for r in REASON_CLASSES if r not in SPOT_ENDINGS)
SPOT_ENDING_CLASSES: tuple[ReasonClass, ...] = ("spot-wait-exceeded", "capacity")
CAPACITIES: tuple[Capacity, ...] = ("spot", "on-demand")
STRATEGIES: tuple[Strategy, ...] = ("spot-first", "spot-only", "on-demand")
ATTEMPTS = (1, 2, 3, 4, 10)
REACHABLE: tuple[tuple[Strategy, Capacity], ...] = (
    ("spot-first", "spot"),
    ("spot-first", "on-demand"),
    ("spot-only", "spot"),
    ("on-demand", "on-demand"),
)
"""(strategy, capacity) pairs SubmitTrainingJob can produce: on-demand jobs start on on-demand,
spot-only jobs never leave spot."""


def _status(state: State, reason_class: ReasonClass | None = None) -> TrainingStatus:
    finished = state in ("completed", "failed")
    return TrainingStatus(
        state=state,
        reason_class=reason_class,
        reason=f"{state} ({reason_class})",
        batch_status={"completed": "SUCCEEDED", "failed": "FAILED", "queued": "RUNNABLE"}.get(state, "RUNNING"),
        secondary_status=None,
        training_job_name="search-ranking-ranker-v2-1",
        training_seconds=3600,
        billable_seconds=1080,
        interruptions=0,
        capacity_short=False,
        started_at=VALIDATED_AT,
        ended_at=VALIDATED_AT + timedelta(hours=1) if finished else None,
    )


def _step(
    spec: JobSpec,
    status: TrainingStatus,
    *,
    capacity: Capacity = "spot",
    spot_attempts: int = 1,
    decision: Decision = CONTINUE,
    seed: str = SEED,
) -> NextStep:
    return next_step(spec, status, capacity=capacity, spot_attempts=spot_attempts, decision=decision, seed=seed)


def _assert_well_formed(step: NextStep, status: TrainingStatus) -> None:
    """Each action carries exactly the fields the state machine routes on."""
    assert step.explanation
    if step.action == "finish":
        assert status.finished
        assert step.finish_reason is not None
        assert step.next_capacity is None and step.backoff_seconds == 0
    elif step.action == "resubmit-on-spot":
        assert status.state == "failed"
        assert step.next_capacity == "spot" and step.backoff_seconds >= 1 and step.finish_reason is None
    elif step.action == "switch-to-on-demand":
        assert step.next_capacity == "on-demand" and step.backoff_seconds == 0 and step.finish_reason is None
    elif step.action == "resubmit-on-demand":  # Batch ended an on-demand wait for capacity (issue 29)
        assert status.state == "failed" and status.reason_class == "capacity"
        assert step.next_capacity == "on-demand" and step.backoff_seconds >= 1 and step.finish_reason is None
    elif step.action == "return-to-spot":
        assert not status.finished
        assert step.next_capacity == "spot" and step.backoff_seconds == 0 and step.finish_reason is None
    elif step.action == "give-up":
        assert step.finish_reason == "capacity-unavailable" and step.next_capacity is None
    else:
        assert step.action == "keep-waiting"
        assert not status.finished
        assert step.next_capacity is None and step.backoff_seconds == 0 and step.finish_reason is None


ALL_COMBINATIONS = list(itertools.product(STRATEGIES, CAPACITIES, STATES, REASON_CLASSES, ATTEMPTS, DECISIONS))


@pytest.mark.parametrize(
    "case", ALL_COMBINATIONS, ids=[f"{s}-{c}-{st_}-{r}-{a}-{d.verdict}" for s, c, st_, r, a, d in ALL_COMBINATIONS]
)
def test_every_step_is_well_formed(
    case: tuple[Strategy, Capacity, State, ReasonClass | None, int, Decision],
) -> None:
    strategy, capacity, state, reason_class, attempts, decision = case
    status = _status(state, reason_class)
    step = _step(SPECS[strategy], status, capacity=capacity, spot_attempts=attempts, decision=decision)
    _assert_well_formed(step, status)


# --- completion -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "capacity", "decision"), list(itertools.product(STRATEGIES, CAPACITIES, DECISIONS))
)
def test_completed_finishes_as_completed(strategy: Strategy, capacity: Capacity, decision: Decision) -> None:
    step = _step(SPECS[strategy], _status("completed"), capacity=capacity, decision=decision, spot_attempts=3)
    assert step == NextStep("finish", "training completed", finish_reason="completed")


# --- training failures are never retried ---------------------------------------------------


@pytest.mark.parametrize("reason_class", ["algorithm", "client", "internal", "max-runtime-exceeded"])
def test_training_failure_on_spot_finishes_as_failed(reason_class: ReasonClass) -> None:
    step = _step(SPOT_FIRST, _status("failed", reason_class), spot_attempts=1, decision=SWITCH)
    assert step.action == "finish"
    assert step.finish_reason == "failed"
    assert step.explanation == f"training failed ({reason_class}): never retried"


@given(
    strategy=st.sampled_from(STRATEGIES),
    capacity=st.sampled_from(CAPACITIES),
    reason_class=st.sampled_from(TRAINING_FAILURES),
    attempts=st.integers(min_value=0, max_value=20),
    decision=st.sampled_from(DECISIONS),
    seed=st.text(max_size=40),
)
def test_training_errors_are_never_retried(
    *,
    strategy: Strategy,
    capacity: Capacity,
    reason_class: ReasonClass | None,
    attempts: int,
    decision: Decision,
    seed: str,
) -> None:
    step = _step(
        SPECS[strategy],
        _status("failed", reason_class),
        capacity=capacity,
        spot_attempts=attempts,
        decision=decision,
        seed=seed,
    )
    assert step.action == "finish"
    assert step.finish_reason == "failed"
    assert step.next_capacity is None
    assert step.backoff_seconds == 0
    assert "never retried" in step.explanation


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("decision", DECISIONS, ids=lambda d: d.verdict)
def test_max_wait_on_on_demand_capacity_is_a_plain_failure(strategy: Strategy, decision: Decision) -> None:
    step = _step(SPECS[strategy], _status("failed", "spot-wait-exceeded"), capacity="on-demand", decision=decision)
    assert step.action == "finish"
    assert step.finish_reason == "failed"


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("decision", DECISIONS, ids=lambda d: d.verdict)
def test_a_capacity_ending_on_on_demand_is_a_capacity_event(strategy: Strategy, decision: Decision) -> None:
    """Batch ends an on-demand attempt short of capacity only through the queue's time limit
    (jobStateTimeLimitActions): Spotline resubmits on on-demand after a back-off (issue 29)."""
    step = _step(SPECS[strategy], _status("failed", "capacity"), capacity="on-demand", decision=decision)
    assert (step.action, step.next_capacity, step.finish_reason) == ("resubmit-on-demand", "on-demand", None)


# --- spot endings: resubmit with back-off, then switch or give up --------------------------


@pytest.mark.parametrize("reason_class", SPOT_ENDING_CLASSES)
@pytest.mark.parametrize("spec", [SPOT_FIRST, SPOT_ONLY], ids=["spot-first", "spot-only"])
@pytest.mark.parametrize("attempts", [1, 2])
def test_spot_ending_resubmits_on_spot_after_a_backoff(reason_class: ReasonClass, spec: JobSpec, attempts: int) -> None:
    step = _step(spec, _status("failed", reason_class), spot_attempts=attempts, decision=CONTINUE)
    assert step.action == "resubmit-on-spot"
    assert step.next_capacity == "spot"
    assert step.finish_reason is None
    ceiling = spec.retry_backoff_seconds * 2 ** (attempts - 1)
    assert 1 <= step.backoff_seconds <= ceiling
    assert step.backoff_seconds == backoff_seconds(spec.retry_backoff_seconds, attempts, SEED)
    assert step.explanation == (
        f"spot ended the job ({reason_class}); spot attempt {attempts + 1} of {spec.retry_max_attempts} "
        f"from the last checkpoint after {step.backoff_seconds}s"
    )


def test_resubmission_backoff_is_deterministic_per_seed_and_spread_across_executions() -> None:
    status = _status("failed", "capacity")
    assert _step(SPOT_FIRST, status, seed="a").backoff_seconds == _step(SPOT_FIRST, status, seed="a").backoff_seconds
    waits = {_step(SPOT_FIRST, status, spot_attempts=2, seed=f"exec-{n}:2").backoff_seconds for n in range(50)}
    assert len(waits) >= 25


def test_resubmission_backoff_ceiling_grows_with_the_attempt() -> None:
    spec = replace(SPOT_ONLY, retry_max_attempts=10, retry_backoff_seconds=60)
    status = _status("failed", "spot-wait-exceeded")
    for attempts in range(1, 10):
        waits = [_step(spec, status, spot_attempts=attempts, seed=f"exec-{n}").backoff_seconds for n in range(100)]
        ceiling = min(3600, 60 * 2 ** (attempts - 1))
        assert max(waits) <= ceiling
        assert max(waits) >= 0.8 * ceiling


@pytest.mark.parametrize("reason_class", SPOT_ENDING_CLASSES)
def test_spot_first_switches_instead_of_resubmitting_when_the_deadline_is_at_risk(reason_class: ReasonClass) -> None:
    step = _step(SPOT_FIRST, _status("failed", reason_class), spot_attempts=1, decision=SWITCH)
    assert step == NextStep("switch-to-on-demand", SWITCH.reason, next_capacity="on-demand")


@pytest.mark.parametrize("reason_class", SPOT_ENDING_CLASSES)
@pytest.mark.parametrize("attempts", [3, 4, 10])
@pytest.mark.parametrize("decision", DECISIONS, ids=lambda d: d.verdict)
def test_spot_first_moves_to_on_demand_once_spot_attempts_are_exhausted(
    reason_class: ReasonClass, attempts: int, decision: Decision
) -> None:
    step = _step(SPOT_FIRST, _status("failed", reason_class), spot_attempts=attempts, decision=decision)
    assert step.action == "switch-to-on-demand"
    assert step.next_capacity == "on-demand"
    assert step.backoff_seconds == 0
    assert f"spot attempts exhausted ({attempts} of 3)" in step.explanation
    assert "on-demand" in step.explanation


@pytest.mark.parametrize("reason_class", SPOT_ENDING_CLASSES)
@pytest.mark.parametrize("attempts", [3, 4, 10])
@pytest.mark.parametrize("decision", DECISIONS, ids=lambda d: d.verdict)
def test_spot_only_finishes_as_spot_exhausted(reason_class: ReasonClass, attempts: int, decision: Decision) -> None:
    step = _step(SPOT_ONLY, _status("failed", reason_class), spot_attempts=attempts, decision=decision)
    assert step.action == "finish"
    assert step.finish_reason == "spot-exhausted"
    assert step.next_capacity is None
    assert step.explanation == (f"spot attempts exhausted ({attempts} of 3) and the strategy is spot-only")


@pytest.mark.parametrize("max_attempts", [1, 2, 5, 10])
def test_the_number_of_spot_submissions_is_retry_max_attempts(max_attempts: int) -> None:
    """Walk spot-only through repeated spot endings: it resubmits until `retry_max_attempts`
    spot submissions were made (this one included), then gives up."""
    spec = replace(SPOT_ONLY, retry_max_attempts=max_attempts)
    status = _status("failed", "capacity")
    actions = [_step(spec, status, spot_attempts=n).action for n in range(1, max_attempts + 1)]
    assert actions == ["resubmit-on-spot"] * (max_attempts - 1) + ["finish"]


# --- while running ------------------------------------------------------------------------


@pytest.mark.parametrize("state", RUNNING_STATES)
def test_running_spot_first_job_switches_when_the_policy_says_so(state: State) -> None:
    step = _step(SPOT_FIRST, _status(state), decision=SWITCH)
    assert step == NextStep("switch-to-on-demand", SWITCH.reason, next_capacity="on-demand")


@pytest.mark.parametrize("state", RUNNING_STATES)
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("capacity", CAPACITIES)
def test_running_job_keeps_waiting_while_on_track(state: State, strategy: Strategy, capacity: Capacity) -> None:
    step = _step(SPECS[strategy], _status(state), capacity=capacity, decision=CONTINUE)
    assert step == NextStep("keep-waiting", CONTINUE.reason)


@pytest.mark.parametrize("state", RUNNING_STATES)
@pytest.mark.parametrize("strategy", ["spot-only", "on-demand"])
def test_only_spot_first_follows_a_switch_decision(state: State, strategy: Strategy) -> None:
    step = _step(SPECS[strategy], _status(state), decision=SWITCH)
    assert step == NextStep("keep-waiting", SWITCH.reason)


@pytest.mark.parametrize("state", RUNNING_STATES)
def test_a_job_already_on_on_demand_keeps_waiting(state: State) -> None:
    step = _step(SPOT_FIRST, _status(state), capacity="on-demand", decision=SWITCH, spot_attempts=3)
    assert step.action == "keep-waiting"


# --- the rules that never bend (over every combination) ------------------------------------


@given(
    capacity=st.sampled_from(CAPACITIES),
    state=st.sampled_from(STATES),
    reason_class=st.sampled_from(REASON_CLASSES),
    attempts=st.integers(min_value=0, max_value=20),
    max_attempts=st.integers(min_value=1, max_value=10),
    decision=st.sampled_from(DECISIONS),
    seed=st.text(max_size=40),
)
def test_spot_only_never_uses_on_demand(
    *,
    capacity: Capacity,
    state: State,
    reason_class: ReasonClass | None,
    attempts: int,
    max_attempts: int,
    decision: Decision,
    seed: str,
) -> None:
    spec = replace(SPOT_ONLY, retry_max_attempts=max_attempts)
    status = _status(state, reason_class)
    step = _step(spec, status, capacity=capacity, spot_attempts=attempts, decision=decision, seed=seed)
    assert step.action != "switch-to-on-demand"
    # Once on on-demand (which a spot-only job never reaches), only on-demand follows.
    assert step.next_capacity != "on-demand" or capacity == "on-demand"
    _assert_well_formed(step, status)


@given(
    st.sampled_from(STRATEGIES),
    st.sampled_from(STATES),
    st.sampled_from(REASON_CLASSES),
    st.integers(min_value=0, max_value=20),
    st.sampled_from(DECISIONS),
)
def test_on_demand_capacity_resubmits_only_on_demand_and_returns_to_spot_only_when_the_policy_says_so(
    strategy: Strategy, state: State, reason_class: ReasonClass | None, attempts: int, decision: Decision
) -> None:
    status = _status(state, reason_class)
    step = _step(SPECS[strategy], status, capacity="on-demand", spot_attempts=attempts, decision=decision)
    assert step.action in ("keep-waiting", "finish", "resubmit-on-demand", "return-to-spot")
    returns = (
        strategy == "spot-first"
        and decision.verdict == "return-to-spot"
        and attempts < SPOT_FIRST.retry_max_attempts
        and not status.finished
        and status.state != "failed"
    )
    assert (step.action == "return-to-spot") == returns
    assert step.next_capacity in (None, "on-demand", "spot")
    assert (step.next_capacity == "spot") == returns
    assert (step.backoff_seconds > 0) == (step.action == "resubmit-on-demand")


@pytest.mark.parametrize("returns", range(MAX_RETURNS_TO_SPOT + 2))
def test_a_run_returns_to_spot_at_most_max_returns_times(returns: int) -> None:
    step = next_step(
        SPOT_FIRST,
        _status("training"),
        capacity="on-demand",
        spot_attempts=1,
        decision=RETURN,
        seed=SEED,
        wait=CapacityWait(returns_to_spot=returns),
    )
    if returns < MAX_RETURNS_TO_SPOT:
        assert step.action == "return-to-spot" and step.next_capacity == "spot"
        assert f"return {returns + 1} of {MAX_RETURNS_TO_SPOT}" in step.explanation
    else:
        assert step.action == "keep-waiting" and step.next_capacity is None


@pytest.mark.parametrize(
    ("capacities", "returns"),
    [
        ([], 0),
        (["spot"], 0),
        (["spot", "on-demand"], 0),
        (["spot", "on-demand", "spot"], 1),
        (["spot", "spot", "on-demand", "spot", "spot", "on-demand", "spot"], 2),
        (["on-demand", "on-demand"], 0),
        (["spot", "training-plan", "on-demand"], 0),
    ],
)
def test_returns_to_spot_counts_each_move_from_on_demand_back_to_spot(capacities: list[str], returns: int) -> None:
    assert returns_to_spot(capacities) == returns


@given(
    st.sampled_from(STATES),
    st.sampled_from(REASON_CLASSES),
    st.integers(min_value=0, max_value=20),
    st.sampled_from(DECISIONS),
)
def test_on_demand_strategy_only_waits_or_finishes(
    state: State, reason_class: ReasonClass | None, attempts: int, decision: Decision
) -> None:
    """An on-demand job is always submitted on on-demand capacity (SubmitTrainingJob's
    `_next_attempt`), so that is the only combination that occurs."""
    status = _status(state, reason_class)
    step = _step(ON_DEMAND, status, capacity="on-demand", spot_attempts=attempts, decision=decision)
    assert step.action in ("keep-waiting", "finish", "resubmit-on-demand")
    assert step.finish_reason in (None, "completed", "failed")


@given(
    st.sampled_from(REACHABLE),
    st.sampled_from(STATES),
    st.sampled_from(REASON_CLASSES),
    st.integers(min_value=0, max_value=20),
    st.sampled_from(DECISIONS),
)
def test_resubmission_only_after_a_spot_ending_on_spot_within_the_attempts(
    placement: tuple[Strategy, Capacity],
    state: State,
    reason_class: ReasonClass | None,
    attempts: int,
    decision: Decision,
) -> None:
    strategy, capacity = placement
    spec = SPECS[strategy]
    step = _step(spec, _status(state, reason_class), capacity=capacity, spot_attempts=attempts, decision=decision)
    if step.action == "resubmit-on-spot":
        assert state == "failed" and reason_class in SPOT_ENDINGS
        assert capacity == "spot" and strategy != "on-demand"
        assert attempts < spec.retry_max_attempts


# --- with the real policy -------------------------------------------------------------------


def test_example_job_stuck_without_spot_near_its_deadline_moves_to_on_demand() -> None:
    deadline = SPOT_FIRST.deadline_at
    assert deadline is not None and SPOT_FIRST.expected_duration_seconds is not None
    decision = decide(
        JobClock(
            now=deadline - timedelta(hours=2, minutes=30),
            started_at=datetime(2026, 11, 29, 8, 0, tzinfo=UTC),
            deadline=deadline,
            total_work_seconds=float(SPOT_FIRST.expected_duration_seconds),
            progress=0.75,
            capacity="spot",
            spot_missing=True,
        )
    )
    assert decision.reason.startswith("deadline at risk: 2h30m left")
    step = _step(SPOT_FIRST, _status("interrupted"), decision=decision)
    assert step.action == "switch-to-on-demand"
    assert step.next_capacity == "on-demand"
    assert "deadline at risk" in step.explanation
    assert _step(SPOT_ONLY, _status("interrupted"), decision=decision).action == "keep-waiting"


# --- Batch's own retries ---------------------------------------------------------------------

REQUEUED_AFTER = {
    "capacity": (
        "CapacityError: Unable to provision requested ML compute capacity.",
        "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
    ),
    "internal": ("InternalServerError: We encountered an internal error. Please try again.", ""),
    "algorithm": ("AlgorithmError: ExecuteUserScriptError: ExitCode 1", ""),  # a retryStrategy that retries anything
}


@pytest.mark.parametrize("failure", sorted(REQUEUED_AFTER))
@pytest.mark.parametrize(("strategy", "capacity"), REACHABLE)
@pytest.mark.parametrize("attempts", ATTEMPTS)
def test_an_attempt_batch_requeues_never_resubmits_or_finishes(
    failure: str, strategy: Strategy, capacity: Capacity, attempts: int
) -> None:
    reason, batch_reason = REQUEUED_AFTER[failure]
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/ranker-v2-1a2b3c4d-a1-spot"
    batch_job = {
        "jobId": "j-1",
        "status": "RUNNABLE",
        "statusReason": batch_reason,
        "attempts": [{"serviceResourceId": {"name": "TrainingJobArn", "value": arn}, "statusReason": reason}],
    }
    training_job = {
        "TrainingJobName": "ranker-v2-1a2b3c4d-a1-spot",
        "TrainingJobStatus": "Failed",
        "SecondaryStatus": "Failed",
        "FailureReason": reason,
        "SecondaryStatusTransitions": [],
    }
    status = normalize(batch_job, training_job, VALIDATED_AT)
    step = _step(SPECS[strategy], status, capacity=capacity, spot_attempts=attempts, decision=CONTINUE)
    assert step == NextStep("keep-waiting", CONTINUE.reason)


def test_an_execution_that_made_its_share_of_checks_hands_the_watch_over() -> None:
    waiting = NextStep("keep-waiting", "on track: 2h of slack on-demand would not need")
    assert within_history_budget(waiting, CHECKS_PER_EXECUTION - 1) == waiting
    handed = within_history_budget(waiting, CHECKS_PER_EXECUTION)
    assert handed.action == "continue-in-new-execution"
    assert handed.explanation.startswith("on track: 2h of slack")
    assert f"{CHECKS_PER_EXECUTION} status checks in this execution" in handed.explanation


@pytest.mark.parametrize("action", ["resubmit-on-spot", "switch-to-on-demand", "finish"])
def test_a_step_that_acts_is_never_postponed_by_the_hand_over(action: str) -> None:
    step = NextStep(action, "why")  # type: ignore[arg-type]
    assert within_history_budget(step, 10 * CHECKS_PER_EXECUTION) == step


def test_every_action_has_a_route_in_the_state_machine() -> None:
    asl = json.loads(
        (Path(__file__).resolve().parents[4] / "statemachines" / "training_lifecycle.asl.json").read_text()
    )
    routes = {c["StringEquals"] for c in asl["States"]["WhatShouldHappenNext?"]["Choices"]}
    assert routes | {"finish"} == set(get_args(Action))  # finish is the Choice's default: RecordOutcome
