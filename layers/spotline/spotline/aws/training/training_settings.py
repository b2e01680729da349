"""The stack's network and encryption settings for training jobs, read from the environment
SubmitTrainingJob gets from template.yaml (one variable per stack parameter), or for a peer
region from the parameters of the same stack there (CloudFormation DescribeStacks): a subnet, a
security group and a KMS key each belong to one region, so an attempt placed in a peer region
runs with that region's stack's. Unset or empty values mean the default: nothing added to the
CreateTrainingJob request."""

from __future__ import annotations

import os
from collections.abc import Mapping

from spotline.aws.common.clients import client
from spotline.core.training.training_request import TrainingSettings, TrainingSettingsInvalid

SUBNET_IDS = "TRAINING_SUBNET_IDS"
SECURITY_GROUP_IDS = "TRAINING_SECURITY_GROUP_IDS"
NETWORK_ISOLATION = "TRAINING_NETWORK_ISOLATION"
INTER_CONTAINER_ENCRYPTION = "TRAINING_INTER_CONTAINER_ENCRYPTION"
VOLUME_KMS_KEY_ID = "TRAINING_VOLUME_KMS_KEY_ID"
OUTPUT_KMS_KEY_ID = "TRAINING_OUTPUT_KMS_KEY_ID"
STACK_NAME = "STACK_NAME"  # the stack's name, the same in every region it is deployed in

PARAMETERS = {
    SUBNET_IDS: "TrainingSubnetIds",
    SECURITY_GROUP_IDS: "TrainingSecurityGroupIds",
    NETWORK_ISOLATION: "EnableNetworkIsolation",
    INTER_CONTAINER_ENCRYPTION: "EnableInterContainerTrafficEncryption",
    VOLUME_KMS_KEY_ID: "TrainingVolumeKmsKeyId",
    OUTPUT_KMS_KEY_ID: "TrainingOutputKmsKeyId",
}
"""Each variable's stack parameter (template.yaml sets one from the other)."""


def _ids(environ: Mapping[str, str], name: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in environ.get(name, "").split(",") if part.strip())


def _flag(environ: Mapping[str, str], name: str) -> bool:
    value = environ.get(name, "").strip().lower()
    if value not in ("", "true", "false"):
        raise TrainingSettingsInvalid(f"{name} is {environ[name]!r}; it must be true or false")
    return value == "true"


def _text(environ: Mapping[str, str], name: str) -> str | None:
    return environ.get(name, "").strip() or None


def from_environment(environ: Mapping[str, str] | None = None) -> TrainingSettings:
    """The settings in `environ` (default: the process environment); TrainingSettingsInvalid
    names the variable that is wrong."""
    environ = os.environ if environ is None else environ
    return TrainingSettings(
        subnet_ids=_ids(environ, SUBNET_IDS),
        security_group_ids=_ids(environ, SECURITY_GROUP_IDS),
        network_isolation=_flag(environ, NETWORK_ISOLATION),
        inter_container_traffic_encryption=_flag(environ, INTER_CONTAINER_ENCRYPTION),
        volume_kms_key_id=_text(environ, VOLUME_KMS_KEY_ID),
        output_kms_key_id=_text(environ, OUTPUT_KMS_KEY_ID),
    )


def in_region(region: str | None) -> TrainingSettings:
    """The settings of the stack in `region`: this one's at home (None or AWS_REGION), else the
    same stack's in that region, from its parameters."""
    if region is None or region == os.environ.get("AWS_REGION", "us-east-1"):  # regions.home_region
        return from_environment()
    (stack,) = client("cloudformation", region).describe_stacks(StackName=os.environ[STACK_NAME])["Stacks"]
    given = {str(p["ParameterKey"]): str(p.get("ParameterValue") or "") for p in stack.get("Parameters") or []}
    return from_environment({name: given.get(parameter, "") for name, parameter in PARAMETERS.items()})
