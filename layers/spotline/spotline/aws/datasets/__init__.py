"""What a job reads: dataset readiness (DynamoDB) and the file systems its channels mount."""
