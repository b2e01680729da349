"""statemachines/scoring_run.asl.json: one night of a ScoringJob manifest (docs/teams/manifests.md,
"Scoring jobs")."""

from __future__ import annotations

from spotline_dev.asl.builder import Choice, Fail, Succeed, Wait, Workflow, lambda_task, when
from spotline_dev.asl.profiles import LAMBDA_STEP, on_error
from spotline_dev.asl.sections import SCORING_KEYS, SCORING_OUTCOME_KEYS, TRANSFORM_JOBS_STOPPED_KEYS

# An error the retries did not mend: stop the run's transform jobs, then fail.
STOP_TRANSFORM_JOBS_THEN_FAIL = (on_error("StopTheRunsTransformJobs"),)


def scoring_run() -> Workflow:
    return Workflow(
        comment=(
            "A scoring run: one night of a ScoringJob manifest on SageMaker Batch Transform, sized to end inside its "
            "window, kept on schedule shard by shard, and recorded. See docs/teams/manifests.md, "
            '"Scoring jobs".'
        ),
        start_at="PlanScoringRun",
        states=(
            lambda_task(
                "PlanScoringRun",
                comment=(
                    "Reads the manifest version as a scoring job, checks the team's allowance and model, lists the "
                    "input, sizes the run and writes its shards' manifest files; starts nothing."
                ),
                function="PlanScoringRun",
                keeps=SCORING_KEYS,
                result_path="$.scoring",
                retry=LAMBDA_STEP,
                catch=STOP_TRANSFORM_JOBS_THEN_FAIL,
                next="IsThePlanValid?",
            ),
            Choice(
                "IsThePlanValid?",
                choices=(when("$.scoring.plan.valid", BooleanEquals=False, next="ScoringManifestRejected"),),
                default="WaitForTheWindowToOpen",
            ),
            Fail(
                "ScoringManifestRejected",
                comment=(
                    "The manifest, the team's allowance or the model refused the run; $.scoring.plan.problems names "
                    "each field."
                ),
                error="ScoringManifestRejected",
                cause_path="$.scoring.plan.summary",
            ),
            Wait(
                "WaitForTheWindowToOpen",
                comment=(
                    "A night's data ready before its window opens waits for it: the window is when scoring may use the "
                    "fleet."
                ),
                timestamp_path="$.scoring.plan.startAt",
                next="AdvanceScoringRun",
            ),
            lambda_task(
                "AdvanceScoringRun",
                comment=(
                    "Describes the shards' transform jobs, works out tonight's pace, starts shards up to the instances "
                    "the rest needs, and sends WindowAtRisk once when even maxInstances cannot make it."
                ),
                function="AdvanceScoringRun",
                keeps=SCORING_KEYS,
                result_path="$.scoring",
                retry=LAMBDA_STEP,
                catch=STOP_TRANSFORM_JOBS_THEN_FAIL,
                next="IsEveryShardScored?",
            ),
            Choice(
                "IsEveryShardScored?",
                choices=(when("$.scoring.run.done", BooleanEquals=True, next="RecordScoringRun"),),
                default="WaitBeforeTheNextLook",
            ),
            Wait("WaitBeforeTheNextLook", seconds_path="$.scoring.run.nextCheckSeconds", next="AdvanceScoringRun"),
            lambda_task(
                "RecordScoringRun",
                comment=(
                    "Publishes the night's metrics, keeps its measured throughput for the next nights and writes its "
                    "report."
                ),
                function="RecordScoringRun",
                keeps=SCORING_OUTCOME_KEYS,
                result_path="$.outcome",
                retry=LAMBDA_STEP,
                catch=STOP_TRANSFORM_JOBS_THEN_FAIL,
                next="DidEveryShardSucceed?",
            ),
            Choice(
                "DidEveryShardSucceed?",
                choices=(when("$.outcome.failedShards[0]", IsPresent=True, next="ScoringFailed"),),
                default="Scored",
            ),
            Fail(
                "ScoringFailed",
                comment="A shard's transform job failed or was stopped; the report lists them and on-call was told.",
                error="ScoringFailed",
                cause=(
                    "a shard's transform job failed or was stopped: see the report ($.outcome.report) and the transform"
                    " jobs' FailureReason"
                ),
            ),
            Succeed("Scored", comment="Every shard scored; $.outcome says whether the window was met."),
            lambda_task(
                "StopTheRunsTransformJobs",
                comment=(
                    "A step failed unexpectedly ($.failure): stops the run's transform jobs still in flight, so none "
                    "runs that nothing watches, and tells on-call. If the stop itself keeps failing, the run still ends"
                    " in ScoringStepFailed ($.cleanupFailure says why) and the rule on the execution's end "
                    "(StopExecutionJobs) stops them."
                ),
                function="RecordScoringRun",
                keeps=TRANSFORM_JOBS_STOPPED_KEYS,
                result_path="$.cleanup",
                retry=LAMBDA_STEP,
                catch=(on_error("ScoringStepFailed", "$.cleanupFailure"),),
                next="ScoringStepFailed",
            ),
            Fail(
                "ScoringStepFailed",
                comment=(
                    "A Spotline step failed unexpectedly; $.failure holds the original error, $.cleanup the transform "
                    "jobs stopped ($.cleanupFailure if they could not be: the execution's end stops them)."
                ),
                error="UnexpectedError",
                cause_path="$.failure.Cause",
            ),
        ),
    )
