"""A local stand-in for AWS Batch service jobs (SAGEMAKER_TRAINING) and the SageMaker training
jobs they start.

moto has no Batch service jobs, and its training jobs finish at once (and write no logs), so the workflow's real
decisions (spot interruptions, MaxWait, capacity errors, progress) could not be exercised. The
stand-in answers those few calls at botocore's `before-send` hook: handlers run unchanged,
botocore parses (and retries) its answers exactly as it would AWS's, and moto serves the rest.

Time comes from the clock passed in. A training job's whole timeline is computed once, when the
job is created, from the weather, the behaviour and the progress restored from its checkpoint
(cut short if it is stopped); every intercepted call then replays events up to `clock()`. No
randomness, no wall clock, no threads.

Batch's side follows what AWS documents for service jobs: a capacity failure of an attempt puts
the job back in RUNNABLE until capacity returns, other failures are retried by the job's
retryStrategy or end it FAILED, each retry being a new training job in `attempts[]` (the wait in
RUNNABLE is `SpotWeather.requeue_wait`); a repeated clientToken is rejected.

`stand_in` wires the parts: `batch/` (Batch's side: `queues`, `shares`, `jobs`, and `capacity`,
the queue's capacity limit shared by its jobs), `sagemaker/` (`training_jobs`, `training_logs`, the
CloudWatch logs a training job writes, `transform_jobs`, `ledger`), both over `base/` (`records`,
`timeline`, a training job's, `spot_weather`, `http_answers`, the hook's responses, `clock`), and
`state_events` (the EventBridge events both send for the jobs' changes). Batch uses SageMaker
(each attempt of a service job is a training job), never the reverse: a layers contract.
"""

from spotline_dev.harness.standin.base.spot_weather import SpotWeather, TrainingBehaviour
from spotline_dev.harness.standin.batch.jobs import ServiceJobView
from spotline_dev.harness.standin.sagemaker.training_jobs import (
    CheckpointStore,
    InMemoryCheckpointStore,
    TrainingJobView,
)
from spotline_dev.harness.standin.stand_in import BatchSageMakerStandIn

__all__ = [
    "BatchSageMakerStandIn",
    "CheckpointStore",
    "InMemoryCheckpointStore",
    "ServiceJobView",
    "SpotWeather",
    "TrainingBehaviour",
    "TrainingJobView",
]
