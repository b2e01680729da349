"""Training plans as a capacity tier (pure): which plan a job may fall back onto, why a named one
cannot serve it, and who may use which (the team policy's trainingPlans)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from spotline.core.capacity.training_plans import PlanView, fallback_plan, named_plan_problems
from spotline.core.spec.model import InstanceOption
from spotline.core.teams.team_policy import TeamPolicy
from tests.layer.core.capacity.test_alternatives import spec_with

NOW = datetime(2026, 12, 1, 9, tzinfo=UTC)
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"


def plan(name: str = "p4d", **changes: object) -> PlanView:
    base = PlanView(
        arn=ARN + name,
        name=name,
        status="Active",
        instance_type="ml.g6.2xlarge",
        total_instances=2,
        available_instances=2,
        start=NOW - timedelta(hours=1),
        end=NOW + timedelta(hours=10),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


SPEC = spec_with([{"instanceType": "ml.g6.2xlarge"}])


def test_a_named_plan_must_exist_be_usable_and_reserve_one_of_the_jobs_types() -> None:
    named = replace(SPEC, training_plan=ARN + "p4d")
    assert named_plan_problems(named, plan()) == []
    assert named_plan_problems(named, plan(status="Scheduled")) == []
    (missing,) = named_plan_problems(named, None)
    assert (missing.path, missing.message) == ("spec.capacity.trainingPlan", f"training plan {ARN}p4d does not exist")
    (expired,) = named_plan_problems(named, plan(status="Expired"))
    assert expired.message == "training plan p4d is Expired: it must be Scheduled or Active"
    (other,) = named_plan_problems(named, plan(instance_type="ml.p5.48xlarge"))
    assert other.message.startswith("training plan p4d reserves ml.p5.48xlarge, not one of the job's types")


@pytest.mark.parametrize(
    ("changes", "usable"),
    [
        ({}, True),
        ({"status": "Scheduled"}, False),  # the deadline is at risk now: only capacity there now helps
        ({"available_instances": 0}, False),
        ({"instance_type": "ml.p5.48xlarge"}, False),
        ({"end": NOW + timedelta(hours=6, minutes=29)}, False),  # terminating 30 min before its end
        ({"end": NOW + timedelta(hours=6, minutes=30)}, True),
    ],
)
def test_a_fallback_plan_is_active_free_of_the_jobs_type_and_lasts_for_the_work(
    changes: dict[str, object], usable: bool
) -> None:
    chosen = fallback_plan(SPEC, [plan(**changes)], NOW, min_seconds=6 * 3600)
    assert (chosen is not None) is usable
    if chosen:
        assert chosen.option_for(SPEC) == InstanceOption("ml.g6.2xlarge", 1)


def test_the_longest_lasting_usable_plan_is_chosen() -> None:
    short, long = plan("short", end=NOW + timedelta(hours=8)), plan("long", end=NOW + timedelta(hours=20))
    assert fallback_plan(SPEC, [short, long], NOW, min_seconds=3600) == long


def test_the_team_policy_says_which_plans_a_team_may_use() -> None:
    def policy(patterns: list[str]) -> TeamPolicy:
        entry = {"instanceFamilies": ["g5", "g6"], "trainingPlans": patterns}
        return TeamPolicy.from_json(json.dumps({"teams": {"search-ranking": entry}}))

    def plan_errors(patterns: list[str], named: str) -> list[str]:
        spec = replace(SPEC, training_plan=named)
        return [e.message for e in policy(patterns).check(spec) if e.path == "spec.capacity.trainingPlan"]

    assert plan_errors([ARN + "search-*"], ARN + "search-p4d") == []
    assert plan_errors([ARN + "search-*"], "auto") == []
    assert plan_errors([], "auto") == ["team search-ranking may use no training plans (its team policy lists none)"]
    assert plan_errors([ARN + "search-*"], ARN + "vision-p4d")[0].startswith(f"{ARN}vision-p4d is not a training plan")
    assert policy([ARN + "search-*"]).may_use_plan("search-ranking", ARN + "search-x")
    assert not policy([ARN + "search-*"]).may_use_plan("vision", ARN + "search-x")
