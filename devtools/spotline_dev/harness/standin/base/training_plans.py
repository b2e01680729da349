"""SageMaker training plans: reserved capacity of one instance type for a fixed window
(DescribeTrainingPlan, ListTrainingPlans), and what a training job on one may do.

As the SageMaker developer guide documents them ("Training plans utilization for SageMaker training
jobs"), and as the stand-in plays them:

- A plan is Scheduled before its start, Active during its window, Expired after (DescribeTrainingPlan
  Status). The stand-in creates the plans a scenario names (`trainingPlans:`), already paid for.
- "The training plan must be in the Scheduled or Active status to be used by a training job", and "The
  plan's instance type must match InstanceType" (InstancePreference.TrainingPlanArns): CreateTrainingJob
  refuses otherwise (`refusal`).
- A job waits for the plan's capacity ("the job waits until it becomes available ... or the job has been
  Pending for capacity for 2 days, whichever comes first ... it is terminated with an
  InsufficientCapacityError"); "When there are 30 minutes remaining in your Reserved Capacity, SageMaker
  training plans begin the process of terminating any running instances": the job goes back to Pending
  ("Between capacity reservations: Jobs temporarily back to Pending status", StoppingCondition.
  MaxPendingTimeInSeconds). `window` gives both edges to the job's timeline (training_timeline).
- A plan keeps the tags it was created with (CreateTrainingPlan Tags: "An array of key-value pairs to
  apply to this training plan") and those AddTags adds; ListTags answers them for the plan's ARN.

Partial: a plan's instances are not shared out between jobs when they start (each job sees the whole
plan); AvailableInstanceCount and InUseInstanceCount do count the jobs training on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from spotline_dev.harness.standin.base.http_answers import ApiError

TERMINATION_NOTICE_SECONDS = 1800.0


@dataclass(frozen=True)
class ReservedPlan:
    """A scenario's training plan: `instances` of `instance_type` from `start` to `end`."""

    name: str
    instance_type: str
    instances: int
    start: datetime
    end: datetime
    target_resources: tuple[str, ...] = ("training-job",)
    """DescribeTrainingPlan TargetResources (botocore's enum SageMakerResourceName): "Training plans
    are specific to their target resource" (API reference, TrainingPlanSummary)."""
    tags: dict[str, str] = field(default_factory=dict, hash=False)
    """The Tags given at CreateTrainingPlan (a scenario's `tags:`), e.g. {"spotline:team": "search-ranking"}."""
    zone: str | None = None
    """Its reserved capacity's zone: "AvailabilityZone: The availability zone for the reserved
    capacity" (API reference, ReservedCapacitySummary); None: zone a of the region."""


