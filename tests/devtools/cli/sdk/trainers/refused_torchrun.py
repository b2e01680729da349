"""The SDK's shallow test test_torchrun_distributed (L489-513): Torchrun on two instances, which
ModelTrainer runs through driver scripts it uploads itself; Spotline refuses it."""

from _shallow import compute, trainer_kwargs
from sagemaker.train.distributed import Torchrun
from sagemaker.train.model_trainer import ModelTrainer

trainer = ModelTrainer(**trainer_kwargs(compute=compute(instance_count=2), distributed=Torchrun()))
