"""The domain core: manifest contract, model, naming, status mapping, deadline policy, cost.

Pure Python: no boto3, no clock of its own (time is passed in), no I/O beyond package data (the
JSON Schema, the instance price table, and botocore's SageMaker model for the valid instance
types: `catalog`, the one module that imports botocore, for its data only). Lambdas, the CLI,
the sandbox and `simulate` run this same code without mocks. `make architecture` enforces the boundary.
"""
