"""The local harness: the AWS stack on moto, the Batch/SageMaker stand-in, the sandbox."""
