"""The training settings of the stack in a region (spotline.aws.training.training_settings.in_region): at
home from the function's environment, in a peer region from the same stack's parameters there."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.stub import Stubber

from spotline.aws.common import clients
from spotline.aws.training import training_settings
from spotline.core.training.training_request import TrainingSettings


@pytest.fixture
def peer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "t",
        "AWS_SECRET_ACCESS_KEY": "t",
        "AWS_REGION": "us-east-1",
        "STACK_NAME": "spotline",
        training_settings.SUBNET_IDS: "subnet-0aaaaaaa",
        training_settings.SECURITY_GROUP_IDS: "sg-0aaaaaaa",
        training_settings.VOLUME_KMS_KEY_ID: "arn:aws:kms:us-east-1:123456789012:key/home",
    }.items():
        monkeypatch.setenv(name, value)
    clients.reset_clients()
    with Stubber(clients.client("cloudformation", "us-west-2")) as stubber:
        yield stubber
    clients.reset_clients()


def _stack(parameters: dict[str, str]) -> dict[str, object]:
    return {
        "Stacks": [
            {
                "StackName": "spotline",
                "CreationTime": "2026-11-01T00:00:00Z",
                "StackStatus": "UPDATE_COMPLETE",
                "Parameters": [{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
            }
        ]
    }


def test_a_peer_region_runs_with_that_regions_network_and_keys_never_homes(peer: Stubber) -> None:
    peer.add_response(
        "describe_stacks",
        _stack(
            {
                "TrainingSubnetIds": "subnet-0bbbbbbb,subnet-0ccccccc",
                "TrainingSecurityGroupIds": "sg-0bbbbbbb",
                "TrainingVolumeKmsKeyId": "",
                "EnableNetworkIsolation": "true",
                "TrainingRolePath": "spotline",
            }
        ),
        {"StackName": "spotline"},
    )
    assert training_settings.in_region("us-west-2") == TrainingSettings(
        subnet_ids=("subnet-0bbbbbbb", "subnet-0ccccccc"),
        security_group_ids=("sg-0bbbbbbb",),
        network_isolation=True,
    )
    home = training_settings.in_region("us-east-1")
    assert (home.subnet_ids, home.volume_kms_key_id) == (
        ("subnet-0aaaaaaa",),
        "arn:aws:kms:us-east-1:123456789012:key/home",
    )
    assert training_settings.in_region(None) == home
