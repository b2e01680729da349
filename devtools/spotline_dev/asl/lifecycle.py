"""statemachines/training_lifecycle.asl.json: one manifest version from upload to outcome (see the
Comment below and docs/on-call/what-happens-to-an-upload.md)."""

from __future__ import annotations

from spotline_dev.asl.builder import (
    SNS_PUBLISH,
    Catcher,
    Choice,
    Fail,
    Pass,
    Succeed,
    Task,
    Wait,
    Workflow,
    all_of,
    lambda_task,
    when,
)
from spotline_dev.asl.profiles import (
    ALERT,
    EVENT_WAIT,
    LAMBDA_STEP,
    LAMBDA_WAIT,
    MANIFEST_READ,
    OUTCOME_RECORDING,
    STATUS_CHECK,
    STOP_JOBS,
    SUBMISSION,
    on_error,
    on_timeout,
)
from spotline_dev.asl.sections import (
    CONTINUED_AS_KEYS,
    DEPENDENCIES_KEYS,
    FALLBACK_KEYS,
    JOBS_STOPPED_KEYS,
    LIVE_RUNS_KEYS,
    MANIFEST_KEYS,
    OUTCOME_KEYS,
    RESOURCES_KEYS,
    STATUS_KEYS,
    TRAINING_KEYS,
)

# Where an error the retries did not mend goes: before a job can exist, RecordOutcome ends the run
# in UnexpectedError; once one may, StopTrainingJobAfterError stops the run's jobs first.
RECORD_THE_FAILURE = (on_error("RecordOutcome"),)
STOP_JOBS_THEN_FAIL = (on_error("StopTrainingJobAfterError"),)


# The named ends RecordOutcome's $.outcome.name leads to, each a Fail of that name whose cause is
# $.outcome.cause (TrainingSucceeded succeeds; any other name is an UnexpectedError).
OUTCOME_FAILURES = {
    "ResourceValidationFailed": (
        "A resource the manifest names is missing or not allowed; the cause lists each with its manifest field."
    ),
    "TrainingFailed": (
        "SageMaker training failed and was not retried (algorithm or client errors never are). See the cause, then the "
        "logs link in $.status.links."
    ),
    "SpotCapacityExhausted": (
        "A spot-only job ran out of spot attempts (capacity or maxWait each time). The cause says how many; "
        "docs/runbook.md lists the options."
    ),
    "CapacityUnavailable": (
        "No capacity of any of the job's instance types (spot or on-demand) came before its deadline; the job was "
        "stopped and on-call had DeadlineAtRisk while the deadline was still ahead. The cause says what was tried; "
        "docs/runbook.md lists the options."
    ),
    "DeadlineMissed": (
        "Training completed, but after the deadline: the model is in the output location. The outcome report shows "
        "attempts, interruptions and the fallback."
    ),
    "DependencyTimeout": (
        "The datasets in spec.dependsOn were not all ready before spec.dependencyTimeout. Check with the preprocessing "
        "pipeline, then upload the manifest again."
    ),
}


