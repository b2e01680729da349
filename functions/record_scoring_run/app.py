"""RecordScoringRun: the night's end: its metrics (duration, records, throughput, the window's
margin), its measured throughput for the next nights, and its report beside the manifest. After a
step failed ($.failure), it first stops the run's transform jobs still in flight, so none runs
that nothing watches, and tells on-call."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.observability import bind_execution, log_metrics, logger
from spotline.aws.scoring.scoring_runs import ScoringRun, stop_transform_jobs
from spotline.aws.scoring.scoring_steps import notify, record_night, scoring_spec_for_step
from spotline.core.state import Failure, Scoring, ScoringOutcome, TransformJobsStopped
from spotline.core.training.service_jobs import execution_name_of


@log_metrics
@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    source = event["input"]
    spec = scoring_spec_for_step(source)
    scoring = Scoring.in_state(source)
    run = ScoringRun.from_dict(scoring.run.to_state()) if scoring and scoring.run else None
    failure = Failure.in_state(source)
    if failure is not None:
        stopped = stop_transform_jobs(execution_name_of(event["execution"]))
        cause = f"{failure.error}: {str(failure.cause)[:500]}"
        notify(spec, run.run_id if run else "-", "ScoringFailed", f"{cause}; stopped {len(stopped)} transform job(s)")
        return TransformJobsStopped(stopped=stopped, failed_shards=[], window_met=False).to_state()
    assert run is not None
    figures = record_night(spec, run, source, clock.now())
    if figures["failedShards"]:
        notify(spec, run.run_id, "ScoringFailed", f"shard(s) {figures['failedShards']} failed")
    logger.info("Scoring run recorded", extra=figures)
    return ScoringOutcome.from_state(figures).to_state()
