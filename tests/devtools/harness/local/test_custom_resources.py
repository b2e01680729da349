"""The local stack creates the template's custom resources as CloudFormation does: the real
handler gets a Create request and its one answer is caught, so the queue's quota shares follow
the team registry (seeded with the policy a test or the sandbox gives the stack, through
ApplyTeamChange) and the capacity, before any job."""

from __future__ import annotations

import json

import pytest

from conftest import NOW
from spotline_dev.harness.local.custom_resources import (
    CustomResourceFailed,
    as_cloudformation_sends,
    custom_resources,
    parameter_overrides,
    with_parameters,
)
from spotline_dev.harness.local.registry import RegistryChangeRefused
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import load_template

TEMPLATE = load_template()


def test_the_shares_follow_the_team_policy_and_capacity_the_stack_was_given() -> None:
    policy = {"teams": {"search-ranking": {"maxInstances": 2}, "vision": {"quotas": {"ml.p4d.24xlarge": 1}}}}
    capacity = {"ml.g5.2xlarge": 3, "ml.p4d.24xlarge": 2}
    with start_local_stack(NOW, team_policy=json.dumps(policy), capacity=capacity) as stack:
        queue = stack.physical["TrainingJobQueue"]
        shares = stack.client("batch").list_quota_shares(jobQueue=queue)["quotaShares"]
        assert {
            s["quotaShareName"]: {c["capacityUnit"]: c["maxCapacity"] for c in s["capacityLimits"]} for s in shares
        } == {
            "search-ranking": capacity,  # no quotas: the whole (overridden) service environment
            "vision": {"ml.p4d.24xlarge": 1},
        }
        assert stack.queue_capacities["TrainingJobQueue"] == capacity
        assert stack.physical["TeamQuotaShares"] == queue  # its PhysicalResourceId, what Ref gives
        assert stack.invocations == []  # CloudFormation's call is not the workflow's


def test_a_custom_resource_that_answers_failed_fails_the_stack_with_its_reason() -> None:
    failed = "TeamQuotaShares CREATE_FAILED: CustomResourceError: ResourceProperties.Capacity: TrainingCapacity entry"
    with (
        pytest.raises(CustomResourceFailed, match=failed),
        start_local_stack(NOW, parameters={"TrainingCapacity": "ml.g5.2xlarge=0"}),
    ):
        pass


def test_a_registry_seed_the_queue_cannot_hold_fails_the_stacks_start_naming_the_field() -> None:
    too_many = {"teams": {f"team-{n:02d}": {} for n in range(21)}}
    with (
        pytest.raises(RegistryChangeRefused, match=r"teams\.team-\d\d\.quotaShare: would be quota share 21"),
        start_local_stack(NOW, team_policy=json.dumps(too_many)),
    ):
        pass


def test_parameters_take_the_local_stacks_values() -> None:
    overrides = parameter_overrides(TEMPLATE, {"TRAINING_CAPACITY": "ml.g5.2xlarge=5"})
    assert overrides == {"TrainingCapacity": "ml.g5.2xlarge=5"}
    assert parameter_overrides(TEMPLATE, {}) == {}
    local = with_parameters(TEMPLATE, {"TrainingCapacity": "ml.g5.2xlarge=5"})
    assert local["Parameters"]["TrainingCapacity"]["Default"] == "ml.g5.2xlarge=5"
    assert TEMPLATE["Parameters"]["TrainingCapacity"]["Default"] == "ml.g5.2xlarge=8"  # the template is left as it is


def test_resource_properties_arrive_as_cloudformation_sends_them() -> None:
    assert as_cloudformation_sends({"CapacityInstances": 8, "On": True, "List": [1, "a"], "Text": "x"}) == {
        "CapacityInstances": "8",
        "On": "true",
        "List": ["1", "a"],
        "Text": "x",
    }
    assert list(custom_resources(TEMPLATE)) == ["TeamQuotaShares"]
