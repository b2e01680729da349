"""ValidateResources' AWS side on the local stack: the role must be tagged with the team that
names it, a team over its maxConcurrentJobs is refused, and a broken stack policy is reported
as the stack's problem rather than crashing the run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest

from conftest import NOW, example_spec, team_policy_for
from spotline.aws.training.request_check import submit_service_job_request
from spotline.aws.training.resources import STACK_PATH, ResourceSettings, check_resources
from spotline.core.spec.model import InputChannel
from spotline.core.teams.team_policy import TeamPolicy, TeamPolicyInvalid
from spotline.core.training.training_request import Attempt
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import resources_of_type
from spotline_dev.harness.sandbox.account import prepare_account, team_allowance

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:spotline-TrainingLifecycle:search-ranking-ranker-v2-"


def _settings(stack: LocalStack) -> ResourceSettings:
    (queue,) = resources_of_type(stack.template, "AWS::Batch::JobQueue")
    pattern = "arn:aws:iam::123456789012:role/spotline/*"
    return ResourceSettings(job_queue=stack.physical[queue], training_role_pattern=pattern)


def _policy(**allowance: object) -> TeamPolicy:
    spec = example_spec()
    return TeamPolicy.from_json(json.dumps({"teams": {spec.team: {**team_allowance(spec), **allowance}}}))


def test_the_prepared_account_passes(stack: LocalStack) -> None:
    assert check_resources(example_spec(), _settings(stack), _policy()) == []


def test_a_role_tagged_for_another_team_is_refused(stack: LocalStack) -> None:
    iam = stack.client("iam")
    role = example_spec().role_arn.rsplit("/", 1)[-1]
    iam.tag_role(RoleName=role, Tags=[{"Key": "spotline:team", "Value": "team-b"}])
    (problem,) = check_resources(example_spec(), _settings(stack), _policy())
    assert problem.path == "spec.roleArn"
    assert "not tagged spotline:team=search-ranking (it is tagged 'team-b')" in problem.message
    iam.untag_role(RoleName=role, TagKeys=["spotline:team"])
    (problem,) = check_resources(example_spec(), _settings(stack), _policy())
    assert "(it has no such tag)" in problem.message


@pytest.fixture
def two_teams() -> Iterator[LocalStack]:
    """The example's team and team-b, each with its quota share on the queue."""
    spec = example_spec()
    with start_local_stack(NOW, team_policy=team_policy_for(spec, replace(spec, team="team-b"))) as local:
        prepare_account(local.client, spec)
        yield local


def test_a_team_at_its_concurrency_limit_is_refused_until_a_job_ends(two_teams: LocalStack) -> None:
    stack, spec = two_teams, example_spec()
    settings, policy = _settings(stack), _policy(maxConcurrentJobs=2)
    batch = stack.client("batch")
    jobs = [
        batch.submit_service_job(
            **submit_service_job_request(spec, Attempt(f"{EXECUTION}{n:08x}", 1, "spot"), settings.job_queue)
        )
        for n in range(2)
    ]
    other_team = replace(spec, team="team-b")
    batch.submit_service_job(
        **submit_service_job_request(other_team, Attempt(f"{EXECUTION}ffffffff", 1, "spot"), settings.job_queue)
    )
    (problem,) = check_resources(spec, settings, policy)
    assert problem.path == "metadata.team"
    assert "already has 2 training job(s) queued or running" in problem.message
    batch.terminate_service_job(jobId=jobs[0]["jobId"], reason="test")
    stack.clock.advance(120)
    assert check_resources(spec, settings, policy) == []


def test_a_broken_stack_policy_fails_the_run_as_the_stacks_problem(stack: LocalStack) -> None:
    with pytest.raises(TeamPolicyInvalid) as raised:
        TeamPolicy.from_json('{"teams": {"search-ranking": {"s3Prefixes": ["s3://b/x"]}}}')
    (problem,) = check_resources(example_spec(), _settings(stack), raised.value)
    assert problem.path == STACK_PATH
    assert "registry entry is invalid (teams.search-ranking.s3Prefixes[0]:" in problem.message


def test_a_file_system_channel_needs_the_stacks_vpc(stack: LocalStack) -> None:
    """SageMaker mounts FSx for Lustre and EFS only for a job in a VPC that reaches them: a stack
    without TrainingSubnetIds refuses the channel, naming it; with them, the channel passes."""
    fsx = "fs-0123456789abcdef0"
    mounted = InputChannel("train", "", file_system_type="fsx-lustre", file_system_id=fsx, file_system_path="/mnt/x")
    spec = replace(example_spec(), inputs=(mounted, *example_spec().inputs[1:]))
    policy = _policy(fileSystems=[fsx])
    (problem,) = check_resources(spec, _settings(stack), policy)
    assert problem.path == "spec.inputs[0].fileSystem"
    assert "no TrainingSubnetIds" in problem.message
    in_vpc = replace(_settings(stack), training_subnet_ids=("subnet-0a1b2c3d",))
    assert check_resources(spec, in_vpc, policy) == []
