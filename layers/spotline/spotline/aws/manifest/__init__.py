"""Manifests in S3 and the runs they start: reading, the spec by reference, reports, intake, rejections."""
