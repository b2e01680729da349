"""AdvanceScoringRun: one look at a running scoring night: its shards' transform jobs described,
tonight's pace worked out from the finished ones, shards started up to the instances the rest
needs (never one twice), and on-call told once (WindowAtRisk) when even maxInstances cannot make
the window while it is still open."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.observability import bind_execution, logger
from spotline.aws.scoring.scoring_runs import ScoringRun, advance
from spotline.aws.scoring.scoring_steps import notify, scoring_spec_for_step
from spotline.core.spec.model import to_rfc3339
from spotline.core.state import Scoring, ScoringRunState


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    source = event["input"]
    spec = scoring_spec_for_step(source)
    scoring = Scoring.of_state(source)
    if scoring.run is None:
        raise ValueError("$.scoring.run is null: AdvanceScoringRun runs only after a valid plan")
    run = ScoringRun.from_dict(scoring.run.to_state())
    now = clock.now()
    run = advance(spec, run, now=now, notify=lambda kind, why: notify(spec, run.run_id, kind, why))
    logger.info(
        "Scoring run advanced",
        extra={
            "runId": run.run_id,
            "target": run.target,
            "measured": run.measured,
            "done": run.done,
            "nextCheckSeconds": run.next_check_seconds,
        },
    )
    checked = ScoringRunState.from_state(run.to_dict() | {"checkedAt": to_rfc3339(now)})
    return Scoring(plan=scoring.plan, run=checked).to_state()
