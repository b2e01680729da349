"""The SDK's shallow test test_managed_spot_training (L436-461): managed spot, MaxWait equal to
MaxRuntime, plus the checkpoint location of test_checkpoint_config (L420-434), which a spot
manifest needs. With the channel of test_single_s3_channel (L356-364), as a manifest needs one."""

from _shallow import (
    DEFAULT_INSTANCE_COUNT,
    DEFAULT_INSTANCE_TYPE,
    MAX_RUNTIME_IN_SECONDS,
    TRAIN_DATA_URI,
    trainer_kwargs,
)
from sagemaker.core import shapes
from sagemaker.core.training.configs import Compute, InputData
from sagemaker.train.model_trainer import ModelTrainer

compute = Compute(
    instance_type=DEFAULT_INSTANCE_TYPE,
    instance_count=DEFAULT_INSTANCE_COUNT,
    enable_managed_spot_training=True,
)
trainer = ModelTrainer(
    **trainer_kwargs(
        compute=compute,
        stopping_condition=shapes.StoppingCondition(
            max_runtime_in_seconds=MAX_RUNTIME_IN_SECONDS,
            max_wait_time_in_seconds=MAX_RUNTIME_IN_SECONDS,
        ),
        checkpoint_config=shapes.CheckpointConfig(
            s3_uri="s3://vision-models/shallow-integ-test/output/checkpoints/",
            local_path="/opt/ml/checkpoints/",
        ),
    )
)

inputs = [InputData(channel_name="train", data_source=TRAIN_DATA_URI)]
