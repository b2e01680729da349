"""The keys each section of the execution state keeps from its step's result, declared once.

A Lambda Task `keeps` its section's keys: its ResultSelector, `builder.result_selector(keys)`,
is `{"<key>.$": "$.Payload.<key>"}` for each key, in this order, and nothing else of the Lambda's
answer reaches the state. A key the handler returns but its section does not list here is
dropped before the next step reads it. (These tuples are where the fields of the typed records
of the execution state plug in.)"""

from __future__ import annotations

# The training lifecycle (statemachines/training_lifecycle.asl.json).

MANIFEST_KEYS = ("valid", "missing", "errors", "errorCount", "summary", "report", "job", "specRef")
"""$.manifest, from LoadManifest."""

DEPENDENCIES_KEYS = ("ready", "datasets", "missing")
"""$.dependencies, from CheckDatasets (WaitForDatasets keeps DatasetGate's answer whole)."""

RESOURCES_KEYS = ("valid", "problems", "summary", "regions", "subnets")
"""$.resources, from ValidateResources."""

LIVE_RUNS_KEYS = ("clear", "problems", "summary", "found")
"""$.liveRuns, from CheckNoLiveJob."""

TRAINING_KEYS = (
    "attempt",
    "capacity",
    "instanceType",
    "trainingPlan",
    "jobId",
    "jobArn",
    "jobName",
    "region",
    "regionChoice",
    "checkpointCopy",
    "submittedAt",
    "firstPollSeconds",
    "links",
    "previousAttempts",
)
"""$.training, from SubmitTrainingJob: the attempt running now."""

STATUS_KEYS = (
    "state",
    "finished",
    "reasonClass",
    "reason",
    "batchStatus",
    "secondaryStatus",
    "trainingJobName",
    "instanceType",
    "trainingSeconds",
    "billableSeconds",
    "interruptions",
    "preemptions",
    "capacityShort",
    "queueWaitSeconds",
    "endedAt",
    "progress",
    "decision",
    "action",
    "explanation",
    "nextCapacity",
    "nextInstanceType",
    "nextRegion",
    "regionChoice",
    "nextTrainingPlan",
    "maxPendingSeconds",
    "capacityWaitSeconds",
    "deadlineAtRisk",
    "backoffSeconds",
    "finishReason",
    "checkedAt",
    "nextPollSeconds",
    "nextCheckReason",
    "checks",
    "links",
)
"""$.status, from CheckTrainingStatus: the job's status, the decision and the next step."""

CONTINUED_AS_KEYS = ("executionName", "executionArn", "retagged")
"""$.continuedAs, from ContinueInNewExecution."""

FALLBACK_KEYS = ("jobId", "capacity", "terminated", "reason", "at", "notified")
"""$.fallback, from StopSpotJob."""

JOBS_STOPPED_KEYS = ("stopped", "checked", "at")
"""$.cleanup (StopTrainingJobAfterError) and $.capacityCleanup (StopJobWithoutCapacity), both from
StopExecutionJobs."""

OUTCOME_KEYS = ("name", "succeeded", "cause", "next_step", "figures", "report", "notified")
"""$.outcome, from RecordOutcome."""

# The scoring run (statemachines/scoring_run.asl.json).

SCORING_KEYS = ("plan", "run")
"""$.scoring, from PlanScoringRun and AdvanceScoringRun."""

SCORING_OUTCOME_KEYS = (
    "windowMet",
    "windowEnd",
    "finishedAt",
    "durationSeconds",
    "marginSeconds",
    "instances",
    "recordsPerSecond",
    "failedShards",
    "report",
)
"""$.outcome, from RecordScoringRun."""

TRANSFORM_JOBS_STOPPED_KEYS = ("stopped",)
"""$.cleanup, from RecordScoringRun called after a failed step (StopTheRunsTransformJobs)."""
