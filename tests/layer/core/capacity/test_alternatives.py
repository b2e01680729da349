"""Instance-type alternatives (issue 29), the pure parts: the manifest field, the team allowance
per type, the rendered requests (one type on spot, InstancePreferences on-demand, botocore's
models), and the lifecycle's moves between types."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from builders import spec_of
from spotline.aws.training.request_check import submit_service_job_request
from spotline.core.capacity.lifecycle import CapacityWait, next_step, next_type
from spotline.core.capacity.policy import Decision, JobClock, no_option_left
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.spec.model import InstanceOption, JobSpec
from spotline.core.teams.team_policy import TeamPolicy
from spotline.core.training.status import TrainingStatus
from spotline.core.training.training_request import Attempt, create_training_job_request, pending_limit
from tests.layer.core.manifest.test_rules import NOW, manifest

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:spotline-training-lifecycle:ranker-1a2b3c4d"
QUEUE = "arn:aws:batch:us-east-1:123456789012:job-queue/spotline-training"
ALTERNATIVES = [{"instanceType": "ml.g6.2xlarge", "speed": 0.8}, {"instanceType": "ml.g6e.4xlarge", "instanceCount": 2}]


def spec_with(alternatives: list[dict[str, Any]]) -> JobSpec:
    return spec_of(manifest(resources={"instanceType": "ml.g5.2xlarge", "alternatives": alternatives}), NOW)


def errors_of(alternatives: Any) -> dict[str, str]:
    document = manifest(resources={"instanceType": "ml.g5.2xlarge", "alternatives": alternatives})
    return {e.path: e.message for e in validate_bytes(json.dumps(document).encode(), now=NOW).errors}


def test_alternatives_are_read_in_order_with_their_counts_and_speeds() -> None:
    spec = spec_with(ALTERNATIVES)
    assert spec.instance_options == (
        InstanceOption("ml.g5.2xlarge", 1),
        InstanceOption("ml.g6.2xlarge", 1, 0.8),
        InstanceOption("ml.g6e.4xlarge", 2),
    )
    assert JobSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


@pytest.mark.parametrize(
    ("alternatives", "path", "words"),
    [
        ([{"instanceType": "ml.g5.2xlarge"}], "spec.resources.alternatives[0].instanceType", "already listed"),
        (
            [{"instanceType": "ml.g6.2xlarge"}, {"instanceType": "ml.g6.2xlarge"}],
            "spec.resources.alternatives[1].instanceType",
            "already listed as spec.resources.alternatives[0]",
        ),
        ([{"instanceType": "ml.g6.3xlarge"}], "spec.resources.alternatives[0].instanceType", "not a SageMaker"),
        ([{"instanceType": f"ml.g6.{n}xlarge"} for n in (2, 4, 8, 12, 16)], "spec.resources.alternatives", ""),
        ([{"instanceType": "ml.g6.2xlarge", "speed": 0}], "spec.resources.alternatives[0].speed", ""),
        ([{"instanceType": "ml.g6.2xlarge", "count": 2}], "spec.resources.alternatives[0].count", "unknown field"),
    ],
)
def test_bad_alternatives_are_refused_naming_the_field(alternatives: Any, path: str, words: str) -> None:
    errors = errors_of(alternatives)
    assert path in errors, errors
    assert words in errors[path]


def test_each_alternative_needs_the_teams_allowance() -> None:
    spec = spec_with(ALTERNATIVES)
    policy = TeamPolicy.from_json(
        json.dumps(
            {
                "teams": {
                    "search-ranking": {
                        "instanceFamilies": ["g5", "g6"],
                        "maxInstances": 1,
                        "roles": [spec.role_arn],
                        "s3Prefixes": [
                            "s3://search-ranking-data/",
                            "s3://search-ranking-models/",
                            "s3://search-ranking-checkpoints/",
                        ],
                        "images": [spec.image],
                    }
                }
            }
        )
    )
    problems = {e.path: e.message for e in policy.check(spec)}
    second = "spec.resources.alternatives[1]"
    assert set(problems) == {f"{second}.instanceType", f"{second}.instanceCount"}
    assert "family g6e is not allowed" in problems["spec.resources.alternatives[1].instanceType"]


def test_spot_runs_on_one_type_and_on_demand_lists_them_all() -> None:
    spec = spec_with(ALTERNATIVES)
    spot = create_training_job_request(spec, Attempt(EXECUTION, 2, "spot", instance_type="ml.g6e.4xlarge"))
    assert spot["ResourceConfig"] | {"VolumeSizeInGB": 0} == {
        "InstanceType": "ml.g6e.4xlarge",
        "InstanceCount": 2,
        "VolumeSizeInGB": 0,
    }
    assert spot["EnableManagedSpotTraining"] is True
    fallback = Attempt(EXECUTION, 3, "on-demand", max_pending_seconds=pending_limit(600))
    request = submit_service_job_request(spec, fallback, QUEUE)  # botocore's models accept it
    payload = json.loads(request["serviceRequestPayload"])
    assert payload["ResourceConfig"]["InstancePreferences"] == [
        {"InstanceType": "ml.g5.2xlarge", "InstanceCount": 1},
        {"InstanceType": "ml.g6.2xlarge", "InstanceCount": 1},
        {"InstanceType": "ml.g6e.4xlarge", "InstanceCount": 2},
    ]
    assert "InstanceType" not in payload["ResourceConfig"] and "InstanceCount" not in payload["ResourceConfig"]
    # "InstancePreferences is mutually exclusive with ... EnableManagedSpotTraining" (ResourceConfig):
    # not even false is sent beside it.
    assert "EnableManagedSpotTraining" not in payload
    assert payload["StoppingCondition"]["MaxPendingTimeInSeconds"] == 1800  # the API's minimum
    assert pending_limit(10**9) == 28 * 86400


def test_a_job_without_alternatives_keeps_one_type_on_demand() -> None:
    spec = replace(spec_with(ALTERNATIVES), alternatives=())
    payload = create_training_job_request(spec, Attempt(EXECUTION, 2, "on-demand"))
    assert payload["ResourceConfig"]["InstanceType"] == "ml.g5.2xlarge"
    assert "InstancePreferences" not in payload["ResourceConfig"]


def test_types_cycle_in_order_of_preference() -> None:
    spec = spec_with(ALTERNATIVES)
    assert [next_type(spec, t) for t in ("ml.g5.2xlarge", "ml.g6.2xlarge", "ml.g6e.4xlarge", None)] == [
        "ml.g6.2xlarge",
        "ml.g6e.4xlarge",
        "ml.g5.2xlarge",
        "ml.g6.2xlarge",
    ]
    assert next_type(replace(spec, alternatives=()), "ml.g5.2xlarge") is None


def _status(state: str, reason: str = "", interruptions: int = 0) -> TrainingStatus:
    return TrainingStatus(
        state=state,  # type: ignore[arg-type]
        reason_class=None,
        reason=reason,
        batch_status="RUNNING",
        secondary_status="Starting",
        training_job_name="j",
        training_seconds=0,
        billable_seconds=0,
        interruptions=interruptions,
        capacity_short=False,
        started_at=None,
        ended_at=None,
    )


CONTINUE = Decision("continue", "on track", 10 * 3600.0)
WAITING = _status("starting", "Insufficient capacity error from EC2 while launching instances, retrying!")


@pytest.mark.parametrize(
    ("waited", "slack", "moves"),
    [(3599, 10 * 3600.0, False), (3600, 10 * 3600.0, True), (899, 3000.0, False), (900, 3000.0, True)],
)
def test_spot_moves_to_the_next_type_after_a_capacity_wait(waited: float, slack: float, moves: bool) -> None:
    spec = spec_with(ALTERNATIVES)
    step = next_step(
        spec,
        WAITING,
        capacity="spot",
        spot_attempts=1,
        decision=Decision("continue", "on track", slack),
        seed="s",
        wait=CapacityWait("ml.g5.2xlarge", waited),
    )
    assert (step.action == "move-to-another-type") is moves
    if moves:
        assert (step.next_capacity, step.next_instance_type) == ("spot", "ml.g6.2xlarge")


def test_no_move_without_alternatives_or_spot_attempts_left() -> None:
    spec = spec_with(ALTERNATIVES)
    wait = CapacityWait("ml.g5.2xlarge", 7200)
    for job, attempts in ((replace(spec, alternatives=()), 1), (spec, spec.retry_max_attempts)):
        step = next_step(job, WAITING, capacity="spot", spot_attempts=attempts, decision=CONTINUE, seed="s", wait=wait)
        assert step.action == "keep-waiting"


def test_repeated_interruptions_move_the_job_too() -> None:
    step = next_step(
        spec_with(ALTERNATIVES),
        _status("interrupted", interruptions=3),
        capacity="spot",
        spot_attempts=1,
        decision=CONTINUE,
        seed="s",
        wait=CapacityWait("ml.g6.2xlarge", 0),
    )
    assert (step.action, step.next_instance_type) == ("move-to-another-type", "ml.g6e.4xlarge")


def test_an_on_demand_wait_past_the_deadline_gives_up() -> None:
    spec = spec_with(ALTERNATIVES)
    for passed, action in ((False, "keep-waiting"), (True, "give-up")):
        wait = CapacityWait(None, 1800, deadline_passed=passed)
        step = next_step(spec, WAITING, capacity="on-demand", spot_attempts=3, decision=CONTINUE, seed="s", wait=wait)
        assert step.action == action
    assert step.finish_reason == "capacity-unavailable"


def test_no_option_left_only_while_the_deadline_is_ahead() -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)

    def clock(hours_left: float, progress: float) -> JobClock:
        return JobClock(now, now, now + timedelta(hours=hours_left), 8 * 3600.0, progress, "on-demand", True)

    assert no_option_left(clock(4, 0.5), running=False)  # 4 h of work + a restart do not fit in 4 h
    assert not no_option_left(clock(4.5, 0.5), running=False)
    assert not no_option_left(clock(4.01, 0.5), running=True)  # running: no restart needed
    assert no_option_left(clock(3.99, 0.5), running=True)
    assert not no_option_left(clock(-1, 0.5), running=False)  # passed: DeadlineMissed's business
    # Completed (nothing left): no restart to pay for, so no page however close the deadline.
    assert not no_option_left(clock(0.1, 1.0), running=False)


def test_the_queues_time_limit_on_an_on_demand_attempt_is_a_capacity_event_not_a_failure() -> None:
    spec = spec_with(ALTERNATIVES)
    terminated = replace(
        _status("failed"),
        reason_class="capacity",
        reason="Terminated by JobStateTimeLimit action due to reason: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
    )

    def step_after(on_demand_attempts: int, deadline_passed: bool = False) -> Any:
        wait = CapacityWait(None, 0, deadline_passed=deadline_passed, on_demand_attempts=on_demand_attempts)
        return next_step(
            spec, terminated, capacity="on-demand", spot_attempts=3, decision=CONTINUE, seed="s", wait=wait
        )

    again = step_after(1)
    assert (again.action, again.next_capacity, again.backoff_seconds > 0) == ("resubmit-on-demand", "on-demand", True)
    assert step_after(spec.retry_max_attempts).finish_reason == "capacity-unavailable"
    assert step_after(1, deadline_passed=True).action == "give-up"
    # An algorithm error on on-demand is still final.
    failed = replace(terminated, reason_class="algorithm")
    step = next_step(spec, failed, capacity="on-demand", spot_attempts=3, decision=CONTINUE, seed="s")
    assert (step.action, step.finish_reason) == ("finish", "failed")


def test_a_training_plans_end_moves_the_job_to_on_demand() -> None:
    spec = spec_with(ALTERNATIVES)
    pending = _status("starting", "Training plan capacity ending")
    for ended, action in ((False, "keep-waiting"), (True, "switch-to-on-demand")):
        wait = CapacityWait("ml.g6.2xlarge", 0, plan_ended=ended)
        step = next_step(
            spec, pending, capacity="training-plan", spot_attempts=3, decision=CONTINUE, seed="s", wait=wait
        )
        assert step.action == action
    assert step.next_capacity == "on-demand"
