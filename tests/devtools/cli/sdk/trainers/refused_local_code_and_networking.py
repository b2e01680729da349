"""The SDK's shallow test test_inter_container_traffic_encryption (L529-540), as written: code
from a local folder (here this folder) and the encryption between instances set on the trainer.
Spotline refuses both: code comes from an S3 archive, and encryption is the stack's setting."""

from pathlib import Path

from _shallow import compute, trainer_kwargs
from sagemaker.core.training.configs import Networking, SourceCode
from sagemaker.train.model_trainer import ModelTrainer

trainer = ModelTrainer(
    **trainer_kwargs(
        source_code=SourceCode(source_dir=str(Path(__file__).parent), entry_script="_shallow.py"),
        compute=compute(instance_count=2),
        networking=Networking(enable_inter_container_traffic_encryption=True),
    )
)
