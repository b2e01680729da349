"""Reports beside the manifest (`reports/<key>.<outcome>.json`), never over it."""

from __future__ import annotations

import json
from typing import Any

from spotline.aws.common.clients import client


def write_report(bucket: str, key: str, report: dict[str, Any]) -> str:
    client("s3").put_object(
        Bucket=bucket,
        Key=key,
        Body=json.dumps(report, indent=2).encode(),
        ContentType="application/json",
        ServerSideEncryption="AES256",
    )
    return f"s3://{bucket}/{key}"
