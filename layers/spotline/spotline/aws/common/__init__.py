"""What every adapter shares: boto3 clients, the clock, logging and metrics, the custom resource protocol."""
