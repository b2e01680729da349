"""AWS's migration guide, "Common Migration Patterns -> Simple Training Job", the V3 part
(aws/sagemaker-python-sdk@a24812666d258d9d19c9a82d0c9385ca0bd3ba01, migration.md L711-720):
an image-based job, no code. Made concrete: the image, the role, an explicit output path."""

from sagemaker.core.training.configs import Compute, InputData, OutputDataConfig
from sagemaker.train import ModelTrainer

image = "123456789012.dkr.ecr.us-west-2.amazonaws.com/my-training-image:1.0"
role = "arn:aws:iam::123456789012:role/spotline/vision/training"

trainer = ModelTrainer(
    training_image=image,
    role=role,
    compute=Compute(instance_type="ml.m5.xlarge"),
    hyperparameters={"epochs": 10},
    output_data_config=OutputDataConfig(s3_output_path="s3://vision-models/simple/"),
)

inputs = [InputData(channel_name="training", data_source="s3://vision-data/data/")]
