"""The domain core: manifest contract, model, naming, status mapping, deadline policy, cost.

Pure Python: no boto3, no clock of its own (time is passed in), no I/O beyond its own package
data (the JSON Schema and the instance catalog). Lambdas, the CLI, the sandbox and `simulate`
run this same code without mocks. `make architecture` enforces the boundary.
"""
