"""PlanScoringRun: the night's scoring run, planned before anything starts: the manifest version
read as a scoring job, the team's allowance and its model checked (a model given as image and
artifact registered, once per content), the input listed, the run sized
(from the last nights' throughput, else the declared one while a probe shard measures it) and
split into shards whose manifest files are written beside its output. A refusal names every
field at once; nothing is started."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from spotline.aws.common import clock
from spotline.aws.common.observability import bind_execution, logger
from spotline.aws.manifest.scoring_intake import night_input
from spotline.aws.scoring.scoring_models import register_model
from spotline.aws.scoring.scoring_runs import MAX_INPUT_OBJECTS, input_objects, plan_run
from spotline.aws.scoring.scoring_steps import admission_problems, scoring_spec_of, throughput_store
from spotline.core.common.errors import ManifestError, summarize
from spotline.core.scoring.scoring import ScoringModel
from spotline.core.state import Scoring, ScoringInput, ScoringPlan, ScoringRunState
from spotline.core.training.service_jobs import execution_name_of

MAX_PROBLEMS_IN_STATE = 20


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    bind_execution(event)
    source = event["input"]
    night = ScoringInput.from_state(source)
    spec, problems = scoring_spec_of(source)
    if spec is not None:
        # The night's data, where the pipeline's Dataset Ready event says it is, under the registered input.
        uri, problems = night_input(spec.input_s3_uri, night.location)
        spec = replace(spec, input_s3_uri=uri)
        problems = problems or admission_problems(spec)
    objects = input_objects(spec.input_s3_uri) if spec is not None and not problems else []
    if spec is not None and not problems and not objects:
        problems = [ManifestError("spec.input.s3Uri", f"no objects under {spec.input_s3_uri}: nothing to score")]
    if len(objects) > MAX_INPUT_OBJECTS:
        problems = [ManifestError("spec.input.s3Uri", f"more than {MAX_INPUT_OBJECTS:,} objects: split it into fewer")]
    parts_given = spec is not None and spec.model.name is None
    if spec is not None and not problems and spec.model.name is None:  # image + artifact: registered now
        registered = register_model(spec)
        if isinstance(registered, ManifestError):
            problems = [registered]
        else:
            spec = replace(spec, model=ScoringModel(name=registered))
    if spec is None or problems:
        logger.warning("Scoring run refused", extra={"problems": [str(p) for p in problems]})
        refused = ScoringPlan(
            valid=False,
            problems=[p.to_dict() for p in problems[:MAX_PROBLEMS_IN_STATE]],
            summary=summarize(problems),
            start_at=None,
        )
        return Scoring(plan=refused, run=None).to_state()
    ready_at = datetime.fromisoformat(night.ready.replace("Z", "+00:00"))
    store = throughput_store()
    recorded = store.recent(spec, str(spec.model.name)) if store else None
    run = plan_run(
        spec,
        ready_at=ready_at,
        now=clock.now(),
        recorded=recorded,
        input_s3_uri=spec.input_s3_uri,
        execution_name=execution_name_of(event["execution"]),
    )
    sizing = run.sizing
    summary = (
        f"{sizing['records']:,} records in {len(run.shards)} shard(s) of {len(objects)} object(s), due "
        f"{run.due}: {sizing['instances']} {spec.instance_type} instance(s) at {sizing['recordsPerSecond']:,.0f} "
        f"records/s each ({sizing['throughputSource']})"
        + (", the first shard alone to measure it" if run.probing else "")
        + (f"; model {run.model} (from its image and artifact)" if parts_given else "")
    )
    logger.info("Scoring run planned", extra={"runId": run.run_id, "sizing": sizing})
    plan = ScoringPlan(
        valid=True, problems=[], job=spec.name, instance_type=spec.instance_type, summary=summary, start_at=run.start
    )
    return Scoring(plan=plan, run=ScoringRunState.from_state(run.to_dict())).to_state()
