"""The Retry and Catch profiles, named once: each Task says which it uses.

A retrier is one entry of a Task's Retry; a profile is a Task's whole Retry list, in the order
Step Functions tries them (the first entry whose errors match applies). The waits of the FULL
jitter ones are drawn between 0 and IntervalSeconds * BackoffRate^n, capped by MaxDelaySeconds."""

from __future__ import annotations

from dataclasses import replace

from spotline_dev.asl.builder import Catcher, Retrier

LAMBDA_SERVICE_ERRORS = (
    "Lambda.ClientExecutionTimeoutException",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
)
STEP_ERRORS = ("States.TaskFailed", "States.Timeout")

# The retriers.

TRANSIENT_LAMBDA = Retrier(
    (*LAMBDA_SERVICE_ERRORS, "TransientAwsError"), attempts=6, interval=2, backoff=2, max_delay=60, full_jitter=True
)
"""The Lambda service's own failures, and TransientAwsError (an AWS call throttled or refused for a
while): up to 6 more tries, 2 s doubling, never more than a minute apart. First in every Lambda Task."""

STEP_FAILED = Retrier(STEP_ERRORS, attempts=2, interval=5, backoff=2, max_delay=60, full_jitter=True)
"""Any other failure of a step: tried twice more (waits up to 5 s, then 10 s).

ContinueInNewExecution and StopSpotJob had this entry without MaxDelaySeconds: with two tries of
at most 5 s and 10 s the 60 s cap is never reached, so they share it unchanged in behaviour."""

STATUS_CHECK_FAILED = Retrier(STEP_ERRORS, attempts=2, interval=30, backoff=2, full_jitter=True)
"""CheckTrainingStatus only reads: tried twice more, further apart (up to 30 s, then 60 s), since
the job trains on meanwhile."""

STOP_FAILED = Retrier(STEP_ERRORS, attempts=3, interval=5, backoff=2, full_jitter=True)
"""Stopping a run's jobs: once more than a step (up to 5, 10, 20 s), since a job left running is
billed."""

RUNTIME_DIED = Retrier(
    ("Lambda.Unknown", "Runtime.ExitError", "Sandbox.Timedout"), attempts=3, interval=5, backoff=2, full_jitter=True
)
"""SubmitTrainingJob's runtime died mid-call: safe to repeat, the clientToken returns the job Batch
already created."""

CHECKPOINT_COPY_INCOMPLETE = Retrier(("CheckpointCopyIncomplete",), attempts=100, interval=1, backoff=1)
"""SubmitTrainingJob copies a checkpoint to another region a bounded share per call: call again at
once, the copy goes on where it stopped."""

BILLING_NOT_SETTLED = Retrier(("BillingNotSettled",), attempts=4, interval=30, backoff=1)
"""A training job of the run is still stopping: every 30 s for 2 minutes (SageMaker's stop grace)."""

BILLS_NOT_READ = Retrier(("BillsNotRead",), attempts=3, interval=30, backoff=2, max_delay=120, full_jitter=True)
"""The run's bills could not be read: 3 more tries, up to 2 minutes apart."""

ALERT_FAILED = Retrier(("States.ALL",), attempts=3, interval=2, backoff=2, full_jitter=True)
"""A publish to the alert topic straight from the state machine (no Lambda): any error, 3 more tries."""


def never(*errors: str) -> Retrier:
    """Errors no retry can mend (a manifest S3 refuses to hand over, a request SageMaker refuses):
    listed before STEP_FAILED so that it does not retry them."""
    return Retrier(errors, attempts=0)


def waiting_for_a_token(retrier: Retrier) -> Retrier:
    """The retrier without States.Timeout: on a Task that waits for a task token, the timeout is the
    wait's end, which its Catch handles, never a failure to retry."""
    return replace(retrier, errors=tuple(error for error in retrier.errors if error != "States.Timeout"))


# The profiles: a Task's whole Retry list.

LAMBDA_STEP = (TRANSIENT_LAMBDA, STEP_FAILED)
"""A Lambda step: its transient failures, then any other twice."""

LAMBDA_WAIT = (TRANSIENT_LAMBDA, waiting_for_a_token(STEP_FAILED))
"""A Lambda step that hands out a task token (WaitForDatasets)."""

STATUS_CHECK = (TRANSIENT_LAMBDA, STATUS_CHECK_FAILED)
"""CheckTrainingStatus."""

EVENT_WAIT = (TRANSIENT_LAMBDA, waiting_for_a_token(STATUS_CHECK_FAILED))
"""WaitForTrainingEvent: the next look at the job, so retried as the status check is."""

STOP_JOBS = (TRANSIENT_LAMBDA, STOP_FAILED)
"""StopExecutionJobs, after an error or when no capacity came."""

MANIFEST_READ = (TRANSIENT_LAMBDA, never("ManifestUnreadable"), STEP_FAILED)
"""LoadManifest: S3 refusing the read (ManifestUnreadable) is an UnexpectedError at once."""

SUBMISSION = (CHECKPOINT_COPY_INCOMPLETE, TRANSIENT_LAMBDA, RUNTIME_DIED, never("TrainingRequestInvalid"), STEP_FAILED)
"""SubmitTrainingJob: a request SageMaker refuses (TrainingRequestInvalid) is never retried."""

OUTCOME_RECORDING = (TRANSIENT_LAMBDA, BILLING_NOT_SETTLED, BILLS_NOT_READ, STEP_FAILED)
"""RecordOutcome: its Catch takes BillingNotSettled and BillsNotRead on when their tries run out."""

ALERT = (ALERT_FAILED,)
"""A publish to the alert topic (AlertOutcomeNotRecorded)."""


# The catchers (each names the state it leads to, so the machines compose their own).


def on_error(next: str, result_path: str = "$.failure") -> Catcher:
    """Any error the retries did not mend: kept at `result_path`, then `next`."""
    return Catcher(("States.ALL",), result_path, next)


def on_timeout(next: str, result_path: str) -> Catcher:
    """The Task's timeout (a task-token wait that ran out)."""
    return Catcher(("States.Timeout",), result_path, next)
