"""The stand-in's AWS Batch: job queues, quota shares, service jobs."""
