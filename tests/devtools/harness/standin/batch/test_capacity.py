"""The queue's capacity limit (the service environment's maxCapacity in instances): jobs that do
not fit wait RUNNABLE, and are admitted by scheduling priority, then submission, as capacity frees."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from devtools.harness.standin.fixture_rig import RigFactory, run_to_end, training_payload
from spotline.core.teams.quota_shares import parse_capacity
from spotline_dev.harness.local.custom_resources import with_parameters
from spotline_dev.harness.local.template import Resolver, queue_capacity, resources_of_type
from spotline_dev.harness.standin import TrainingBehaviour

HOUR = 3600.0
START = 120.0  # submission to SCHEDULED with the default weather (queue delay)


def _payload(name: str, instances: int = 1) -> dict[str, Any]:
    """A job of its own: its own checkpoint prefix (a shared one would resume another's progress)."""
    payload = training_payload(name, checkpoint=f"s3://checkpoints/{name}/")
    payload["ResourceConfig"]["InstanceCount"] = instances
    return payload


def test_jobs_beyond_the_capacity_wait_runnable_and_start_when_capacity_frees(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=HOUR), capacity=2)
    first, second, third = (rig.submit(_payload(f"job-{n}"), name=f"job-{n}") for n in range(3))

    assert [rig.status_at(START + 600, j)[0] for j in (first, second, third)] == ["RUNNING", "RUNNING", "RUNNABLE"]
    assert "attempts" not in rig.batch_job(third) or rig.batch_job(third)["attempts"] == []
    end = run_to_end(rig, first)
    assert rig.status_at(end + 60, third)[0] in ("SCHEDULED", "STARTING", "RUNNING")
    waited = (rig.batch_job(third)["scheduledAt"] - rig.batch_job(third)["createdAt"]) / 1000
    assert waited > HOUR  # the queue wait is real: an hour and more behind the first two
    run_to_end(rig, third)
    assert rig.batch_job(third)["status"] == "SUCCEEDED"


POLICY = "arn:aws:batch:us-east-1:123456789012:scheduling-policy/team-fair-share"


def test_waiting_jobs_are_admitted_by_priority_then_submission(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=HOUR), capacity=1, scheduling_policy_arn=POLICY)
    running = rig.submit(_payload("running"), name="running", shareIdentifier="a", schedulingPriority=1)
    low = rig.submit(_payload("low"), name="low", shareIdentifier="a", schedulingPriority=1)
    urgent = rig.submit(_payload("urgent"), name="urgent", shareIdentifier="a", schedulingPriority=900)
    also_low = rig.submit(_payload("also-low"), name="also-low", shareIdentifier="a", schedulingPriority=1)

    end = run_to_end(rig, running)
    statuses = [rig.status_at(end + 60, j)[0] for j in (urgent, low, also_low)]
    assert statuses[0] != "RUNNABLE" and statuses[1:] == ["RUNNABLE", "RUNNABLE"]  # the urgent one first
    end = run_to_end(rig, urgent)
    assert [rig.status_at(end + 60, j)[0] != "RUNNABLE" for j in (low, also_low)] == [True, False]  # then FIFO
    run_to_end(rig, also_low)
    scheduled = [rig.batch_job(j)["scheduledAt"] for j in (urgent, low, also_low)]
    assert scheduled == sorted(scheduled)


def test_a_job_that_needs_more_instances_holds_back_those_behind_it(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=HOUR), capacity=3)
    small = rig.submit(_payload("small", 2), name="small")
    big = rig.submit(_payload("big", 3), name="big")
    tiny = rig.submit(_payload("tiny", 1), name="tiny")

    assert [rig.status_at(START + 600, j)[0] for j in (small, big, tiny)] == ["RUNNING", "RUNNABLE", "RUNNABLE"]
    end = run_to_end(rig, small)
    assert rig.status_at(end + 60, big)[0] != "RUNNABLE"
    assert rig.status_at(end + 60, tiny)[0] == "RUNNABLE"  # 3 of 3 instances are the big job's
    run_to_end(rig, tiny)
    assert rig.batch_job(tiny)["scheduledAt"] >= rig.batch_job(big)["stoppedAt"]


