"""The helpers of the SageMaker Python SDK's own shallow integration tests
(aws/sagemaker-python-sdk@a24812666d258d9d19c9a82d0c9385ca0bd3ba01,
sagemaker-train/tests/integ/train/shallow/test_model_trainer.py L53-109 and harness.py
L258-302), with what needs an AWS account made concrete: the region, the role, an explicit
output path, and the code as an S3 source archive instead of the local params_script folder
(its requirements.txt travels inside the archive)."""

from sagemaker.core import image_uris, shapes
from sagemaker.core.training.configs import Compute, OutputDataConfig, SourceCode

DEFAULT_INSTANCE_TYPE = "ml.m5.large"
DEFAULT_INSTANCE_COUNT = 1
MAX_RUNTIME_IN_SECONDS = 600
ROLE = "arn:aws:iam::123456789012:role/spotline/vision/shallow-training"
OUTPUT = OutputDataConfig(s3_output_path="s3://vision-models/shallow-integ-test/output/")
TRAIN_DATA_URI = "s3://vision-data/shallow-integ-test/train/"
VALIDATION_DATA_URI = "s3://vision-data/shallow-integ-test/validation/"

CONTRACT_HYPERPARAMETERS = {
    "integer": 1,
    "boolean": True,
    "float": 3.14,
    "string": "Hello World",
    "list": [1, 2, 3],
    "dict": {
        "string": "value",
        "integer": 3,
        "float": 3.14,
        "list": [1, 2, 3],
        "dict": {"key": "value"},
        "boolean": True,
    },
}


def cpu_image() -> str:
    return image_uris.retrieve(
        framework="pytorch",
        region="us-west-2",
        version="2.0.0",
        py_version="py310",
        instance_type=DEFAULT_INSTANCE_TYPE,
        image_scope="training",
    )


def source_code() -> SourceCode:
    return SourceCode(source_dir="s3://vision-code/params_script/sourcedir.tar.gz", entry_script="train.py")


def compute(instance_type: str = DEFAULT_INSTANCE_TYPE, instance_count: int = DEFAULT_INSTANCE_COUNT) -> Compute:
    return Compute(instance_type=instance_type, instance_count=instance_count)


def stopping_condition() -> shapes.StoppingCondition:
    return shapes.StoppingCondition(max_runtime_in_seconds=MAX_RUNTIME_IN_SECONDS)


def trainer_kwargs(**overrides: object) -> dict[str, object]:
    kwargs: dict[str, object] = dict(
        training_image=cpu_image(),
        source_code=source_code(),
        compute=compute(),
        stopping_condition=stopping_condition(),
        base_job_name="shallow",
        role=ROLE,
        output_data_config=OUTPUT,
    )
    kwargs.update(overrides)
    return kwargs
