"""The SDK's unit test test_metric_definitions
(sagemaker-train/tests/unit/train/test_model_trainer.py L1485-1497): an image and a metric
definition. Made concrete: a pinned image tag (the test's is :latest, which Spotline refuses),
the role, an explicit output path, and a channel."""

from sagemaker.core.training.configs import InputData, MetricDefinition, OutputDataConfig
from sagemaker.train.model_trainer import ModelTrainer

image_uri = "000000000000.dkr.ecr.us-west-2.amazonaws.com/dummy-image:1.0"
role = "arn:aws:iam::000000000000:role/spotline/vision/dummy-role"
metric_definitions = [
    MetricDefinition(
        name="loss",
        regex="Loss: (.*?);",
    )
]
trainer = ModelTrainer(
    training_image=image_uri,
    role=role,
    output_data_config=OutputDataConfig(s3_output_path="s3://vision-models/dummy/"),
).with_metric_definitions(metric_definitions)

inputs = [InputData(channel_name="train", data_source="s3://vision-data/dummy/train/")]
