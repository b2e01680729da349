"""The SDK's shallow test test_training_input_modes[FastFile] (L337-348) with the channel of
test_s3_data_source_object (L397-412): the job's mode is FastFile and the channel, an
S3DataSource, states none, so it reads in FastFile mode."""

from _shallow import TRAIN_DATA_URI, trainer_kwargs
from sagemaker.core import shapes
from sagemaker.core.training.configs import InputData
from sagemaker.train.model_trainer import ModelTrainer

trainer = ModelTrainer(**trainer_kwargs(training_input_mode="FastFile"))

data_source = shapes.S3DataSource(
    s3_data_type="S3Prefix",
    s3_uri=TRAIN_DATA_URI,
    s3_data_distribution_type="FullyReplicated",
)
inputs = [InputData(channel_name="train", data_source=data_source)]
