"""The AWS adapters the handlers call: boto3 clients, the handlers' clock, Powertools logging
and metrics, and each piece of glue between an AWS service and the core (S3 manifests and
reports, IAM/ECR/S3 resource checks, Batch and SageMaker status, DynamoDB readiness, intake).
"""
