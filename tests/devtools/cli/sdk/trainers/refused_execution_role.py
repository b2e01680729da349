"""Written here (not AWS's): the shallow tests' trainer with the role of AWS's notebooks,
`role=get_execution_role()` (sagemaker-core's session_helper.py), which asks AWS (STS) who runs
the file while the file runs. Spotline refuses it, naming the call, instead of a network error."""

from _shallow import trainer_kwargs
from sagemaker.core.helper.session_helper import get_execution_role
from sagemaker.train.model_trainer import ModelTrainer

trainer = ModelTrainer(**trainer_kwargs(role=get_execution_role()))
