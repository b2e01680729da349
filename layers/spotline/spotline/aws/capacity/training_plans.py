"""Reading SageMaker training plans (DescribeTrainingPlan, ListTrainingPlans) for the capacity tier
of `spotline.core.capacity.training_plans`.

Plans are regional: a named plan is read in the region its ARN names, `auto` lists the plans of
each region the run may use, each with a client of that region (never the region of the attempt
being checked). A plan is the team's only when tagged `spotline:team=<team>` (ListTags, read in
the plan's region too): `auto` takes only the team's plans among those its patterns allow, and a
named plan of another team, or of none, is refused."""

from __future__ import annotations

from collections.abc import Sequence

from spotline.aws.common.clients import client, error_code
from spotline.aws.teams.sagemaker_tags import sagemaker_tags
from spotline.core.capacity.training_plans import PLAN_PATH, PlanView, named_plan_problems, owner_problems
from spotline.core.common.errors import ManifestError
from spotline.core.regions.regions import region_of_arn
from spotline.core.spec.model import JobSpec
from spotline.core.teams.team_policy import TeamPolicy

NOT_FOUND = {"ResourceNotFound", "ValidationException"}
AUTO = "auto"


def describe_plan(arn: str) -> PlanView | None:
    """The plan `arn` names, read in the region the ARN names."""
    try:
        answer = client("sagemaker", region_of_arn(arn) or None).describe_training_plan(
            TrainingPlanName=arn.rsplit("/", 1)[-1]
        )
    except Exception as exc:
        if error_code(exc) in NOT_FOUND:
            return None
        raise
    return PlanView.from_api(answer)


def active_plans(region: str) -> list[PlanView]:
    """Every Active training plan of the account in `region` (ListTrainingPlans, all pages)."""
    request = {"Filters": [{"Name": "Status", "Value": "Active"}]}
    plans: list[PlanView] = []
    while True:
        page = client("sagemaker", region).list_training_plans(**request)
        plans += [PlanView.from_api(summary) for summary in page.get("TrainingPlanSummaries") or []]
        if not page.get("NextToken"):
            return plans
        request["NextToken"] = page["NextToken"]


def teams_plan(spec: JobSpec, plan: PlanView) -> bool:
    """The plan is tagged `spotline:team=<the job's team>` (False when it is gone since it was listed:
    ListTags answers ValidationException for a resource that is not there)."""
    try:
        tags = sagemaker_tags(plan.arn)
    except Exception as exc:
        if error_code(exc) in NOT_FOUND:
            return False
        raise
    return not owner_problems(spec, plan, tags)


def candidate_plans(spec: JobSpec, policy: TeamPolicy | None, regions: Sequence[str]) -> list[PlanView]:
    """The plans the job may fall back onto, in the run's `regions` (`$.resources.regions.allowed`):
    the one it names, or with `auto` every Active plan there its team policy allows (`trainingPlans`);
    either way only the team's (tagged for it: a tag changed since ValidateResources counts too)."""
    if spec.training_plan is None:
        return []
    if spec.training_plan != AUTO:
        if region_of_arn(spec.training_plan) not in regions:
            return []  # its region was left out of the run's (ValidateResources said why)
        plan = describe_plan(spec.training_plan)
        return [plan] if plan and teams_plan(spec, plan) else []
    if policy is None:
        return []
    allowed = [plan for region in regions for plan in active_plans(region) if policy.may_use_plan(spec.team, plan.arn)]
    return [plan for plan in allowed if teams_plan(spec, plan)]  # tags read only for plans the patterns allow


def plan_problems(spec: JobSpec, home: str) -> list[ManifestError]:
    """ValidateResources: the plan the manifest names is in a region the run may use (home, or one of
    `spec.capacity.regions`), exists, is the team's (tagged `spotline:team=<team>`), is Scheduled or
    Active, and reserves one of the job's instance types (`auto` is checked when the fallback needs a plan)."""
    if spec.training_plan is None or spec.training_plan == AUTO:
        return []
    region = region_of_arn(spec.training_plan)
    regions = spec.regions or (home,)
    if region not in regions:
        return [
            ManifestError(
                PLAN_PATH,
                f"training plan {spec.training_plan.rsplit('/', 1)[-1]} is in {region}: a plan serves training jobs "
                f"of its own region only, and the run may use {', '.join(regions)} (spec.capacity.regions)",
            )
        ]
    plan = describe_plan(spec.training_plan)
    if plan is not None and (not_the_teams := owner_problems(spec, plan, sagemaker_tags(plan.arn))):
        return not_the_teams
    return named_plan_problems(spec, plan)
