"""TagResource on a service job: the tags it adds to those the job has, within the AWS Batch user
guide's "Tag restrictions" (https://docs.aws.amazon.com/batch/latest/userguide/tag-restrictions.html).
The request's own limits (at most 50 tags, key and value lengths) are checked before, by stand_in
(request_problems, TagrisTagsMap); these are the rules that depend on the job's tags or that the
model does not carry."""

from __future__ import annotations

from collections.abc import Mapping

from spotline_dev.harness.standin.base.http_answers import ApiError

MAX_TAGS = 50
RESERVED_PREFIX = "aws:"


def _reserved(text: str) -> bool:
    return text.lower().startswith(RESERVED_PREFIX)


def merged_tags(current: Mapping[str, str] | None, added: Mapping[str, str]) -> dict[str, str]:
    """The job's tags once `added` are applied (TagResource: "If existing tags on a resource aren't
    specified in the request parameters, they aren't changed"), refused as the guide's restrictions say."""
    for key, value in added.items():
        # AWS guide: AWS Batch User Guide, "Tag restrictions": "Don't use aws:, AWS:, or any upper or
        # lowercase combination of such as a prefix for either keys or values, as it is reserved for AWS use."
        if _reserved(key) or _reserved(value):
            raise ApiError(
                "ClientException",
                f"tags: {key}={value}: the prefix aws: (in any case) is reserved for AWS use, in keys and values",
            )
    merged = {**(current or {}), **added}
    # "Tags with this prefix do not count against your tags-per-resource limit." (the same section)
    counted = [key for key in merged if not _reserved(key)]
    # AWS guide: AWS Batch User Guide, "Tag restrictions": "Maximum number of tags per resource ... 50"
    if len(counted) > MAX_TAGS:
        raise ApiError(
            "ClientException",
            f"tags: the job would have {len(counted)} tags, more than the {MAX_TAGS} a resource may have",
        )
    return merged
