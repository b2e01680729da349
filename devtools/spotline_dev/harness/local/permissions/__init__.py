"""IAM as AWS evaluates it, for the local stack: every call a function makes, checked against its role."""
