"""CheckNoLiveJob: before the first submission, is another run of the same job (team and
metadata.name) still queued or running, here or on the namesake queue of a peer region (an earlier
run's attempt may have been placed there)? Then this one must not start beside it (two jobs would
write to one checkpoint prefix); ResourceValidationFailed says which execution to cancel or wait for."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common.clients import in_region
from spotline.aws.common.observability import bind_execution, logger
from spotline.aws.teams.team_registry import policy_for
from spotline.aws.training.service_jobs import live_runs
from spotline.core.common.errors import summarize
from spotline.core.regions.regions import arn_in_region
from spotline.core.state import LiveRunCheck, ManifestCheck, Problem
from spotline.core.training.service_jobs import execution_name_of, live_run_problem


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    job = ManifestCheck.of_state(event["input"]).job
    if job is None:
        raise ValueError("the execution state has no $.manifest.job: CheckNoLiveJob runs only after LoadManifest")
    queue, share = os.environ["JOB_QUEUE"], policy_for(job.team).share_of(job.team)
    runs = []
    for region in [None, *_peer_regions()]:  # each region's jobs read there
        with in_region(region):
            runs += live_runs(
                arn_in_region(queue, region),
                team=job.team,
                name=job.name,
                execution_name=execution_name_of(event["execution"]),
                quota_share=share,
            )
    problems = [live_run_problem(job.team, job.name, runs)] if runs else []
    if problems:
        logger.warning("Another run of this job is live", extra={"found": [r.to_dict() for r in runs]})
    return LiveRunCheck(
        clear=not runs,
        problems=tuple(Problem.of(p) for p in problems),
        summary=summarize(problems) if problems else f"no other run of {job.team}/{job.name} is queued or running",
        found=tuple(r.to_record() for r in runs),
    ).to_state()


def _peer_regions() -> list[str]:
    """The stack's PeerRegions: the namesake queues a run's attempts may be placed on."""
    return [r for r in os.environ.get("PEER_REGIONS", "").split(",") if r]
