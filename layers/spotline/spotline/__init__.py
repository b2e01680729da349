"""Spotline: deadline-aware orchestration of SageMaker training on spot capacity.

Three parts: `spotline.core` (pure domain), `spotline.aws` (the adapters handlers call) and
`spotline.training` (the helper inside training containers). Handlers in `functions/` are glue.
"""

__version__ = "0.1.0"
