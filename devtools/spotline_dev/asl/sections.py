"""The keys each section of the execution state keeps from its step's result, declared once.

A Lambda Task `keeps` its section's keys: its ResultSelector, `builder.result_selector(keys)`,
is `{"<key>.$": "$.Payload.<key>"}` for each key, in this order, and nothing else of the Lambda's
answer reaches the state. A section with a typed record (`spotline.core.state`) keeps its record's
fields (`state_keys`): deleting a field changes the ResultSelector, and the test that holds the
committed files to a fresh build fails until they are built again."""

from __future__ import annotations

from spotline.core.state import (
    ContinuedAs,
    DatasetCheck,
    Fallback,
    JobsStopped,
    LiveRunCheck,
    ManifestCheck,
    Outcome,
    ResourceCheck,
    RunStatus,
    Scoring,
    ScoringOutcome,
    Training,
    TransformJobsStopped,
    keys_of,
    state_keys,
)

# The training lifecycle (statemachines/training_lifecycle.asl.json).

MANIFEST_KEYS = tuple(state_keys(ManifestCheck))
"""$.manifest, from LoadManifest."""

DEPENDENCIES_KEYS = tuple(k.name for _, k in keys_of(DatasetCheck) if not k.omit_none)
"""$.dependencies, from CheckDatasets: its record's keys but the release's, which only DatasetGate's
answer to WaitForDatasets carries (that Task keeps the answer whole; a ResultSelector naming a key
the answer lacks would fail the state)."""

RESOURCES_KEYS = tuple(state_keys(ResourceCheck))
"""$.resources, from ValidateResources."""

LIVE_RUNS_KEYS = tuple(state_keys(LiveRunCheck))
"""$.liveRuns, from CheckNoLiveJob."""

TRAINING_KEYS = tuple(state_keys(Training))
"""$.training, from SubmitTrainingJob: the attempt running now."""

STATUS_KEYS = tuple(state_keys(RunStatus))
"""$.status, from CheckTrainingStatus: the job's status, the decision and the next step."""

CONTINUED_AS_KEYS = tuple(state_keys(ContinuedAs))
"""$.continuedAs, from ContinueInNewExecution."""

FALLBACK_KEYS = tuple(state_keys(Fallback))
"""$.fallback, from StopSpotJob."""

JOBS_STOPPED_KEYS = tuple(state_keys(JobsStopped))
"""$.cleanup (StopTrainingJobAfterError) and $.capacityCleanup (StopJobWithoutCapacity), both from
StopExecutionJobs."""

OUTCOME_KEYS = tuple(state_keys(Outcome))
"""$.outcome, from RecordOutcome."""

# The scoring run (statemachines/scoring_run.asl.json).

SCORING_KEYS = tuple(state_keys(Scoring))
"""$.scoring, from PlanScoringRun and AdvanceScoringRun."""

SCORING_OUTCOME_KEYS = tuple(state_keys(ScoringOutcome))
"""$.outcome, from RecordScoringRun."""

TRANSFORM_JOBS_STOPPED_KEYS = tuple(state_keys(TransformJobsStopped))
"""$.cleanup, from RecordScoringRun called after a failed step (StopTheRunsTransformJobs)."""
