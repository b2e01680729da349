"""What the stand-in's Batch and SageMaker share: records, clock, weather."""
