"""Written here (not AWS's): the migration guide's simple trainer (migration.md L711-720) fed a
local folder, which the SDK would upload to a default bucket; Spotline refuses it before the SDK
builds anything."""

from pathlib import Path

from sagemaker.core.training.configs import Compute, InputData, OutputDataConfig
from sagemaker.train import ModelTrainer

trainer = ModelTrainer(
    training_image="123456789012.dkr.ecr.us-west-2.amazonaws.com/my-training-image:1.0",
    role="arn:aws:iam::123456789012:role/spotline/vision/training",
    compute=Compute(instance_type="ml.m5.xlarge"),
    hyperparameters={"epochs": 10},
    output_data_config=OutputDataConfig(s3_output_path="s3://vision-models/simple/"),
)

local = Path("/tmp/spotline-local-data")
local.mkdir(exist_ok=True)
inputs = [InputData(channel_name="train", data_source=str(local))]