class TrainingPlans:
    def __init__(
        self,
        plans: list[ReservedPlan],
        *,
        account: str,
        region: str,
        now: Callable[[], float],
        in_use: Callable[[str], int],
    ) -> None:
        self.plans = {plan.name: plan for plan in plans}
        self.tags = {plan.name: dict(plan.tags) for plan in plans}  # as created, then as AddTags changed them
        self.account, self.region, self._now, self._in_use = account, region, now, in_use

    def arn(self, plan: ReservedPlan) -> str:
        return f"arn:aws:sagemaker:{self.region}:{self.account}:training-plan/{plan.name}"

    def status(self, plan: ReservedPlan, t: float) -> str:
        if t < plan.start.timestamp():
            return "Scheduled"
        return "Active" if t < plan.end.timestamp() else "Expired"

    def by_arn(self, arn: str) -> ReservedPlan | None:
        plan = self.plans.get(arn.rsplit("/", 1)[-1])
        return plan if plan is not None and self.arn(plan) == arn else None

    def refusal(self, arn: str, instance_type: str, t: float) -> str | None:
        """Why CreateTrainingJob refuses a job on the plan `arn` at `t` (None: it may use it)."""
        plan = self.by_arn(arn)
        if plan is None:
            return f"ResourceConfig.TrainingPlanArn: training plan {arn} does not exist"
        if "training-job" not in plan.target_resources:
            # AWS: sagemaker TrainingPlanSummary.TargetResources: "A training plan designed for SageMaker
            # training jobs can only be used to schedule and run training jobs."
            # Stand-in: the message's wording.
            return f"ResourceConfig.TrainingPlanArn: training plan {plan.name} is not a plan for training jobs"
        status = self.status(plan, t)
        if status not in ("Scheduled", "Active"):
            return (
                f"ResourceConfig.TrainingPlanArn: training plan {plan.name} is {status}; it must be Scheduled or Active"
            )
        if instance_type != plan.instance_type:
            return (
                f"ResourceConfig.InstanceType {instance_type} does not match training plan {plan.name}'s "
                f"instance type {plan.instance_type}"
            )
        return None

    def window(self, arn: str) -> tuple[float, float]:
        """When a job on the plan may hold instances: from the plan's start until 30 minutes before its end."""
        plan = self.by_arn(arn)
        assert plan is not None
        return plan.start.timestamp(), plan.end.timestamp() - TERMINATION_NOTICE_SECONDS

    # --- SageMaker operations ---------------------------------------------------------------

    def serves(self, body: dict[str, Any]) -> bool:
        return str(body.get("TrainingPlanName") or "") in self.plans

    def describe_training_plan(self, body: dict[str, Any]) -> dict[str, Any]:
        plan = self.plans.get(str(body["TrainingPlanName"]))
        if plan is None:
            # AWS: sagemaker ResourceNotFound: "Resource being access is not found."
            raise ApiError("ResourceNotFound", f"Training plan {body['TrainingPlanName']} does not exist")
        return self._summary(plan)

    def list_training_plans(self, body: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        wanted = {f["Value"] for f in body.get("Filters") or [] if f.get("Name") == "Status"}
        plans = [self._summary(p) for p in self.plans.values() if not wanted or self.status(p, now) in wanted]
        return {"TrainingPlanSummaries": plans}

    def serves_tags(self, body: dict[str, Any]) -> bool:
        """A tagging call (ListTags, AddTags) on a training plan's ARN: ours, even when there is no such plan."""
        return ":training-plan/" in str(body.get("ResourceArn") or "")

    def list_tags(self, body: dict[str, Any]) -> dict[str, Any]:
        # AWS: sagemaker ListTags: "Returns the tags for the specified SageMaker resource."
        # Stand-in: always one page (MaxResults is at least 50, botocore's ListTagsMaxResults; a plan here has fewer).
        return {"Tags": [{"Key": k, "Value": v} for k, v in self._tags_of(str(body["ResourceArn"])).items()]}

    def add_tags(self, body: dict[str, Any]) -> dict[str, Any]:
        # AWS: sagemaker AddTags: "Adds or overwrites one or more tags for the specified SageMaker resource."
        tags = self._tags_of(str(body["ResourceArn"]))
        tags.update({t["Key"]: t["Value"] for t in body.get("Tags") or []})
        # AWS: sagemaker AddTagsOutput.Tags: "A list of tags associated with the SageMaker resource."
        return {"Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}

    def _tags_of(self, arn: str) -> dict[str, str]:
        plan = self.by_arn(arn)
        if plan is None:
            # Stand-in: the API reference documents no error for ListTags or AddTags on a resource
            # that is not there; SageMaker answers ValidationException ("An error occurred
            # (ValidationException) when calling the ListTags operation", aws/amazon-sagemaker-feedback#108).
            # A plan ARN of another region or account at this endpoint is not one of its plans either.
            # The message's wording is the stand-in's.
            raise ApiError("ValidationException", f"Could not find training-plan {arn}")
        return self.tags[plan.name]

    def _summary(self, plan: ReservedPlan) -> dict[str, Any]:
        now = self._now()
        status = self.status(plan, now)
        in_use = min(plan.instances, self._in_use(self.arn(plan))) if status == "Active" else 0
        minutes = int((plan.end - plan.start).total_seconds() // 60)
        return {
            "TrainingPlanArn": self.arn(plan),
            "TrainingPlanName": plan.name,
            "Status": status,
            "DurationHours": minutes // 60,
            "DurationMinutes": minutes % 60,
            "StartTime": plan.start.timestamp(),
            "EndTime": plan.end.timestamp(),
            "TotalInstanceCount": plan.instances,
            "AvailableInstanceCount": plan.instances - in_use if status == "Active" else 0,
            "InUseInstanceCount": in_use,
            "TargetResources": list(plan.target_resources),
            "ReservedCapacitySummaries": [
                {
                    "ReservedCapacityArn": self.arn(plan).replace(":training-plan/", ":reserved-capacity/"),
                    "InstanceType": plan.instance_type,
                    "TotalInstanceCount": plan.instances,
                    "AvailabilityZone": plan.zone or f"{self.region}a",
                    "Status": status,
                    "StartTime": plan.start.timestamp(),
                    "EndTime": plan.end.timestamp(),
                }
            ],
        }
