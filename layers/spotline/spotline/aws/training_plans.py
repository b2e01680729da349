"""Reading SageMaker training plans (DescribeTrainingPlan, ListTrainingPlans) for the capacity tier
of `spotline.core.training_plans`."""

from __future__ import annotations

from spotline.aws.clients import client, error_code
from spotline.core.errors import ManifestError
from spotline.core.model import JobSpec
from spotline.core.team_policy import TeamPolicy
from spotline.core.training_plans import PlanView, named_plan_problems

NOT_FOUND = {"ResourceNotFound", "ValidationException"}
AUTO = "auto"


def describe_plan(arn: str) -> PlanView | None:
    try:
        answer = client("sagemaker").describe_training_plan(TrainingPlanName=arn.rsplit("/", 1)[-1])
    except Exception as exc:
        if error_code(exc) in NOT_FOUND:
            return None
        raise
    return PlanView.from_api(answer)


def active_plans() -> list[PlanView]:
    """Every Active training plan of the account and region (ListTrainingPlans, all pages)."""
    request = {"Filters": [{"Name": "Status", "Value": "Active"}]}
    plans: list[PlanView] = []
    while True:
        page = client("sagemaker").list_training_plans(**request)
        plans += [PlanView.from_api(summary) for summary in page.get("TrainingPlanSummaries") or []]
        if not page.get("NextToken"):
            return plans
        request["NextToken"] = page["NextToken"]


def candidate_plans(spec: JobSpec, policy: TeamPolicy | None) -> list[PlanView]:
    """The plans the job may fall back onto: the one it names, or with `auto` every Active plan its
    team policy allows (`trainingPlans`)."""
    if spec.training_plan is None:
        return []
    if spec.training_plan != AUTO:
        plan = describe_plan(spec.training_plan)
        return [plan] if plan else []
    if policy is None:
        return []
    return [plan for plan in active_plans() if policy.may_use_plan(spec.team, plan.arn)]


def plan_problems(spec: JobSpec) -> list[ManifestError]:
    """ValidateResources: the plan the manifest names exists, is Scheduled or Active, and reserves
    one of the job's instance types (`auto` is checked when the fallback needs a plan)."""
    if spec.training_plan is None or spec.training_plan == AUTO:
        return []
    return named_plan_problems(spec, describe_plan(spec.training_plan))
