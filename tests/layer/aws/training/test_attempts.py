"""SubmitTrainingJob's next attempt, as the last check's `$.status` decided it (spotline.aws.training.attempts)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from state_samples import EXECUTION, PLAN, status_state, training_state

from conftest import NOW, example_spec
from spotline.aws.training.attempts import next_attempt
from spotline.core.state import RunStatus, Training


def _status(**changes: object) -> RunStatus:
    return RunStatus.from_state(status_state(**changes))


def test_a_run_s_first_attempt_follows_the_strategy() -> None:
    spec = example_spec()
    first = next_attempt(EXECUTION, spec, None, None)
    assert (first.number, first.capacity, first.priority, first.instance_type) == (1, "spot", None, None)
    assert next_attempt(EXECUTION, replace(spec, strategy="on-demand"), None, None).capacity == "on-demand"


def test_the_next_attempt_takes_the_checks_capacity_type_priority_and_pending_limit() -> None:
    spec, training = example_spec(), Training.from_state(training_state(instanceType="ml.g5.2xlarge"))
    moved = next_attempt(EXECUTION, spec, training, _status(nextCapacity="spot", nextInstanceType="ml.g6.2xlarge"))
    assert (moved.number, moved.capacity, moved.instance_type, moved.priority) == (3, "spot", "ml.g6.2xlarge", 300)
    assert moved.max_pending_seconds is None
    again = next_attempt(EXECUTION, spec, training, _status(nextCapacity="spot", nextInstanceType=None))
    assert again.instance_type == "ml.g5.2xlarge"  # the type it ran on
    fallback = next_attempt(EXECUTION, spec, training, _status(nextCapacity="on-demand", maxPendingSeconds=900))
    assert (fallback.capacity, fallback.max_pending_seconds) == ("on-demand", 900)


def test_an_attempt_on_a_plan_takes_the_plan_s_type_and_arn() -> None:
    training = Training.from_state(training_state())
    planned = next_attempt(
        EXECUTION, example_spec(), training, _status(nextCapacity="training-plan", nextTrainingPlan=PLAN)
    )
    assert (planned.capacity, planned.instance_type, planned.training_plan_arn) == (
        "training-plan",
        PLAN["instanceType"],
        PLAN["arn"],
    )


def test_a_check_that_decided_nothing_leaves_the_attempt_as_the_strategy_says() -> None:
    training = Training.from_state(training_state())
    undecided = next_attempt(EXECUTION, example_spec(), training, _status(nextCapacity=None))
    assert (undecided.number, undecided.capacity, undecided.priority, undecided.instance_type) == (
        3,
        "spot",
        None,
        None,
    )


def test_a_spot_attempt_with_little_slack_saves_first_early_until_the_work_is_measured() -> None:
    spec = example_spec()  # 8 h declared, checkpoints every 15 minutes
    assert spec.deadline_at is not None
    tight = spec.deadline_at - timedelta(hours=8, minutes=75)  # 75m of slack: the first save after 9m
    assert next_attempt(EXECUTION, spec, None, None, tight).first_checkpoint_minutes == 9
    assert next_attempt(EXECUTION, spec, None, None, NOW).first_checkpoint_minutes is None  # days of slack
    assert (
        next_attempt(EXECUTION, replace(spec, strategy="on-demand"), None, None, tight).first_checkpoint_minutes is None
    )
    training = Training.from_state(training_state())
    unmeasured = _status(
        nextCapacity="spot", progress=status_state()["progress"] | {"estimatedWorkSeconds": None, "fraction": 0.0}
    )
    assert next_attempt(EXECUTION, spec, training, unmeasured, tight).first_checkpoint_minutes is not None
    measured = _status(nextCapacity="spot")  # the sample's progress.json measured the work
    assert next_attempt(EXECUTION, spec, training, measured, tight).first_checkpoint_minutes is None
