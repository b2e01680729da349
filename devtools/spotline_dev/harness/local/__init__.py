"""The Spotline stack in one process (`stack.start_local_stack`): moto for AWS with the stack's
resources created from template.yaml, the real handlers invoked in-process, the real state machine
executed by moto's interpreter, the Batch/SageMaker stand-in, and one virtual clock."""
