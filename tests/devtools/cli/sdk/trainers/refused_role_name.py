"""Written here (not AWS's): the shallow tests' trainer with its role given by name, which the SDK
accepts ("User-supplied role name or ARN", sagemaker-core's iam_role_resolver.py) and turns into
an ARN with IAM GetRole. Spotline refuses it, asking for the ARN."""

from _shallow import trainer_kwargs
from sagemaker.train.model_trainer import ModelTrainer

trainer = ModelTrainer(**trainer_kwargs(role="SageMakerRole"))
