"""The opaque page tokens the stand-in's list operations hand out (ListServiceJobs, ListQuotaShares,
ListTrainingJobs): each holds the offset of the next page. What a token the stand-in never returned
gets is each operation's own answer, cited where it raises."""

from __future__ import annotations

import base64
import json


def token_for(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def offset_of(token: str | None) -> int | None:
    """The offset a token holds: 0 without a token, None for one the stand-in never returned."""
    if not token:
        return 0
    try:
        offset = json.loads(base64.urlsafe_b64decode(token.encode()))["offset"]
    except (ValueError, KeyError, TypeError):
        return None
    return offset if isinstance(offset, int) and offset >= 0 else None
