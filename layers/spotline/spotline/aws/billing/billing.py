"""Reading a run's bills from AWS: every Batch attempt's SageMaker training jobs, described again
(`spotline.core.billing.billing` says why: SageMaker sets the billed figures only once a job has ended)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from spotline.aws.common.clients import client, error_code, in_region
from spotline.aws.manifest.spec_store import SpecUnavailable, spec_of
from spotline.aws.regions.regions import spec_at
from spotline.aws.state.progress import read_progress
from spotline.core.billing.billing import JobBill, RunBill, bill_of, kept_by_type_of
from spotline.core.state import AttemptRecord, ManifestCheck, Progress, RunStatus, Training, history_of
from spotline.core.training.status import earlier_training_job_names, training_job_name_of


def describe_training_job(name: str | None) -> dict[str, Any] | None:
    if not name:
        return None
    try:
        return client("sagemaker").describe_training_job(TrainingJobName=name)  # type: ignore[no-any-return]
    except Exception as exc:
        if error_code(exc) in ("ValidationException", "ResourceNotFound"):
            return None  # Batch knows the ARN a moment before SageMaker shows the job
        raise


class BillingNotSettled(Exception):
    """A training job of the run has not ended yet (it is stopping): SageMaker has not billed it."""


def job_bills(attempts: Iterable[AttemptRecord], now: datetime) -> list[JobBill]:
    """The bill of every SageMaker job of every attempt (each Batch service job, each of its
    retries), oldest first. An attempt Batch never started has none."""
    bills = []
    for attempt in attempts:
        job_id = attempt.job_id
        if not job_id:
            continue
        region = attempt.region or ""
        with in_region(region or None):  # an attempt placed in a peer region is read there
            try:
                batch_job = client("batch").describe_service_job(jobId=job_id)
            except Exception as exc:
                if error_code(exc) in ("ClientException", "ResourceNotFoundException"):
                    continue  # Batch keeps ended jobs for days; past that there is nothing to read
                raise
            names = [*earlier_training_job_names(batch_job), training_job_name_of(batch_job)]
            for name in names:
                described = describe_training_job(name)
                if described:
                    bills.append(replace(bill_of(described, now), region=region))
    return bills


def run_bill_of(
    attempts: Iterable[AttemptRecord],
    *,
    checkpoint_s3_uri: str | None,
    last_progress: Progress | None,
    now: datetime,
    checkpoint_region: str | None = None,
    speeds: Mapping[str, float] | None = None,
) -> RunBill:
    """The run's bills and the work its checkpoints hold now (progress.json read again, in the
    checkpoint's region: a stop saves one more checkpoint after the last status check; the last
    check's figure otherwise). `speeds`: each type of the manifest's and its declared speed."""
    progress = read_progress(checkpoint_s3_uri, checkpoint_region) if checkpoint_s3_uri else None
    last_step = last_progress is not None and last_progress.step is not None
    if progress is None and last_progress is not None and last_step:
        progress = last_progress.to_state()  # the spec is unreadable: the last check's reading
    # No progress.json: nothing was saved yet (0). One without trainingSeconds: work not measured.
    kept: Any = 0.0 if progress is None else progress.get("trainingSeconds")
    return RunBill(
        tuple(job_bills(attempts, now)),
        checkpointed=checkpoint_s3_uri is not None or last_step,
        kept_work_seconds=float(kept) if isinstance(kept, int | float) else None,
        kept_by_type=kept_by_type_of(progress),
        speeds=speeds,
    )


def bill_for_state(state: Mapping[str, Any], now: datetime) -> RunBill:
    """`run_bill_of` for an execution state: its attempts, its spec's checkpoint location (when
    the spec can still be read) and its last check's progress."""
    training, status, manifest = Training.in_state(state), RunStatus.in_state(state), ManifestCheck.in_state(state)
    speeds: dict[str, float] | None = None
    try:
        valid = manifest is not None and manifest.valid
        # The latest checkpoint is where the last attempt ran (its team's replica in a peer region).
        last = training.region if training else None
        spec = spec_of(dict(state)) if valid else None
        checkpoint = spec_at(spec, last).checkpoint_s3_uri if spec else None
        speeds = {option.instance_type: option.speed for option in spec.instance_options} if spec else None
    except SpecUnavailable:
        checkpoint = None  # the last check's progress says what the checkpoints held
    return run_bill_of(
        history_of(training, status),
        checkpoint_s3_uri=checkpoint,
        last_progress=status.progress if status else None,
        now=now,
        checkpoint_region=training.region if training else None,
        speeds=speeds,
    )
