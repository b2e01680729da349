"""The permission check catches what a real account would refuse: faults planted in the expanded
template make the run's calls fail, naming the function, the call and the missing action or the
denying statement; with the template as it is, the same runs pass the check."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from spotline_dev.harness.local.permissions import roles
from spotline_dev.harness.local.template import PROJECT_ROOT
from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario

SCENARIOS = PROJECT_ROOT / "examples" / "scenarios"
Plant = Callable[[dict[str, Any]], None]


def _policies(expanded: dict[str, Any], role: str) -> list[dict[str, Any]]:
    return expanded["Resources"][role]["Properties"]["Policies"]  # type: ignore[no-any-return]


def without_action(role: str, action: str) -> Plant:
    def plant(expanded: dict[str, Any]) -> None:
        for policy in _policies(expanded, role):
            for statement in policy["PolicyDocument"]["Statement"]:
                actions = statement.get("Action")
                if isinstance(actions, list) and action in actions:
                    statement["Action"] = [a for a in actions if a != action]
                elif actions == action:
                    statement["Action"] = "sts:GetCallerIdentity"  # the statement no longer grants it

    return plant


def with_deny(role: str, action: str) -> Plant:
    def plant(expanded: dict[str, Any]) -> None:
        deny = {"Sid": "PlantedDeny", "Effect": "Deny", "Action": action, "Resource": "*"}
        _policies(expanded, role).append({"PolicyName": "Planted", "PolicyDocument": {"Statement": [deny]}})

    return plant


def run_with(monkeypatch: pytest.MonkeyPatch, scenario: str, plant: Plant | None) -> None:
    expanded = roles.expanded_template()
    if plant is not None:
        plant(expanded)
    monkeypatch.setattr(roles, "expanded_template", lambda: copy.deepcopy(expanded))
    run_scenario(load_scenario(SCENARIOS / scenario))


def test_the_efs_run_passes_the_check_with_the_template_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    run_with(monkeypatch, "trains-from-efs.yaml", None)


@pytest.mark.parametrize(
    ("scenario", "plant", "expected"),
    [
        (
            "trains-from-efs.yaml",
            without_action("ValidateResourcesFunctionRole", "ec2:DescribeNetworkInterfaceAttribute"),
            "ValidateResourcesFunction: efs.DescribeMountTargetSecurityGroups in us-east-1 needs "
            "ec2:DescribeNetworkInterfaceAttribute on * (dependent: the mount target's network interface): "
            "no identity-based policy allows the ec2:DescribeNetworkInterfaceAttribute action",
        ),
        (
            "trains-from-efs.yaml",
            with_deny("SubmitTrainingJobFunctionRole", "batch:SubmitServiceJob"),
            "SubmitTrainingJobFunction: batch.SubmitServiceJob in us-east-1 needs batch:SubmitServiceJob on "
            "arn:aws:batch:us-east-1:123456789012:job-queue/spotline-local-training: explicitly denied by role "
            "SubmitTrainingJobFunctionRole, policy Planted, statement PlantedDeny",
        ),
        (
            "missing-image.yaml",  # refused before training: no progress.json was ever written
            without_action("RecordOutcomeFunctionRole", "s3:ListBucket"),
            "RecordOutcomeFunction: s3.GetObject of a missing key needs s3:ListBucket",
        ),
        (
            "missing-image.yaml",  # priced even so: RecordOutcome reads the manifest type's price
            without_action("RecordOutcomeFunctionRole", "pricing:GetProducts"),
            "RecordOutcomeFunction: pricing.GetProducts in us-east-1 needs pricing:GetProducts on *",
        ),
    ],
    ids=[
        "efs-without-describe-network-interface-attribute",
        "a-deny-catches-a-submission",
        "404-becomes-403",
        "prices-without-get-products",
    ],
)
def test_a_planted_fault_fails_the_run_naming_function_call_and_cause(
    monkeypatch: pytest.MonkeyPatch, scenario: str, plant: Plant, expected: str
) -> None:
    with pytest.raises(AssertionError, match="AWS calls the functions' roles would not allow") as refused:
        run_with(monkeypatch, scenario, plant)
    assert expected in str(refused.value)
