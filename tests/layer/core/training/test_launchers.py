"""spec.distribution in CreateTrainingJob: the launcher as a framework image's training toolkit or a
custom image's entrypoint reads it, and SageMaker's health check for clusters."""

from __future__ import annotations

from dataclasses import replace

import botocore.session
from botocore.validate import ParamValidator

from spotline.core.spec.model import Distribution, InputChannel, InstanceOption, JobSpec
from spotline.core.training.launchers import LAUNCHER_ENV, PROCESSES_PER_HOST_ENV
from spotline.core.training.training_request import Attempt, create_training_job_request

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:spotline-training-lifecycle:nlp-llm-1a2b3c4d"
DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-gpu-py311-cu124-ubuntu22.04-sagemaker"
CUSTOM = "123456789012.dkr.ecr.us-east-1.amazonaws.com/llm:2026.12.01"
SPEC = JobSpec(
    team="nlp",
    name="llm",
    image=DLC,
    role_arn="arn:aws:iam::123456789012:role/spotline/nlp-training",
    instance_type="ml.p4d.24xlarge",
    instance_count=4,
    inputs=(InputChannel("train", "s3://nlp-data/train/"),),
    output_s3_uri="s3://nlp-models/llm/",
    checkpoint_s3_uri="s3://nlp-checkpoints/llm/",
    distribution=Distribution("torchrun", efa=True),
)
SPOT = Attempt(EXECUTION, 1, "spot")


def _valid(request: dict[str, object]) -> dict[str, object]:
    """botocore's own check of CreateTrainingJob's input shape."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    report = ParamValidator().validate(request, model.operation_model("CreateTrainingJob").input_shape)
    assert not report.has_errors(), report.generate_report()
    return request


def test_torchrun_on_a_framework_image_is_the_sdks_torch_distributed_hyperparameters() -> None:
    request = _valid(create_training_job_request(SPEC, SPOT))
    hyperparameters = request["HyperParameters"]
    assert hyperparameters == {
        "sagemaker_torch_distributed_enabled": "true",
        "sagemaker_instance_type": '"ml.p4d.24xlarge"',
    }
    assert LAUNCHER_ENV not in request["Environment"]


def test_mpi_names_its_processes_per_host_and_smddp_its_own_flag() -> None:
    mpi = replace(SPEC, distribution=Distribution("mpi", processes_per_host=8))
    smddp = replace(SPEC, distribution=Distribution("smddp"))
    assert create_training_job_request(mpi, SPOT)["HyperParameters"] == {
        "sagemaker_mpi_enabled": "true",
        "sagemaker_mpi_num_of_processes_per_host": "8",
    }
    assert create_training_job_request(smddp, SPOT)["HyperParameters"] == {
        "sagemaker_distributed_dataparallel_enabled": "true",
        "sagemaker_instance_type": '"ml.p4d.24xlarge"',
    }


def test_a_custom_image_gets_the_launcher_in_its_environment_not_the_toolkits_hyperparameters() -> None:
    custom = replace(SPEC, image=CUSTOM, distribution=Distribution("mpi", processes_per_host=8))
    request = _valid(create_training_job_request(custom, SPOT))
    assert request["HyperParameters"] == {}
    assert request["Environment"][LAUNCHER_ENV] == "mpi"
    assert request["Environment"][PROCESSES_PER_HOST_ENV] == "8"


def test_a_choice_among_types_leaves_the_type_hint_to_the_instance() -> None:
    """An on-demand attempt with alternatives lists several types: SageMaker picks one, so the
    request cannot say which; the toolkit reads the instance's own."""
    spec = replace(SPEC, alternatives=(InstanceOption("ml.p5.48xlarge", 2),), checkpoint_format="dcp")
    request = _valid(create_training_job_request(spec, Attempt(EXECUTION, 2, "on-demand")))
    assert request["HyperParameters"] == {"sagemaker_torch_distributed_enabled": "true"}
    assert request["InfraCheckConfig"] == {"EnableInfraCheck": True}


def test_the_health_check_is_on_for_clusters_off_for_one_instance_and_as_the_manifest_says() -> None:
    assert create_training_job_request(SPEC, SPOT)["InfraCheckConfig"] == {"EnableInfraCheck": True}
    one = replace(SPEC, instance_count=1, distribution=Distribution("torchrun"))
    assert "InfraCheckConfig" not in create_training_job_request(one, SPOT)
    plain = replace(SPEC, distribution=None)
    assert create_training_job_request(plain, SPOT)["InfraCheckConfig"] == {"EnableInfraCheck": True}
    assert "sagemaker_torch_distributed_enabled" not in create_training_job_request(plain, SPOT)["HyperParameters"]
    declined = replace(SPEC, infra_check=False)
    assert "InfraCheckConfig" not in create_training_job_request(declined, SPOT)
    asked = replace(one, infra_check=True)
    assert create_training_job_request(asked, SPOT)["InfraCheckConfig"] == {"EnableInfraCheck": True}


def test_the_distribution_survives_the_stored_spec() -> None:
    assert JobSpec.from_dict(SPEC.to_dict()) == SPEC
    assert JobSpec.from_dict(replace(SPEC, distribution=None).to_dict()).distribution is None
