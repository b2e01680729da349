"""The tags of a SageMaker resource: whose a training plan or a scoring model is (`spotline:team`).

ListTags "Returns the tags for the specified SageMaker resource" (SageMaker API reference); the
Describe answers of models and training plans carry none (botocore's sagemaker model). A resource
is read in the region its ARN names (a training plan of a peer region there)."""

from __future__ import annotations

from spotline.aws.common.clients import client
from spotline.core.regions.regions import region_of_arn


def sagemaker_tags(arn: str) -> dict[str, str]:
    """Every tag of the resource `arn` (ListTags, all pages), by key."""
    sagemaker = client("sagemaker", region_of_arn(arn) or None)
    tags: dict[str, str] = {}
    request: dict[str, str] = {"ResourceArn": arn}
    while True:
        page = sagemaker.list_tags(**request)
        tags |= {tag["Key"]: tag["Value"] for tag in page.get("Tags") or []}
        if not page.get("NextToken"):
            return tags
        request["NextToken"] = page["NextToken"]
