"""Scoring runs on SageMaker Batch Transform: the model, the run's transform jobs, its steps."""
