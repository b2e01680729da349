"""One training job on AWS Batch and SageMaker (pure): its request, status, events and service jobs."""
