"""AWS's migration guide, "Framework Estimators -> V3 Equivalent"
(aws/sagemaker-python-sdk@03b3782c5f2c229c50fe0bf7072754dace490b9c, migration.md), as written: a
PyTorch trainer with no role and no output_data_config, for which the SDK asks AWS for the
caller's role and its default bucket while it builds the trainer. Spotline refuses both, naming
them, before the SDK calls AWS. Made concrete: its local ./src folder is this one (the SDK checks
that the folder and the entry script exist)."""

from pathlib import Path

from sagemaker.core import image_uris
from sagemaker.train import ModelTrainer
from sagemaker.train.configs import Compute, SourceCode

# Get framework image
training_image = image_uris.retrieve(
    framework="pytorch",
    region="us-west-2",
    version="1.12.0",
    py_version="py38",
    instance_type="ml.p3.2xlarge",
    image_scope="training",
)

source_code = SourceCode(source_dir=str(Path(__file__).parent), entry_script=Path(__file__).name)

compute = Compute(instance_type="ml.p3.2xlarge", instance_count=1)

trainer = ModelTrainer(
    training_image=training_image,
    source_code=source_code,
    compute=compute,
    hyperparameters={"epochs": 10, "lr": 0.001},
)
