"""The weekly ranking retrain (examples/manifests/ranker-v2.yaml) as a data scientist defines it
with the SageMaker Python SDK 3.x: `spotline from-trainer examples/trainers/ranker_v2.py ...`
turns it into a manifest. The code is a source archive in S3, run by the PyTorch framework image."""

from sagemaker.core.shapes import Tag
from sagemaker.core.training.configs import (
    CheckpointConfig,
    Compute,
    InputData,
    MetricDefinition,
    OutputDataConfig,
    SourceCode,
    StoppingCondition,
)
from sagemaker.train import ModelTrainer

trainer = ModelTrainer(
    training_image="763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-gpu-py311",
    role="arn:aws:iam::123456789012:role/spotline/search-ranking/ranker-training",
    source_code=SourceCode(source_dir="s3://search-ranking-code/ranker/sourcedir.tar.gz", entry_script="train.py"),
    compute=Compute(
        instance_type="ml.g5.2xlarge", instance_count=1, volume_size_in_gb=100, enable_managed_spot_training=True
    ),
    stopping_condition=StoppingCondition(max_runtime_in_seconds=30 * 3600, max_wait_time_in_seconds=36 * 3600),
    hyperparameters={"epochs": 12, "lr": 0.0003},
    environment={"WANDB_MODE": "offline"},
    output_data_config=OutputDataConfig(s3_output_path="s3://search-ranking-models/ranker-v2/"),
    checkpoint_config=CheckpointConfig(s3_uri="s3://search-ranking-checkpoints/ranker-v2/"),
    tags=[Tag(key="cost-center", value="4711")],
).with_metric_definitions([MetricDefinition(name="validation:ndcg", regex="val_ndcg=([0-9.]+)")])

inputs = [
    InputData(channel_name="train", data_source="s3://search-ranking-data/clicks/2026-11-28/train/"),
    InputData(channel_name="validation", data_source="s3://search-ranking-data/clicks/2026-11-28/validation/"),
]
