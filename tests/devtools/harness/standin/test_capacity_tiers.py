"""The stand-in's capacity per instance type and tier (issue 29): InstancePreferences (first type
with capacity, SelectedInstanceType, MaxPendingTimeInSeconds), training plans (Describe/List, the
window, the 30-minute termination, the refusals), and the queue's time limit on jobs short of
capacity (jobStateTimeLimitActions)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from devtools.harness.standin.fixture_rig import PROJECT_RETRY, T0, RigFactory, run_to_end, training_payload
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour
from spotline_dev.harness.standin.base.training_plans import ReservedPlan

DAY = 86_400


def on(seconds: float) -> datetime:
    """The rig's moment `seconds` after its start."""
    return T0 + timedelta(seconds=seconds)


def preferences_payload(*types: str, pending: int | None = None) -> dict[str, Any]:
    payload = training_payload(spot=False)
    resources = payload["ResourceConfig"]
    resources.pop("InstanceType"), resources.pop("InstanceCount")
    resources["InstancePreferences"] = [{"InstanceType": t, "InstanceCount": 1} for t in types]
    if pending is not None:
        payload["StoppingCondition"]["MaxPendingTimeInSeconds"] = pending
    return payload


def short_of(instance_type: str, until: float) -> SpotWeather:
    weather = SpotWeather()
    weather.instance_types[instance_type] = SpotWeather(on_demand_gaps=[(on(0), on(until))])
    return weather


def test_sagemaker_selects_the_first_type_with_on_demand_capacity(make_rig: RigFactory) -> None:
    rig = make_rig(short_of("ml.g5.2xlarge", DAY))
    job_id = rig.submit(preferences_payload("ml.g5.2xlarge", "ml.g6.2xlarge"), retryStrategy=PROJECT_RETRY)
    assert run_to_end(rig, job_id, step=600) > 0
    described = rig.training(rig.training_name(1, job_id))["ResourceConfig"]
    assert (described["SelectedInstanceType"], described["SelectedInstanceCount"]) == ("ml.g6.2xlarge", 1)
    assert rig.batch_job(job_id)["status"] == "SUCCEEDED"


def test_a_job_pending_past_max_pending_time_fails_for_capacity_and_batch_requeues_it(make_rig: RigFactory) -> None:
    rig = make_rig(short_of("ml.g5.2xlarge", 3 * 3600))
    job_id = rig.submit(preferences_payload("ml.g5.2xlarge", pending=1800), retryStrategy=PROJECT_RETRY)
    rig.clock.at(30 + 1800 + 1)
    first = rig.training(rig.training_name(1, job_id))
    assert (first["TrainingJobStatus"], first["FailureReason"][:13]) == ("Failed", "CapacityError")
    assert "SelectedInstanceType" not in first["ResourceConfig"]  # never selected: no capacity
    job = rig.batch_job(job_id)
    assert (job["status"], job["statusReason"][:39]) == ("RUNNABLE", "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")
    assert run_to_end(rig, job_id, step=600) > 0
    assert rig.batch_job(job_id)["status"] == "SUCCEEDED"  # capacity came back at 3 h


@pytest.mark.parametrize(
    ("preferences", "words"),
    [
        ([{"InstanceType": "ml.g5.2xlarge", "InstanceCount": 1}] * 2, "can appear only once"),
        ([{"InstanceType": "ml.g5.2xlarge", "InstanceCount": 1}, {"InstanceType": "ml.g6.2xlarge"}], "every pref"),
    ],
)
def test_a_malformed_preference_list_is_refused(make_rig: RigFactory, preferences: list[Any], words: str) -> None:
    rig = make_rig()
    payload = preferences_payload("ml.g5.2xlarge")
    payload["ResourceConfig"]["InstancePreferences"] = preferences
    job_id = rig.submit(payload, retryStrategy=PROJECT_RETRY)
    assert run_to_end(rig, job_id, step=60) >= 0
    job = rig.batch_job(job_id)
    assert job["status"] == "FAILED" and words in job["statusReason"], job["statusReason"]


PLAN = ReservedPlan("p4d-week", "ml.p4d.24xlarge", 2, on(3600), on(3600 + 6 * 3600))


def plan_payload(instance_type: str = "ml.p4d.24xlarge", plan: str = "p4d-week") -> dict[str, Any]:
    payload = training_payload(spot=False)
    payload["ResourceConfig"] |= {
        "InstanceType": instance_type,
        "TrainingPlanArn": f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{plan}",
    }
    return payload


def test_training_plans_are_described_and_listed_as_sagemaker_does(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(training_plans=[PLAN]))
    rig.clock.at(10)
    described = rig.sagemaker.describe_training_plan(TrainingPlanName="p4d-week")
    assert (described["Status"], described["TotalInstanceCount"], described["AvailableInstanceCount"]) == (
        "Scheduled",
        2,
        0,
    )
    assert described["ReservedCapacitySummaries"][0]["InstanceType"] == "ml.p4d.24xlarge"
    assert (
        rig.sagemaker.list_training_plans(Filters=[{"Name": "Status", "Value": "Active"}])["TrainingPlanSummaries"]
        == []
    )
    rig.clock.at(3600 + 60)
    assert rig.sagemaker.list_training_plans()["TrainingPlanSummaries"][0]["Status"] == "Active"
    with pytest.raises(ClientError) as missing:
        rig.sagemaker.describe_training_plan(TrainingPlanName="nowhere")
    assert missing.value.response["Error"]["Code"] == "ResourceNotFound"


