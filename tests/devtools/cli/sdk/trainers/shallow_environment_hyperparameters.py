"""The SDK's shallow tests test_environment_variables (L296-306) and
test_hyperparameters_contract (L259-270) in one trainer: an environment, and hyperparameters of
every type, nested ones included, which the SDK encodes as strings; with the channel of
test_single_s3_channel (L356-364), as a manifest needs one."""

from _shallow import CONTRACT_HYPERPARAMETERS, TRAIN_DATA_URI, trainer_kwargs
from sagemaker.core.training.configs import InputData
from sagemaker.train.model_trainer import ModelTrainer

trainer = ModelTrainer(
    **trainer_kwargs(
        environment={"MY_SETTING": "value", "ANOTHER_SETTING": "42"},
        hyperparameters=CONTRACT_HYPERPARAMETERS,
    )
)

inputs = [InputData(channel_name="train", data_source=TRAIN_DATA_URI)]