def training_lifecycle() -> Workflow:
    return Workflow(
        comment=(
            "Spotline training lifecycle for one manifest version: validate the manifest, wait for the datasets it "
            "depends on, validate the resources it names, queue the training on AWS Batch (spot first, checkpointed), "
            "follow it, resubmit from the checkpoint after spot interruptions with back-off, move to on-demand when the"
            " deadline is at risk, and record the outcome. An unexpected error after submission first stops the run's "
            "training jobs; every path ends in a named Fail or Succeed state. Each step adds its result under its own "
            "key ($.manifest, $.dependencies, $.resources, $.liveRuns, $.training, $.status, $.fallback, $.cleanup, "
            "$.outcome)."
        ),
        start_at="IsItAContinuation?",
        states=(
            Choice(
                "IsItAContinuation?",
                comment=(
                    "A run that outgrew one execution's share of status checks continues in a fresh execution, started "
                    "by ContinueInNewExecution with the run's state, whose $.continuedFrom names the execution before "
                    "(null for a run Intake starts)."
                ),
                choices=(when("$.continuedFrom", IsNull=False, next="ResumeWatching"),),
                default="LoadManifest",
            ),
            Pass(
                "ResumeWatching",
                comment=(
                    "Takes the run's state as it stood in the execution before ($.continuedFrom) and goes back to "
                    "watching its training job."
                ),
                next="CheckTrainingStatus",
            ),
            lambda_task(
                "LoadManifest",
                comment=(
                    "Reads the exact manifest version and validates it against the spotline/v1 schema and rules. Valid:"
                    " stores the normalized spec once as specs/<execution>.json in the ingest bucket; the state carries"
                    " its reference ($.manifest.specRef, version and sha256 pinned) and a short summary "
                    "($.manifest.job), never the spec, so it stays far below the 256 KiB state limit. Invalid: writes "
                    "reports/<key>.rejected.json with every error; the state keeps the first 20 and "
                    "$.manifest.errorCount. Deleted before it was read: $.manifest.missing (ManifestNotFound)."
                ),
                function="LoadManifest",
                keeps=MANIFEST_KEYS,
                result_path="$.manifest",
                retry=MANIFEST_READ,
                catch=RECORD_THE_FAILURE,
                next="IsManifestValid?",
            ),
            Choice(
                "IsManifestValid?",
                choices=(
                    when("$.manifest.valid", BooleanEquals=True, next="DoesItDependOnDatasets?"),
                    when("$.manifest.missing", BooleanEquals=True, next="ManifestNotFound"),
                ),
                default="ManifestInvalid",
            ),
            Fail(
                "ManifestNotFound",
                comment=(
                    "The manifest version this execution was started for no longer exists: it was deleted (or expired "
                    "by a lifecycle rule) before LoadManifest read it. The cause names it. Nothing was queued and no "
                    "report was written; upload the manifest again if the run is still wanted. (S3 refusing the read is"
                    " not this: that is UnexpectedError with ManifestUnreadable in $.failure.)"
                ),
                error="ManifestNotFound",
                cause_path="$.manifest.summary",
            ),
            Fail(
                "ManifestInvalid",
                comment=(
                    "The manifest breaks the spotline/v1 contract. The cause lists the errors (the first 20 of "
                    "$.manifest.errorCount); the report at $.manifest.report has every one. Fix the manifest and upload"
                    " it again."
                ),
                error="ManifestInvalid",
                cause_path="$.manifest.summary",
            ),
            Choice(
                "DoesItDependOnDatasets?",
                comment=(
                    "Manifests with spec.dependsOn ($.manifest.job.dependsOnDatasets) wait for their datasets (Dataset "
                    "Ready events from the preprocessing pipeline)."
                ),
                choices=(when("$.manifest.job.dependsOnDatasets", BooleanEquals=True, next="CheckDatasets"),),
                default="ValidateResources",
            ),
            lambda_task(
                "CheckDatasets",
                comment=(
                    "Looks up whether every dataset in spec.dependsOn is already recorded as ready: then there is no "
                    "wait."
                ),
                function="CheckDatasets",
                keeps=DEPENDENCIES_KEYS,
                result_path="$.dependencies",
                retry=LAMBDA_STEP,
                catch=RECORD_THE_FAILURE,
                next="AreDatasetsReady?",
            ),
            Choice(
                "AreDatasetsReady?",
                choices=(when("$.dependencies.ready", BooleanEquals=True, next="ValidateResources"),),
                default="WaitForDatasets",
            ),
            lambda_task(
                "WaitForDatasets",
                comment=(
                    "Waits (task token) until DatasetGate sees a Dataset Ready event for every dataset in "
                    "$.dependencies.missing, or until spec.dependencyTimeout."
                ),
                function="WaitForDatasets",
                wait_for_token=True,
                timeout_seconds_path="$.manifest.job.dependencyTimeoutSeconds",
                result_path="$.dependencies",
                retry=LAMBDA_WAIT,
                catch=(on_timeout("RecordOutcome", "$.dependencyTimeout"), *RECORD_THE_FAILURE),
                next="ValidateResources",
            ),
            lambda_task(
                "ValidateResources",
                comment=(
                    "Checks the role (and its trust in SageMaker), the image, the input data, the output and checkpoint"
                    " buckets, the team's allowance and the job queue; reports every problem at once."
                ),
                function="ValidateResources",
                keeps=RESOURCES_KEYS,
                result_path="$.resources",
                retry=LAMBDA_STEP,
                catch=RECORD_THE_FAILURE,
                next="CheckNoLiveJob",
            ),
            lambda_task(
                "CheckNoLiveJob",
                comment=(
                    "Is another run of this job (same team and metadata.name, started by another execution) still "
                    "queued or running? Then this run must not start beside it: two jobs would write to one checkpoint "
                    "prefix. $.liveRuns.problems names the execution to cancel or wait for (path metadata.name, "
                    "ResourceValidationFailed)."
                ),
                function="CheckNoLiveJob",
                keeps=LIVE_RUNS_KEYS,
                result_path="$.liveRuns",
                retry=LAMBDA_STEP,
                catch=RECORD_THE_FAILURE,
                next="AreResourcesValid?",
            ),
            Choice(
                "AreResourcesValid?",
                comment=(
                    "Submit only when every resource is available ($.resources) and no other run of the job is live "
                    "($.liveRuns); otherwise RecordOutcome ends the run in ResourceValidationFailed with every problem."
                ),
                choices=(
                    all_of(
                        when("$.resources.valid", BooleanEquals=True),
                        when("$.liveRuns.clear", BooleanEquals=True),
                        next="SubmitTrainingJob",
                    ),
                ),
                default="RecordOutcome",
            ),
            lambda_task(
                "SubmitTrainingJob",
                comment=(
                    "Queues the SageMaker training job on the AWS Batch SAGEMAKER_TRAINING queue (idempotent per "
                    "execution and attempt). A runtime that died mid-call is retried: the clientToken makes Batch "
                    "return the job already created. Before an attempt in another region it copies the checkpoint "
                    "there, a bounded share per invocation: CheckpointCopyIncomplete is retried at once and the copy "
                    "goes on where it stopped."
                ),
                function="SubmitTrainingJob",
                keeps=TRAINING_KEYS,
                result_path="$.training",
                retry=SUBMISSION,
                catch=STOP_JOBS_THEN_FAIL,
                next="WaitForJobToStart",
            ),
            Wait("WaitForJobToStart", seconds_path="$.training.firstPollSeconds", next="CheckTrainingStatus"),
            lambda_task(
                "CheckTrainingStatus",
                comment=(
                    "Reads the Batch service job, the SageMaker training job and progress.json; normalizes them into "
                    "one status, asks the deadline policy whether spot can still make the deadline, and says what "
                    "happens next ($.status.action, $.status.explanation) and when to look again. A failure is retried "
                    "twice (it only reads); then StopTrainingJobAfterError stops the job before the run fails."
                ),
                function="CheckTrainingStatus",
                keeps=STATUS_KEYS,
                result_path="$.status",
                retry=STATUS_CHECK,
                catch=STOP_JOBS_THEN_FAIL,
                next="WhatShouldHappenNext?",
            ),
            Choice(
                "WhatShouldHappenNext?",
                comment="Routes on $.status.action; $.status.explanation says why.",
                choices=(
                    when("$.status.action", StringEquals="keep-waiting", next="WaitForTrainingEvent"),
                    when("$.status.action", StringEquals="resubmit-on-spot", next="BackOffBeforeResubmitting"),
                    when("$.status.action", StringEquals="resubmit-on-demand", next="BackOffBeforeResubmitting"),
                    when("$.status.action", StringEquals="switch-to-on-demand", next="StopSpotJob"),
                    when("$.status.action", StringEquals="return-to-spot", next="StopSpotJob"),
                    when("$.status.action", StringEquals="switch-to-training-plan", next="StopSpotJob"),
                    when("$.status.action", StringEquals="move-to-another-type", next="StopSpotJob"),
                    when("$.status.action", StringEquals="move-to-another-zone", next="StopSpotJob"),
                    when("$.status.action", StringEquals="move-to-another-region", next="StopSpotJob"),
                    when("$.status.action", StringEquals="give-up", next="StopJobWithoutCapacity"),
                    when("$.status.action", StringEquals="continue-in-new-execution", next="ContinueInNewExecution"),
                ),
                default="RecordOutcome",
            ),
            lambda_task(
                "WaitForTrainingEvent",
                comment=(
                    "Waits for the training job's next change (task token): TrainingEventGate releases it within "
                    "seconds of a Batch or SageMaker event (end, failure, spot stop, interruption). The timeout is the "
                    "next timed check: the moment the deadline policy would act if nothing changed, and never later "
                    "than the safety interval ($.status.nextPollSeconds, $.status.nextCheckReason)."
                ),
                function="WaitForTrainingEvent",
                wait_for_token=True,
                payload={
                    "execution.$": "$$.Execution.Id",
                    "taskToken.$": "$$.Task.Token",
                    "checkedAt.$": "$.status.checkedAt",
                    "timeoutSeconds.$": "$.status.nextPollSeconds",
                },
                timeout_seconds_path="$.status.nextPollSeconds",
                result_path="$.wakeUp",
                retry=EVENT_WAIT,
                catch=(on_timeout("CheckTrainingStatus", "$.wakeUp"), *STOP_JOBS_THEN_FAIL),
                next="CheckTrainingStatus",
            ),
            lambda_task(
                "ContinueInNewExecution",
                comment=(
                    "This execution made its share of status checks (lifecycle.CHECKS_PER_EXECUTION): a fresh execution"
                    " <first>-c<n> takes over the watch with the run's state, and the training job is tagged "
                    "spotline:execution=<it>, so this one's end stops nothing. If the hand-over keeps failing, this "
                    "execution keeps watching (it is far from the 25,000-event limit) and tries again at the next "
                    "check."
                ),
                function="ContinueInNewExecution",
                keeps=CONTINUED_AS_KEYS,
                result_path="$.continuedAs",
                retry=LAMBDA_STEP,
                catch=(on_error("WaitForTrainingEvent", "$.continuationFailure"),),
                next="ContinuedInNewExecution",
            ),
            Wait(
                "BackOffBeforeResubmitting",
                comment=(
                    "Spot ended the job (capacity or maxWait), or Batch ended an on-demand attempt's wait for capacity "
                    "(the queue's time limit): exponential back-off with full jitter from the manifest's retry "
                    "settings, then a new attempt on the same tier from the same checkpoint."
                ),
                seconds_path="$.status.backoffSeconds",
                next="SubmitTrainingJob",
            ),
            lambda_task(
                "StopSpotJob",
                comment=(
                    "The deadline is at risk or spot attempts are exhausted (a training plan with free reserved "
                    "capacity next, else on-demand), or spot capacity of the job's instance type is gone (spot on the "
                    "next of its alternatives next), or an on-demand job's slack pays for a return to the spot "
                    "capacity the fleet sees again: terminates the current job (its training saves a last checkpoint "
                    "on SIGTERM) before the next attempt resumes from it. Its alert is best effort: a failed publish "
                    "never skips the next attempt. If the terminate itself keeps failing, StopTrainingJobAfterError "
                    "stops every job of the run before it fails."
                ),
                function="StopTrainingJob",
                keeps=FALLBACK_KEYS,
                result_path="$.fallback",
                retry=LAMBDA_STEP,
                catch=STOP_JOBS_THEN_FAIL,
                next="SubmitTrainingJob",
            ),
            lambda_task(
                "StopJobWithoutCapacity",
                comment=(
                    "No capacity of any of the job's instance types came by its deadline: terminates the run's service "
                    "jobs still queued or running (the same function as StopTrainingJobAfterError) so nothing waits on "
                    "unwatched, then the run ends in CapacityUnavailable."
                ),
                function="StopExecutionJobs",
                keeps=JOBS_STOPPED_KEYS,
                result_path="$.capacityCleanup",
                retry=STOP_JOBS,
                catch=STOP_JOBS_THEN_FAIL,
                next="RecordOutcome",
            ),
            lambda_task(
                "StopTrainingJobAfterError",
                comment=(
                    "An unexpected error after a job may have been submitted: terminates every service job of this "
                    "execution still queued or running (the job ids in $.training, and the queue's jobs named "
                    "<execution>-a*, confirmed by their spotline:execution tag) before the run ends in UnexpectedError,"
                    " so nothing trains on unwatched. Idempotent and retried; if it still fails, $.cleanupFailure says "
                    "so and the end-of-execution rule and the 15-minute reconciler try again."
                ),
                function="StopExecutionJobs",
                keeps=JOBS_STOPPED_KEYS,
                result_path="$.cleanup",
                retry=STOP_JOBS,
                catch=(on_error("RecordOutcome", "$.cleanupFailure"),),
                next="RecordOutcome",
            ),
            lambda_task(
                "RecordOutcome",
                comment=(
                    "Reads the run's bills from its training jobs once they have ended (BillingNotSettled while one is "
                    "still stopping: tried again every 30 s for 2 minutes, SageMaker's stop grace; bills it cannot "
                    "read, BillsNotRead, tried 3 more times, then the run recorded with its cost unknown), publishes "
                    "metrics, writes reports/<key>.outcome.json and, when the run failed, tells on-call what failed, "
                    "why and where to look. If it still fails after its retries, OutcomeNotRecorded alerts on-call "
                    "straight from the state machine (no Lambda) and ends the run under that name."
                ),
                function="RecordOutcome",
                keeps=OUTCOME_KEYS,
                result_path="$.outcome",
                retry=OUTCOME_RECORDING,
                catch=(
                    Catcher(("BillingNotSettled",), "$.billingNotSettled", "RecordOutcomeWithBillsPending"),
                    Catcher(("BillsNotRead",), "$.billsNotRead", "RecordOutcomeWithoutBills"),
                    on_error("DescribeUnrecordedOutcome", "$.recordFailure"),
                ),
                next="WhatWasTheOutcome?",
            ),
            Pass(
                "RecordOutcomeWithBillsPending",
                comment=(
                    "A training job of the run had still not ended after RecordOutcome's tries ($.billingNotSettled): "
                    "the outcome is recorded now, billing_settled false and its cost unknown (the job that has not "
                    "ended named), never the ended jobs' part alone."
                ),
                next="RecordOutcome",
            ),
            Pass(
                "RecordOutcomeWithoutBills",
                comment=(
                    "The run's bills could still not be read after RecordOutcome's tries (BillsNotRead, in "
                    "$.billsNotRead): record the run once more, its cost as unknown (null, with the reason), never "
                    "$0.00."
                ),
                next="RecordOutcome",
            ),
            Pass(
                "DescribeUnrecordedOutcome",
                comment=(
                    "RecordOutcome failed: no outcome report, no metric, maybe no alert. Builds the cause of "
                    "OutcomeNotRecorded from what every execution state has (the execution input and the caught error)."
                ),
                parameters={
                    "cause.$": (
                        "States.Format('the outcome could not be recorded: RecordOutcome failed with {}: {}. No outcome"
                        " report was written for s3://{}/{}; the training itself may have succeeded (see the status in "
                        "the execution).', $.recordFailure.Error, $.recordFailure.Cause, $.bucket, $.key)"
                    )
                },
                result_path="$.outcomeNotRecorded",
                next="AlertOutcomeNotRecorded",
            ),
            Task(
                "AlertOutcomeNotRecorded",
                comment=(
                    "Tells on-call and the team (message attributes team and outcome, like every Spotline alert) "
                    "through SNS directly, since the Lambda that normally does it is what failed."
                ),
                resource=SNS_PUBLISH,
                parameters={
                    "TopicArn": "${AlertTopicArn}",
                    "Subject.$": "States.Format('[Spotline] OutcomeNotRecorded: {}', $.team)",
                    "Message": {
                        "what": (
                            "Spotline could not record the outcome of a training run (no outcome report, no metrics)."
                        ),
                        "team.$": "$.team",
                        "manifest.$": "$.key",
                        "execution.$": "$$.Execution.Id",
                        "why.$": "$.outcomeNotRecorded.cause",
                        "nextStep": (
                            "See docs/runbook.md, OutcomeNotRecorded: read the run's status in the execution, fix "
                            "RecordOutcome (its logs carry the execution ARN), then record the outcome by invoking "
                            "RecordOutcome with the state of the OutcomeNotRecorded step."
                        ),
                    },
                    "MessageAttributes": {
                        "team": {"DataType": "String", "StringValue.$": "$.team"},
                        "outcome": {"DataType": "String", "StringValue": "OutcomeNotRecorded"},
                    },
                },
                result_path=None,
                retry=ALERT,
                catch=(on_error("OutcomeNotRecorded", "$.alertFailure"),),
                next="OutcomeNotRecorded",
            ),
            Choice(
                "WhatWasTheOutcome?",
                choices=(
                    when("$.outcome.name", StringEquals="TrainingSucceeded", next="TrainingSucceeded"),
                    *(when("$.outcome.name", StringEquals=name, next=name) for name in OUTCOME_FAILURES),
                ),
                default="UnexpectedError",
            ),
            Succeed(
                "TrainingSucceeded", comment="The model is in the output location; $.outcome has cost and savings."
            ),
            Succeed(
                "ContinuedInNewExecution",
                comment=(
                    "The run goes on in the execution named in $.continuedAs (its history starts at IsItAContinuation? "
                    "-> ResumeWatching)."
                ),
            ),
            *(
                Fail(name, comment=comment, error=name, cause_path="$.outcome.cause")
                for name, comment in OUTCOME_FAILURES.items()
            ),
            Fail(
                "UnexpectedError",
                comment=(
                    "A Spotline step failed unexpectedly; $.failure holds the original error. Any training job of this "
                    "run was stopped first (StopTrainingJobAfterError, $.cleanup); the cause says so. See "
                    "docs/runbook.md."
                ),
                error="UnexpectedError",
                cause_path="$.outcome.cause",
            ),
            Fail(
                "OutcomeNotRecorded",
                comment=(
                    "RecordOutcome failed after its retries, so the run has no report: the cause says why and whether "
                    "the training ran. docs/runbook.md says how to record it afterwards."
                ),
                error="OutcomeNotRecorded",
                cause_path="$.outcomeNotRecorded.cause",
            ),
        ),
    )
