"""A fleet scenario as teams would run it without Spotline: each upload submitted straight to the
same Batch queue (same capacity, same quota shares) as one spot service job, with Batch's own
retries and SageMaker's managed spot restarts from the checkpoint, but no deadline policy, no
resubmission, no priority raise and no on-demand fallback. The benchmark's baseline
(`benchmarks/fleet_week.py`); the figures are computed as for Spotline's runs (`fleet_figures`)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from spotline.core.spec.model import JobSpec, to_rfc3339
from spotline.core.training.training_request import Attempt, service_job_request
from spotline_dev.harness.local.handles import ACCOUNT, REGION
from spotline_dev.harness.sandbox.fleet import Upload, fleet_stack, quota_capacity, uploads_of
from spotline_dev.harness.sandbox.fleet_figures import fleet_figures
from spotline_dev.harness.sandbox.runs import ENDED, powertools_environment_for, training_end
from spotline_dev.harness.sandbox.scenario import Scenario
from spotline_dev.harness.standin import ServiceJobView
from spotline_dev.harness.standin.sagemaker.ledger import ManifestTypes, RunLedger

STEP_SECONDS = 600.0  # how far the clock moves at a time once every job is submitted
HORIZON_SECONDS = 60 * 86400.0
UPLOAD = 60.0  # the model's upload, in the all-on-demand cost (as the sandbox counts it)


def run_plain_batch(scenario: Scenario) -> dict[str, Any]:
    """Submit every upload of the scenario to the queue at its moment; returns the runs (one per
    job, in the shape `fleet_figures` reads) and the `fleet` object."""
    uploads = uploads_of(scenario)
    with powertools_environment_for(False), fleet_stack(scenario, uploads) as stack:
        batch, queue = stack.client("batch"), stack.physical["TrainingJobQueue"]
        submitted: dict[str, Upload] = {}
        for number, upload in enumerate(uploads, start=1):
            stack.clock.set(scenario.start + timedelta(seconds=upload.moment))
            execution = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:plain-batch:{upload.spec.name}-{number}"
            request = service_job_request(upload.spec, Attempt(execution, 1, "spot"), queue)
            submitted[batch.submit_service_job(**request)["jobId"]] = upload
        waited = 0.0
        while waited < HORIZON_SECONDS and any(job.status not in ENDED for job in stack.standin.jobs):
            stack.clock.advance(STEP_SECONDS)
            waited += STEP_SECONDS
        jobs, end = stack.standin.jobs, stack.clock.now()
        ledgers = stack.standin.ledger(by_service_job=True)  # one service job per upload
        capacity = stack.queue_capacities["TrainingJobQueue"]
        quotas = quota_capacity(stack)
    runs = [_run_of(job, submitted[job.job_id], scenario.start, ledgers.get(job.job_name)) for job in jobs]
    return {
        "executions": runs,
        "jobs": jobs,
        "fleet": fleet_figures(runs, jobs, capacity=capacity, start=scenario.start, end=end, quotas=quotas),
        "leftRunning": [job.job_id for job in jobs if job.status not in ENDED],
    }


def manifest_types(spec: JobSpec) -> ManifestTypes:
    """The spec's primary type and count and each type's declared speed (the baseline's terms)."""
    return ManifestTypes(
        spec.instance_type, spec.instance_count, {o.instance_type: o.speed for o in spec.instance_options}
    )


def _run_of(job: ServiceJobView, upload: Upload, start: datetime, ledger: RunLedger | None) -> dict[str, Any]:
    """One plain-Batch job with its figures from the stand-in's ledger (what it billed)."""
    spec = upload.spec
    ended = training_end(list((job,)), spec.deadline)
    return {
        "name": job.job_name,
        "team": spec.team,
        "status": "SUCCEEDED" if job.status == "SUCCEEDED" else "FAILED",
        "deadline": spec.deadline,
        "deadlineMet": ended["deadlineMet"],
        "costUsd": ledger.cost_usd(REGION) if ledger else 0.0,
        "onDemandCostUsd": ledger.on_demand_cost_usd(REGION, manifest_types(spec)) if ledger else None,
        "onDemandSeconds": ledger.on_demand_seconds(manifest_types(spec).speeds) if ledger else None,
        "instanceType": spec.instance_type,
        "instanceCount": spec.instance_count,
        "uploadedAt": to_rfc3339(start + timedelta(seconds=upload.moment)),
        "jobIds": [job.job_id],
    }
