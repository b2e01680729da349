"""Spotline: deadline-aware orchestration of SageMaker training on spot capacity.

The domain core (manifest, naming, catalog, policy) is pure Python: no boto3, no clock of
its own, no I/O. AWS access lives in `spotline.aws`; handlers in `functions/` are glue.
"""

__version__ = "0.1.0"