def test_a_waiting_job_can_be_terminated(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=HOUR), capacity=1)
    rig.submit(_payload("running"), name="running")
    waiting = rig.submit(_payload("waiting"), name="waiting")
    rig.clock.at(START + 600)
    assert rig.batch_job(waiting)["status"] == "RUNNABLE"

    rig.batch.terminate_service_job(jobId=waiting, reason="on-call: not needed")
    job = rig.batch_job(waiting)
    assert (job["status"], job["statusReason"]) == ("FAILED", "Terminated: on-call: not needed")


def test_without_a_limit_every_job_starts_at_once(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=HOUR))
    jobs = [rig.submit(_payload(f"job-{n}", 4), name=f"job-{n}") for n in range(5)]
    assert {rig.status_at(START + 600, j)[0] for j in jobs} == {"RUNNING"}


def test_the_local_stack_gives_its_queue_the_templates_capacity(stack: Any) -> None:
    """TrainingCapacity (default ml.g5.2xlarge=8) -> the service environment's CapacityLimits, one
    per instance type through the template's five slots -> the queue."""
    template = stack.template
    (queue,) = resources_of_type(template, "AWS::Batch::JobQueue").values()
    resolver = Resolver(template, lambda logical, attribute: logical, {})
    default = template["Parameters"]["TrainingCapacity"]["Default"]
    assert queue_capacity(template, queue, resolver) == parse_capacity(default) == {"ml.g5.2xlarge": 8}
    assert [q.capacity for q in stack.standin._queues.queues.values()] == [{"ml.g5.2xlarge": 8}]
    for given in (
        "ml.g5.2xlarge=8,ml.p4d.24xlarge=1",
        "ml.g5.2xlarge=8,ml.g5.12xlarge=2,ml.g6.2xlarge=4,ml.p4d.24xlarge=1,ml.p5.48xlarge=1",
    ):
        local = with_parameters(template, {"TrainingCapacity": given})
        assert queue_capacity(local, queue, Resolver(local, lambda logical, attribute: logical, {})) == (
            parse_capacity(given)
        )


def test_without_a_scheduling_policy_priority_changes_nothing(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=HOUR), capacity=1)
    rig.submit(_payload("running"), name="running")
    first = rig.submit(_payload("first"), name="first", schedulingPriority=1)
    second = rig.submit(_payload("second"), name="second", schedulingPriority=900)
    run_to_end(rig, second)
    assert rig.batch_job(first)["scheduledAt"] < rig.batch_job(second)["scheduledAt"]


def test_update_service_job_moves_a_waiting_job_ahead(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=HOUR), capacity=1, scheduling_policy_arn=POLICY)
    running = rig.submit(_payload("running"), name="running", shareIdentifier="a", schedulingPriority=1)
    early = rig.submit(_payload("early"), name="early", shareIdentifier="a", schedulingPriority=1)
    late = rig.submit(_payload("late"), name="late", shareIdentifier="a", schedulingPriority=1)
    rig.clock.at(START + 600)

    answer = rig.batch.update_service_job(jobId=late, schedulingPriority=500)
    assert (answer["jobId"], answer["jobName"]) == (late, "late")
    assert rig.batch_job(late)["schedulingPriority"] == 500
    end = run_to_end(rig, running)
    assert rig.status_at(end + 60, late)[0] != "RUNNABLE" and rig.status_at(end + 60, early)[0] == "RUNNABLE"

    with pytest.raises(ClientError, match="between 0 and 9999"):
        rig.batch.update_service_job(jobId=early, schedulingPriority=10_000)
    run_to_end(rig, running)
    with pytest.raises(ClientError, match="has ended"):
        rig.batch.update_service_job(jobId=running, schedulingPriority=2)
