"""The SDK's shallow test test_training_input_modes[FastFile] (L337-348) with the channel of
test_single_s3_channel (L356-364). The SDK gives a channel built from a URI an explicit
InputMode File, which overrides the job's FastFile: the manifest says File, as SageMaker would
read it."""

from _shallow import TRAIN_DATA_URI, trainer_kwargs
from sagemaker.core.training.configs import InputData
from sagemaker.train.model_trainer import ModelTrainer

trainer = ModelTrainer(**trainer_kwargs(training_input_mode="FastFile"))

inputs = [InputData(channel_name="train", data_source=TRAIN_DATA_URI)]
