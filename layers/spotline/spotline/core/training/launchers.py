"""How a distributed job's ranks are started, as CreateTrainingJob carries it (pure).

A SageMaker framework image (the AWS Deep Learning Containers) runs the training toolkit, which
reads the launcher from hyperparameters; the names and values are those the SageMaker Python SDK
writes for `distribution=` (v2 `sagemaker.pytorch.estimator.PyTorch` and `sagemaker.estimator.Framework`:
LAUNCH_TORCH_DISTRIBUTED_ENV_NAME, LAUNCH_MPI_ENV_NAME, MPI_NUM_PROCESSES_PER_HOST,
LAUNCH_SM_DDP_ENV_NAME, INSTANCE_TYPE), JSON-encoded as `_json_encode_hyperparameters` does.
A custom image starts its own processes (SageMaker runs its entrypoint once per instance), so it
gets the launcher in its environment instead, for its entrypoint to read.
"""

from __future__ import annotations

import json

from spotline.core.spec.images import parse_image
from spotline.core.spec.model import JobSpec

TORCH_DISTRIBUTED = "sagemaker_torch_distributed_enabled"
MPI = "sagemaker_mpi_enabled"
MPI_PROCESSES_PER_HOST = "sagemaker_mpi_num_of_processes_per_host"
SMDDP = "sagemaker_distributed_dataparallel_enabled"
INSTANCE_TYPE = "sagemaker_instance_type"
LAUNCHER_ENV = "SPOTLINE_LAUNCHER"
PROCESSES_PER_HOST_ENV = "SPOTLINE_PROCESSES_PER_HOST"

MAX_LAUNCHER_HYPERPARAMETERS = 2
"""Hyperparameters a launcher adds to the manifest's (the budget of SageMaker's 100)."""
MAX_LAUNCHER_ENVIRONMENT = 2
"""Environment variables a launcher adds (SPOTLINE_LAUNCHER, SPOTLINE_PROCESSES_PER_HOST)."""


def on_framework_image(spec: JobSpec) -> bool:
    image = parse_image(spec.image)
    return image is not None and image.is_deep_learning_container


def launcher_hyperparameters(spec: JobSpec, instance_type: str | None) -> dict[str, str]:
    """What the training toolkit of a framework image reads; nothing for a custom image.
    `instance_type`: the one type the attempt runs on (None when SageMaker picks among several:
    then the toolkit reads the instance's own type, and the SDK's hint is left out)."""
    distribution = spec.distribution
    if distribution is None or not on_framework_image(spec):
        return {}
    values: dict[str, object] = {}
    if distribution.launcher == "torchrun":
        values[TORCH_DISTRIBUTED] = True
    elif distribution.launcher == "mpi":
        values[MPI] = True
        if distribution.processes_per_host is not None:
            values[MPI_PROCESSES_PER_HOST] = distribution.processes_per_host
    else:
        values[SMDDP] = True
    if distribution.launcher != "mpi" and instance_type:
        values[INSTANCE_TYPE] = instance_type
    return {name: json.dumps(value) for name, value in values.items()}


def launcher_environment(spec: JobSpec) -> dict[str, str]:
    """What a custom image's entrypoint reads to start its ranks; nothing for a framework image."""
    distribution = spec.distribution
    if distribution is None or on_framework_image(spec):
        return {}
    environment = {LAUNCHER_ENV: distribution.launcher}
    if distribution.processes_per_host is not None:
        environment[PROCESSES_PER_HOST_ENV] = str(distribution.processes_per_host)
    return environment
