"""SageMaker training plans (reserved capacity) as a capacity tier (pure): which plan a job may fall
back onto before paid on-demand, and why a named one cannot serve it.

What AWS says (SageMaker developer guide, "Training plans utilization for SageMaker training
jobs"): "The training plan must be in the Scheduled or Active status to be used by a training
job"; "When there are 30 minutes remaining in your Reserved Capacity, SageMaker training plans
begin the process of terminating any running instances within that Reserved Capacity". A job
uses a plan with ResourceConfig.TrainingPlanArn and the plan's instance type ("The plan's
instance type must match InstanceType", InstancePreference.TrainingPlanArns).

Plans are regional: a plan's ARN names its region, and its capacity is in one Availability Zone
of it (API reference, ReservedCapacitySummary: "AvailabilityZone: The availability zone for the
reserved capacity"); DescribeTrainingPlan and ListTrainingPlans answer for their endpoint's
region. A run falls back onto a plan only in one of the regions it may use, and the attempt on it
runs there.

A plan is the team's when tagged `spotline:team=<team>`, as its roles and scoring models are: the
team policy's patterns say which plans a team may name, the tag says whose a plan is, so a broad
pattern cannot lend another team's plan. Neither DescribeTrainingPlan nor TrainingPlanSummary
carries tags (botocore's sagemaker model); ListTags reads them ("Returns the tags for the
specified SageMaker resource", SageMaker API reference)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from spotline.core.capacity.lifecycle import NextStep
from spotline.core.common.errors import ManifestError
from spotline.core.regions.regions import region_of_arn
from spotline.core.spec.model import InstanceOption, JobSpec, to_rfc3339

USABLE = frozenset({"Scheduled", "Active"})
TRAINING_JOB = "training-job"
"""The TargetResources value of a plan for training jobs (botocore's sagemaker model, enum
SageMakerResourceName: training-job, hyperpod-cluster, endpoint, studio-apps): "Training plans are
specific to their target resource. A training plan designed for SageMaker training jobs can only be
used to schedule and run training jobs" (DescribeTrainingPlan, TrainingPlanSummary)."""
TERMINATION_NOTICE = timedelta(minutes=30)
"""Instances are terminated from this long before the plan's end."""
PLAN_PATH = "spec.capacity.trainingPlan"
TEAM_TAG = "spotline:team"


@dataclass(frozen=True, slots=True)
class PlanView:
    """One training plan as DescribeTrainingPlan or ListTrainingPlans gives it."""

    arn: str
    name: str
    status: str
    instance_type: str | None
    total_instances: int
    available_instances: int
    start: datetime | None
    end: datetime | None
    target_resources: tuple[str, ...] = (TRAINING_JOB,)
    zone: str | None = None
    """Its reserved capacity's Availability Zone: an attempt of many instances on it runs there."""

    @classmethod
    def from_api(cls, plan: dict[str, Any]) -> PlanView:
        reserved = plan.get("ReservedCapacitySummaries") or []
        return cls(
            arn=str(plan["TrainingPlanArn"]),
            name=str(plan["TrainingPlanName"]),
            status=str(plan["Status"]),
            instance_type=str(reserved[0]["InstanceType"]) if reserved else None,
            total_instances=int(plan.get("TotalInstanceCount") or 0),
            available_instances=int(plan.get("AvailableInstanceCount") or 0),
            start=plan.get("StartTime"),
            end=plan.get("EndTime"),
            target_resources=tuple(str(t) for t in plan.get("TargetResources") or ()),
            zone=str(reserved[0]["AvailabilityZone"]) if reserved and reserved[0].get("AvailabilityZone") else None,
        )

    @property
    def for_training_jobs(self) -> bool:
        """A plan training jobs may run on (its TargetResources include training-job)."""
        return TRAINING_JOB in self.target_resources

    @property
    def region(self) -> str:
        """The region the plan reserves capacity in (its ARN's)."""
        return region_of_arn(self.arn)

    @property
    def usable_until(self) -> datetime | None:
        """When its instances start to be terminated (30 minutes before its end)."""
        return self.end - TERMINATION_NOTICE if self.end else None

    def option_for(self, spec: JobSpec) -> InstanceOption | None:
        """The job's option of the plan's instance type (the primary or an alternative)."""
        return next((o for o in spec.instance_options if o.instance_type == self.instance_type), None)


def named_plan_problems(spec: JobSpec, plan: PlanView | None) -> list[ManifestError]:
    """Why the plan the manifest names cannot serve the job ([] when it can)."""
    if plan is None:
        return [ManifestError(PLAN_PATH, f"training plan {spec.training_plan} does not exist")]
    if not plan.for_training_jobs:
        targets = ", ".join(plan.target_resources) or "none"
        return [
            ManifestError(
                PLAN_PATH,
                f"training plan {plan.name} is for {targets} (TargetResources), not training-job: training jobs "
                "cannot run on it",
            )
        ]
    if plan.status not in USABLE:
        return [ManifestError(PLAN_PATH, f"training plan {plan.name} is {plan.status}: it must be Scheduled or Active")]
    if plan.option_for(spec) is None:
        types = ", ".join(o.instance_type for o in spec.instance_options)
        return [
            ManifestError(
                PLAN_PATH,
                f"training plan {plan.name} reserves {plan.instance_type}, not one of the job's types ({types})",
            )
        ]
    return []


def owner_problems(spec: JobSpec, plan: PlanView, tags: dict[str, str]) -> list[ManifestError]:
    """Why the plan is not the team's ([] when tagged `spotline:team=<team>`): its tag and the owner it names."""
    owner = tags.get(TEAM_TAG)
    if owner == spec.team:
        return []
    found = f"it is tagged {TEAM_TAG}={owner}: team {owner}'s" if owner else "it has no such tag"
    return [
        ManifestError(
            PLAN_PATH,
            f"training plan {plan.name} is not tagged {TEAM_TAG}={spec.team} ({found}): "
            "a team uses only its own training plans",
        )
    ]


def fallback_plan(spec: JobSpec, plans: list[PlanView], now: datetime, *, min_seconds: float) -> PlanView | None:
    """The plan to fall back onto now: for training jobs, Active, of one of the job's types, with free
    instances for it, and at least `min_seconds` before its instances are terminated; the one that lasts longest."""
    usable = [
        plan
        for plan in plans
        if plan.status == "Active"
        and plan.for_training_jobs
        and (option := plan.option_for(spec)) is not None
        and plan.available_instances >= option.instance_count
        and plan.usable_until is not None
        and (plan.usable_until - now).total_seconds() >= min_seconds
    ]
    return max(usable, key=lambda plan: (plan.usable_until, plan.name), default=None)


def plan_step(step: NextStep, plan: PlanView) -> NextStep:
    """The move to on-demand, onto the training plan instead: reserved capacity, paid already."""
    until = to_rfc3339(plan.usable_until) if plan.usable_until else "?"
    return NextStep(
        "switch-to-training-plan",
        f"{step.explanation}; onto training plan {plan.name} ({plan.instance_type}, reserved until {until}) "
        "before paid on-demand",
        next_capacity="training-plan",
        next_instance_type=plan.instance_type,
    )


def plan_record(plan: PlanView) -> dict[str, Any]:
    return {
        "arn": plan.arn,
        "name": plan.name,
        "region": plan.region,
        "instanceType": plan.instance_type,
        "usableUntil": to_rfc3339(plan.usable_until) if plan.usable_until else None,
        "zone": plan.zone,
    }
