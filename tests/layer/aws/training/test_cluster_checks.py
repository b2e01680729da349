"""ValidateResources for jobs of many instances (spotline.aws.training.cluster_checks), against
moto's EC2: its instance type data is EC2's own DescribeInstanceTypes answers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from spotline.aws.common import clients
from spotline.aws.training.cluster_checks import efa_problems, security_group_problems
from spotline.core.common.errors import STACK_PATH
from spotline.core.spec.model import Distribution, InstanceOption
from tests.layer.core.training.test_launchers import SPEC as DISTRIBUTED

REGION = "us-east-1"
SPEC = DISTRIBUTED  # 4 x ml.p4d.24xlarge, torchrun over EFA


@pytest.fixture
def ec2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {"AWS_ACCESS_KEY_ID": "t", "AWS_SECRET_ACCESS_KEY": "t", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        clients.reset_clients()
        yield boto3.client("ec2", region_name=REGION)
        clients.reset_clients()


def _group(ec2: Any, *, inbound_self: bool, outbound_self: bool) -> str:
    """A fresh security group (its default egress: all traffic to 0.0.0.0/0) with the rules asked for."""
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    group = str(ec2.create_security_group(GroupName="jobs", Description="training", VpcId=vpc)["GroupId"])
    everything = [{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": group}]}]
    if inbound_self:
        ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=everything)
    if outbound_self:
        ec2.authorize_security_group_egress(GroupId=group, IpPermissions=everything)
    return group


def test_types_with_efa_pass_and_a_type_without_it_is_refused_naming_its_field(ec2: Any) -> None:
    assert efa_problems(SPEC) == []
    spec = replace(SPEC, alternatives=(InstanceOption("ml.p5.48xlarge", 2), InstanceOption("ml.g5.2xlarge", 8)))
    (problem,) = efa_problems(spec)
    assert problem.path == "spec.resources.alternatives[1].instanceType"
    assert "ml.g5.2xlarge has no Elastic Fabric Adapter" in problem.message


def test_a_job_that_does_not_ask_for_efa_is_not_asked_about_it(ec2: Any) -> None:
    assert efa_problems(replace(SPEC, instance_type="ml.g5.2xlarge", distribution=Distribution("torchrun"))) == []


def test_a_type_ec2_does_not_know_is_refused_not_crashed_on(ec2: Any) -> None:
    (problem,) = efa_problems(replace(SPEC, instance_type="ml.p9.96xlarge"))
    assert problem.path == "spec.resources.instanceType"
    assert "EC2 knows no such instance type" in problem.message


def test_a_group_that_admits_itself_both_ways_serves_efa(ec2: Any) -> None:
    group = _group(ec2, inbound_self=True, outbound_self=True)
    assert security_group_problems(SPEC, (group,)) == []


def test_the_default_egress_serves_a_cluster_without_efa_but_not_with_it(ec2: Any) -> None:
    group = _group(ec2, inbound_self=True, outbound_self=False)
    assert security_group_problems(replace(SPEC, distribution=Distribution("torchrun")), (group,)) == []
    (problem,) = security_group_problems(SPEC, (group,))
    assert problem.path == STACK_PATH
    assert f"TrainingSecurityGroupIds ({group}) do not admit themselves (outbound closed)" in problem.message
    assert "all traffic to and from themselves (EFA)" in problem.message


def test_a_group_that_shuts_its_own_instances_out_is_refused_and_one_instance_needs_no_rule(ec2: Any) -> None:
    group = _group(ec2, inbound_self=False, outbound_self=False)
    (problem,) = security_group_problems(replace(SPEC, distribution=None), (group,))
    assert "(inbound closed)" in problem.message and "a job on 4 instances" in problem.message
    assert security_group_problems(replace(SPEC, instance_count=1, distribution=None), (group,)) == []
    assert security_group_problems(SPEC, ()) == [], "no VPC of the stack's: SageMaker's own network"
