"""Training plans across regions, on a local stack with a peer region (us-west-2): a plan is read
in the region its ARN names, `auto` lists each of the run's regions, and an attempt on a plan goes
to the plan's region, whatever region the attempt being checked runs in. A plan is the team's only
when tagged spotline:team=<team> (issue 45): `auto` takes no other plan, whatever its patterns match."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest
from state_samples import PLAN, status_state, training_state

from conftest import NOW, example_spec, team_policy_for
from spotline.aws.capacity.training_plans import candidate_plans, plan_problems, teams_plan
from spotline.aws.common.clients import in_region
from spotline.aws.regions.regions import place_attempt
from spotline.core.capacity.training_plans import PLAN_PATH, fallback_plan
from spotline.core.spec.model import JobSpec
from spotline.core.state import RunStatus, Training
from spotline.core.teams.team_policy import TeamPolicy
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import load_template
from spotline_dev.harness.standin import SpotWeather
from spotline_dev.harness.standin.base.training_plans import ReservedPlan

HOME, PEER = "us-east-1", "us-west-2"
PLAN_TYPE = "ml.p4d.24xlarge"  # a type training plans offer (ReservedCapacityInstanceType)
ARN = "arn:aws:sagemaker:{region}:123456789012:training-plan/{name}"
TEAM = example_spec().team


def _spec(plan: str | None = None, regions: tuple[str, ...] = (HOME, PEER)) -> JobSpec:
    return replace(example_spec(), instance_type=PLAN_TYPE, regions=regions, training_plan=plan)


def _plan(name: str, team: str | None = TEAM) -> ReservedPlan:
    """An Active plan of `team` (tagged spotline:team=<team> at CreateTrainingPlan; None: untagged)."""
    tags = {"spotline:team": team} if team else {}
    return ReservedPlan(name, PLAN_TYPE, 2, NOW - timedelta(hours=1), NOW + timedelta(days=2), tags=tags)


@pytest.fixture
def peered() -> Iterator[LocalStack]:
    """A plan at home and one in the peer region, each known to its own region only."""
    with start_local_stack(
        NOW,
        team_policy=team_policy_for(_spec()),
        weather=SpotWeather(training_plans=[_plan("home-plan")]),
        peers={PEER: SpotWeather(training_plans=[_plan("west-plan")])},
    ) as local:
        yield local


def test_a_named_plan_in_a_peer_region_is_read_there(peered: LocalStack) -> None:
    assert plan_problems(_spec(ARN.format(region=PEER, name="west-plan")), HOME) == []


def test_a_named_plan_outside_the_runs_regions_is_refused_naming_the_field(peered: LocalStack) -> None:
    (problem,) = plan_problems(_spec(ARN.format(region=PEER, name="west-plan"), regions=(HOME,)), HOME)
    assert problem.path == PLAN_PATH
    assert problem.message.startswith("training plan west-plan is in us-west-2: a plan serves training jobs")


def test_a_home_plan_is_read_at_home_while_an_attempt_in_a_peer_region_is_checked(peered: LocalStack) -> None:
    spec = _spec(ARN.format(region=HOME, name="home-plan"))
    with in_region(PEER):  # CheckTrainingStatus reads an attempt placed in the peer region
        (plan,) = candidate_plans(spec, None, [HOME, PEER])
    assert (plan.name, plan.region) == ("home-plan", HOME)


def test_auto_lists_the_active_plans_of_each_of_the_runs_regions(peered: LocalStack) -> None:
    spec = _spec("auto")
    policy = _allowing_plans(spec)
    with in_region(PEER):
        found = candidate_plans(spec, policy, [HOME, PEER])
        at_home = candidate_plans(spec, policy, [HOME])
    assert sorted((p.name, p.region) for p in found) == [("home-plan", HOME), ("west-plan", PEER)]
    assert [p.name for p in at_home] == ["home-plan"]


def test_an_attempt_on_a_plan_goes_to_the_plans_region(peered: LocalStack) -> None:
    spec = _spec("auto")
    plan = PLAN | {"arn": ARN.format(region=PEER, name="west-plan"), "name": "west-plan", "region": PEER}
    training = Training.from_state(training_state(attempt=1, capacity="spot", region=HOME))
    status = RunStatus.from_state(status_state(nextCapacity="training-plan", nextRegion=None, nextTrainingPlan=plan))
    assert (
        place_attempt(training, status, allowed=[HOME, PEER], spec=spec, capacity="training-plan", now=NOW).region
        == PEER
    )


def _allowing_plans(spec: JobSpec) -> TeamPolicy:
    """The broad pattern of the issue: every plan of the account, in both regions."""
    document = json.loads(team_policy_for(spec))
    document["teams"][spec.team]["trainingPlans"] = [ARN.format(region=r, name="*") for r in (HOME, PEER)]
    return TeamPolicy.from_document(document)


# --- whose a plan is: its spotline:team tag (issue 45) ------------------------------------------


@pytest.fixture
def contested() -> Iterator[LocalStack]:
    """The team's plan, another team's and an untagged one at home, and another team's in the peer
    region: a broad pattern (`_allowing_plans`) matches them all."""
    with start_local_stack(
        NOW,
        team_policy=team_policy_for(_spec()),
        weather=SpotWeather(training_plans=[_plan("ours"), _plan("recsys-plan", "recsys"), _plan("nobodys", None)]),
        peers={PEER: SpotWeather(training_plans=[_plan("recsys-west", "recsys")])},
    ) as local:
        yield local


def test_auto_takes_only_the_teams_plans_even_when_a_broad_pattern_matches_others(contested: LocalStack) -> None:
    """capacity.trainingPlan: auto took another team's plan when a pattern was broad."""
    spec = _spec("auto")
    found = candidate_plans(spec, _allowing_plans(spec), [HOME, PEER])
    assert [(p.name, p.region) for p in found] == [("ours", HOME)]


