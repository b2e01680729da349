"""ApplyTeamChange: the team registry's only writer. `spotline teams apply | rollback | remove`
put a team's proposal in the registry bucket (tagged with who made it), then invoke this
function with {"proposals": [{"team", "versionId"}]}; it validates the registry after the change
against the JSON Schema and the stack, writes the new versions and the index, and brings the job
queue's quota shares in step (`spotline.aws.teams.team_changes`). A refused change writes nothing and
answers each field's reason; the previous versions stay in force. Changes may run at once: the
index is written only if it is still the one a change was validated against, else the change is
validated again, so two cannot both pass the quota totals against the same registry."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common.observability import logger
from spotline.aws.teams.team_changes import apply_proposals, proposals_of
from spotline.aws.teams.team_registry import BUCKET_ENV
from spotline.core.teams.quota_shares import parse_capacity


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    answer = apply_proposals(
        proposals_of(event),
        bucket=os.environ[BUCKET_ENV],
        job_queue=os.environ["JOB_QUEUE"],
        capacity=parse_capacity(os.environ["TRAINING_CAPACITY"]),
    )
    logger.info(
        "Team registry change",
        extra={k: answer.get(k) for k in ("outcome", "versions", "errors", "quotaShares", "quotaShareSeconds")},
    )
    return answer
