"""The stand-in's SageMaker: training and transform jobs, logs, bills."""