def test_a_plan_keeps_the_tags_it_was_created_with_and_those_added_and_list_tags_answers_them(
    make_rig: RigFactory,
) -> None:
    tagged = replace(PLAN, tags={"spotline:team": "search-ranking"})
    rig = make_rig(SpotWeather(training_plans=[tagged, replace(PLAN, name="bare")]))
    arn = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"
    assert rig.sagemaker.list_tags(ResourceArn=arn + "p4d-week")["Tags"] == [
        {"Key": "spotline:team", "Value": "search-ranking"}
    ]
    assert rig.sagemaker.list_tags(ResourceArn=arn + "bare")["Tags"] == []
    rig.sagemaker.add_tags(ResourceArn=arn + "bare", Tags=[{"Key": "spotline:team", "Value": "recsys"}])
    rig.sagemaker.add_tags(ResourceArn=arn + "bare", Tags=[{"Key": "spotline:team", "Value": "search-ranking"}])
    assert rig.sagemaker.list_tags(ResourceArn=arn + "bare")["Tags"] == [
        {"Key": "spotline:team", "Value": "search-ranking"}  # AddTags "adds or overwrites"
    ]


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sagemaker:us-east-1:123456789012:training-plan/nowhere",
        "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p4d-week",  # another region's, at this endpoint
    ],
)
def test_list_tags_of_a_plan_that_is_not_there_is_a_validation_exception(make_rig: RigFactory, arn: str) -> None:
    rig = make_rig(SpotWeather(training_plans=[PLAN]))
    with pytest.raises(ClientError) as missing:
        rig.sagemaker.list_tags(ResourceArn=arn)
    assert missing.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(ClientError) as untaggable:
        rig.sagemaker.add_tags(ResourceArn=arn, Tags=[{"Key": "spotline:team", "Value": "search-ranking"}])
    assert untaggable.value.response["Error"]["Code"] == "ValidationException"


def test_a_job_on_a_plan_waits_for_its_start_and_loses_its_instances_30_minutes_before_its_end(
    make_rig: RigFactory,
) -> None:
    rig = make_rig(SpotWeather(training_plans=[PLAN]), TrainingBehaviour(duration=8 * 3600))
    job_id = rig.submit(plan_payload(), retryStrategy=PROJECT_RETRY)
    rig.clock.at(1800)
    name = rig.training_name(1, job_id)
    assert rig.training(name)["SecondaryStatus"] == "Starting"  # the plan is Scheduled until 1 h
    rig.clock.at(3600 + 6 * 3600 - 1800 + 60)  # past the plan's end minus 30 minutes
    described = rig.training(name)
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("InProgress", "Pending")
    assert rig.sagemaker.describe_training_plan(TrainingPlanName="p4d-week")["InUseInstanceCount"] == 0
    rig.clock.at(3600 + 6 * 3600 - 1800 + 2 * DAY + 60)  # pending for the plan's capacity for 2 days
    described = rig.training(name)
    assert (described["TrainingJobStatus"], described["FailureReason"][:25]) == (
        "Failed",
        "InsufficientCapacityError",
    )


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        (plan_payload("ml.p5.48xlarge"), "does not match training plan p4d-week's instance type ml.p4d.24xlarge"),
        (plan_payload(plan="elsewhere"), "training-plan/elsewhere does not exist"),
        (plan_payload(plan="p4d-pod"), "training plan p4d-pod is not a plan for training jobs"),
    ],
)
def test_a_job_the_plan_cannot_serve_is_refused(make_rig: RigFactory, payload: dict[str, Any], words: str) -> None:
    pod = replace(PLAN, name="p4d-pod", target_resources=("hyperpod-cluster",))
    rig = make_rig(SpotWeather(training_plans=[PLAN, pod]))
    job_id = rig.submit(payload, retryStrategy=PROJECT_RETRY)
    run_to_end(rig, job_id, step=60)
    job = rig.batch_job(job_id)
    assert job["status"] == "FAILED" and words in job["statusReason"], job["statusReason"]


def test_the_queue_terminates_a_job_short_of_capacity_past_its_time_limit(make_rig: RigFactory) -> None:
    limit = [
        {
            "reason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
            "state": "RUNNABLE",
            "maxTimeSeconds": 3600,
            "action": "TERMINATE",
        }
    ]
    rig = make_rig(short_of("ml.g5.2xlarge", DAY), time_limits=limit)
    assert rig.batch.describe_job_queues(jobQueues=[rig.queue])["jobQueues"][0]["jobStateTimeLimitActions"] == limit
    job_id = rig.submit(preferences_payload("ml.g5.2xlarge", pending=1800), retryStrategy=PROJECT_RETRY)
    # Attempts of 1,800 s pending, then 30 s RUNNABLE each: 3,600 s short of capacity in the third.
    rig.clock.at(30 + 2 * 1830 - 60)
    assert rig.batch_job(job_id)["status"] in ("RUNNABLE", "SCHEDULED")
    rig.clock.at(30 + 2 * 1830 + 60)
    job = rig.batch_job(job_id)
    assert (job["status"], job["statusReason"]) == (
        "FAILED",
        "Terminated by JobStateTimeLimit action due to reason: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [({"action": "CANCEL"}, "only TERMINATE"), ({"maxTimeSeconds": 300}, "600 to 86,400"), ({"reason": "X"}, "X")],
)
def test_a_time_limit_batch_refuses_is_refused(make_rig: RigFactory, change: dict[str, Any], words: str) -> None:
    action = {
        "reason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
        "state": "RUNNABLE",
        "maxTimeSeconds": 3600,
        "action": "TERMINATE",
    } | change
    with pytest.raises(Exception, match=words):
        make_rig(time_limits=[action])
