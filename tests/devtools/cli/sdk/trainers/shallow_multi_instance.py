"""The SDK's shallow tests test_multi_instance_request (L468-474) with the channels of
test_multiple_s3_channels (L366-379): two instances, two channels, code from S3."""

from _shallow import TRAIN_DATA_URI, VALIDATION_DATA_URI, compute, trainer_kwargs
from sagemaker.core.training.configs import InputData
from sagemaker.train.model_trainer import ModelTrainer

trainer = ModelTrainer(**trainer_kwargs(compute=compute(instance_count=2)))

inputs = [
    InputData(channel_name="train", data_source=TRAIN_DATA_URI),
    InputData(channel_name="validation", data_source=VALIDATION_DATA_URI),
]
