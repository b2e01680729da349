"""What is wrong with an S3 URI's bucket name, in words (pure).

The manifest schema refuses a malformed URI with one pattern; this says which of S3's bucket
naming rules it breaks ("General purpose bucket naming rules", Amazon S3 user guide: "Bucket
names must be between 3 (min) and 63 (max) characters long", "can consist only of lowercase
letters, numbers, periods (.), and hyphens (-)", "must begin and end with a letter or number")."""

from __future__ import annotations

import re

_ALLOWED = re.compile(r"[a-z0-9.-]")


def s3_uri_problem(uri: str) -> str | None:
    """Why `uri` is not an S3 URI S3 would accept, or None when its form is right."""
    if not uri.startswith("s3://"):
        return "it must begin with s3://"
    bucket = uri.removeprefix("s3://").split("/", 1)[0]
    if not bucket:
        return "the bucket name is missing"
    if not 3 <= len(bucket) <= 63:
        return f"the bucket name {bucket!r} has {len(bucket)} characters; S3 bucket names have 3 to 63"
    if bucket != bucket.lower():
        return f"the bucket name {bucket!r} has uppercase letters; S3 bucket names are lowercase"
    wrong = sorted({c for c in bucket if not _ALLOWED.fullmatch(c)})
    if wrong:
        shown = ", ".join(repr(c) for c in wrong)
        return f"the bucket name {bucket!r} has {shown}; S3 bucket names use only a-z, 0-9, '.' and '-'"
    if not (bucket[0].isalnum() and bucket[-1].isalnum()):
        return f"the bucket name {bucket!r} must begin and end with a letter or digit"
    return None
