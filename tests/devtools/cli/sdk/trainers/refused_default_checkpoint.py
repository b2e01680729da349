"""The examples of ModelTrainer.with_checkpoint_config and with_tensorboard_output_config
(sagemaker-train/src/sagemaker/train/model_trainer.py, their docstrings: `ModelTrainer(...)
.with_checkpoint_config()`), on the shallow tests' trainer: with no S3 URI the SDK puts both in
its default bucket, which it looks up in AWS when it builds the request. Spotline refuses both."""

from _shallow import trainer_kwargs
from sagemaker.train.model_trainer import ModelTrainer

trainer = ModelTrainer(**trainer_kwargs()).with_checkpoint_config().with_tensorboard_output_config()
