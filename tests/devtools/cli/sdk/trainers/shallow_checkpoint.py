"""The SDK's shallow test test_checkpoint_config (L420-434): a checkpoint location, with the
local path written with its trailing slash. With the channel of test_single_s3_channel
(L356-364), as a manifest needs one."""

from _shallow import TRAIN_DATA_URI, trainer_kwargs
from sagemaker.core import shapes
from sagemaker.core.training.configs import InputData
from sagemaker.train.model_trainer import ModelTrainer

output_path = "s3://vision-models/shallow-integ-test/output/"
trainer = ModelTrainer(
    **trainer_kwargs(
        checkpoint_config=shapes.CheckpointConfig(
            s3_uri=f"{output_path}checkpoints/",
            local_path="/opt/ml/checkpoints/",
        ),
    )
)

inputs = [InputData(channel_name="train", data_source=TRAIN_DATA_URI)]
