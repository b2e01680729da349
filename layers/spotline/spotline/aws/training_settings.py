"""The stack's network and encryption settings for training jobs, read from the environment
SubmitTrainingJob gets from template.yaml (one variable per stack parameter). Unset or empty
variables mean the default: nothing added to the CreateTrainingJob request."""

from __future__ import annotations

import os
from collections.abc import Mapping

from spotline.core.training_request import TrainingSettings, TrainingSettingsInvalid

SUBNET_IDS = "TRAINING_SUBNET_IDS"
SECURITY_GROUP_IDS = "TRAINING_SECURITY_GROUP_IDS"
NETWORK_ISOLATION = "TRAINING_NETWORK_ISOLATION"
INTER_CONTAINER_ENCRYPTION = "TRAINING_INTER_CONTAINER_ENCRYPTION"
VOLUME_KMS_KEY_ID = "TRAINING_VOLUME_KMS_KEY_ID"
OUTPUT_KMS_KEY_ID = "TRAINING_OUTPUT_KMS_KEY_ID"


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
