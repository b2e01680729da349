"""The job queue's AWS Batch quota shares as Batch lists them (ListQuotaShares, every page).

Apart from `spotline.aws.teams.quota_shares` (which changes them and logs each change) so that
ValidateResources and the developer tools can read shares without making the handlers' logger.
"""

from __future__ import annotations

from typing import Any

from spotline.aws.common.clients import client
from spotline.core.teams.quota_shares import ExistingShare


def existing_shares(job_queue: str, region: str | None = None) -> list[ExistingShare]:
    """Every quota share of the queue, enabled or not (ListQuotaShares, all pages)."""
    batch, shares = client("batch", region), []
    request: dict[str, Any] = {"jobQueue": job_queue, "maxResults": 100}
    while True:
        page = batch.list_quota_shares(**request)
        shares += [ExistingShare.from_detail(detail) for detail in page.get("quotaShares", [])]
        if not page.get("nextToken"):
            return shares
        request["nextToken"] = page["nextToken"]
