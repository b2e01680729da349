"""The compute of ModelTrainer.from_recipe's docstring (sagemaker-train/src/sagemaker/train/
model_trainer.py L1239-1268): ml.p5.48xlarge kept warm for an hour, for iterative runs. Without
the recipe (which needs the recipes repository): an image, the role, an output path, a channel.
On demand: SageMaker keeps no warm pools on spot."""

from sagemaker.core.training.configs import Compute, InputData, OutputDataConfig
from sagemaker.train import ModelTrainer

compute = Compute(
    instance_type="ml.p5.48xlarge",
    keep_alive_period_in_seconds=3600,
)
trainer = ModelTrainer(
    training_image="763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5-gpu-py311",
    role="arn:aws:iam::123456789012:role/spotline/llm/fine-tuning",
    compute=compute,
    output_data_config=OutputDataConfig(s3_output_path="s3://llm-models/deepseek-8b/"),
)

inputs = [InputData(channel_name="train", data_source="s3://llm-data/sft/train/")]