@pytest.mark.parametrize(
    ("name", "region", "found"),
    [
        ("recsys-plan", HOME, "it is tagged spotline:team=recsys: team recsys's"),
        ("recsys-west", PEER, "it is tagged spotline:team=recsys: team recsys's"),
        ("nobodys", HOME, "it has no such tag"),
    ],
)
def test_a_named_plan_not_tagged_for_the_team_is_refused_naming_its_owner(
    contested: LocalStack, name: str, region: str, found: str
) -> None:
    spec = _spec(ARN.format(region=region, name=name))
    (problem,) = plan_problems(spec, HOME)
    assert problem.path == PLAN_PATH
    assert problem.message == (
        f"training plan {name} is not tagged spotline:team={TEAM} ({found}): a team uses only its own training plans"
    )
    assert candidate_plans(spec, _allowing_plans(spec), [HOME, PEER]) == []  # nor fallen back onto later


def test_the_teams_named_plan_is_taken(contested: LocalStack) -> None:
    spec = _spec(ARN.format(region=HOME, name="ours"))
    assert plan_problems(spec, HOME) == []
    assert [p.name for p in candidate_plans(spec, None, [HOME, PEER])] == ["ours"]


def test_a_plan_gone_since_it_was_listed_is_nobodys(contested: LocalStack) -> None:
    """ListTags on a plan that is not there answers ValidationException: the fallback looks elsewhere."""
    spec = _spec("auto", regions=(HOME,))
    (ours,) = candidate_plans(spec, _allowing_plans(spec), [HOME])
    gone = replace(ours, arn=ARN.format(region=HOME, name="sold-back"), name="sold-back")
    assert (teams_plan(spec, ours), teams_plan(spec, gone)) == (True, False)


def test_a_plan_tagged_for_the_team_with_add_tags_becomes_the_teams(contested: LocalStack) -> None:
    """What docs/teams/manifests.md tells a team to run: aws sagemaker add-tags --resource-arn <plan ARN>
    --tags Key=spotline:team,Value=<team>."""
    spec = _spec("auto", regions=(HOME,))
    contested.client("sagemaker").add_tags(
        ResourceArn=ARN.format(region=HOME, name="nobodys"), Tags=[{"Key": "spotline:team", "Value": TEAM}]
    )
    assert sorted(p.name for p in candidate_plans(spec, _allowing_plans(spec), [HOME])) == ["nobodys", "ours"]


PLAN_READERS = ("ValidateResourcesFunction", "CheckTrainingStatusFunction")


@pytest.mark.parametrize("function", PLAN_READERS)
def test_plans_and_their_tags_may_be_read_at_home_and_in_each_peer_region(function: str) -> None:
    """DescribeTrainingPlan and ListTags (whose the plan is) go to the region of the plan's ARN: the
    home region or a peer's."""
    policies = load_template()["Resources"][function]["Properties"]["Policies"]
    (statement,) = [
        s for p in policies for s in p["Statement"] if "sagemaker:DescribeTrainingPlan" in json.dumps(s["Action"])
    ]
    assert statement["Action"] == ["sagemaker:DescribeTrainingPlan", "sagemaker:ListTags"]
    home, *peers = statement["Resource"]
    assert home == {"Fn::Sub": "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:training-plan/*"}
    for index, peer in enumerate(peers):
        condition, sub, absent = peer["Fn::If"]
        (arn, names) = sub["Fn::Sub"]
        assert condition == f"HasPeerRegion{index + 1}" and absent == {"Ref": "AWS::NoValue"}
        assert arn == "arn:${AWS::Partition}:sagemaker:${Peer}:${AWS::AccountId}:training-plan/*"
        assert names == {"Peer": {"Fn::Select": [index, {"Fn::Split": [",", {"Ref": "PeerRegions"}]}]}}
    assert len(peers) == 3


# --- a plan's TargetResources ------------------------------------------------------------------


@pytest.fixture
def hyperpod() -> Iterator[LocalStack]:
    """An Active plan at home that serves HyperPod clusters only."""
    plan = replace(_plan("pod-plan"), target_resources=("hyperpod-cluster",))
    with start_local_stack(
        NOW, team_policy=team_policy_for(_spec()), weather=SpotWeather(training_plans=[plan])
    ) as local:
        yield local


def test_a_named_plan_for_hyperpod_clusters_is_refused_naming_the_field(hyperpod: LocalStack) -> None:
    (problem,) = plan_problems(_spec(ARN.format(region=HOME, name="pod-plan"), regions=(HOME,)), HOME)
    assert problem.path == PLAN_PATH
    assert problem.message == (
        "training plan pod-plan is for hyperpod-cluster (TargetResources), not training-job: "
        "training jobs cannot run on it"
    )


def test_auto_never_falls_back_onto_a_plan_for_hyperpod_clusters(hyperpod: LocalStack) -> None:
    spec = _spec("auto", regions=(HOME,))
    (listed,) = candidate_plans(spec, _allowing_plans(spec), [HOME])
    assert fallback_plan(spec, [listed], NOW, min_seconds=3600) is None
    assert listed.target_resources == ("hyperpod-cluster",)
    assert fallback_plan(spec, [replace(listed, target_resources=("training-job",))], NOW, min_seconds=3600)
