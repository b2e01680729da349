"""Whole sections of the execution state, as a real run writes them (shapes taken from the sandbox's
`spot-in-another-region` and `no-capacity-anywhere` runs): tests build their state from these and
change what they test, since the records read every key strictly."""

from __future__ import annotations

import copy
from typing import Any

from builders import example_spec
from spotline.core.state import JobSummary

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:spotline-local-training-lifecycle:ranker-v2-1"

_PREVIOUS = {
    "attempt": 1,
    "capacity": "spot",
    "instanceType": "ml.g5.2xlarge",
    "jobId": "job-1",
    "trainingJobName": "AWSBatchranker-a1-spot1",
    "submittedAt": "2026-12-01T06:00:00Z",
    "finalStatus": {
        "state": "interrupted",
        "reasonClass": None,
        "trainingSeconds": 5130,
        "billableSeconds": 0,
        "interruptions": 1,
        "queueWaitSeconds": 270,
        "endedAt": None,
        "instanceType": "ml.g5.2xlarge",
        "reason": "spot capacity reclaimed; SageMaker is restarting from the last checkpoint",
    },
    "region": "us-east-1",
}

_TRAINING = {
    "attempt": 2,
    "capacity": "spot",
    "instanceType": None,
    "trainingPlan": None,
    "jobId": "job-2",
    "jobArn": "arn:aws:batch:us-west-2:123456789012:service-job/job-2",
    "jobName": "ranker-v2-1-a2-spot",
    "region": "us-west-2",
    "regionChoice": None,
    "zone": None,
    "zoneChoice": None,
    "checkpointCopy": {
        "from": "s3://ckpt/ranker/",
        "to": "s3://ckpt-us-west-2/ranker/",
        "fromRegion": "us-east-1",
        "toRegion": "us-west-2",
        "objects": 1,
        "bytes": 166,
        "seconds": 0.0,
    },
    "submittedAt": "2026-12-01T07:30:00Z",
    "firstPollSeconds": 60,
    "links": {"execution": "https://console/execution", "batchJob": "https://console/batch/job-2"},
    "previousAttempts": [_PREVIOUS],
}

_STATUS = {
    "state": "interrupted",
    "finished": False,
    "reasonClass": None,
    "reason": "spot capacity reclaimed; SageMaker is restarting from the last checkpoint",
    "batchStatus": "RUNNING",
    "secondaryStatus": "Interrupted",
    "trainingJobName": "AWSBatchranker-a2-spot2",
    "instanceType": "ml.g5.2xlarge",
    "trainingSeconds": 5130,
    "billableSeconds": 0,
    "interruptions": 1,
    "preemptions": 0,
    "capacityShort": False,
    "queueWaitSeconds": 270,
    "endedAt": None,
    "progress": {
        "fraction": 0.15625,
        "step": 75,
        "totalSteps": 480,
        "source": "progress.json",
        "trainingSeconds": 4500.0,
        "estimatedWorkSeconds": 28800,
        "speeds": [{"instanceType": "ml.g5.2xlarge", "speed": 1.0, "source": "declared"}],
        "trainingSinceCheckpointSeconds": 0,
        "estimatedFraction": 0.15625,
    },
    "decision": {
        "verdict": "continue",
        "reason": "on track: 5h14m30s of slack on-demand would not need",
        "slackSeconds": 18869,
        "restartOverheadSeconds": 1200,
        "queueWaitNowSeconds": 0,
        "priority": 300,
        "escalation": {"from": 300, "to": 400, "reason": "deadline at risk in the queue", "notified": True},
    },
    "action": "move-to-another-region",
    "explanation": "spot interrupted in us-east-1; the spot attempt moves to us-west-2",
    "nextCapacity": "spot",
    "nextInstanceType": None,
    "nextZone": None,
    "nextRegion": "us-west-2",
    "regionChoice": {
        "region": "us-west-2",
        "moves": True,
        "reason": "us-west-2: about 87 min lost to restarts and waits",
        "considered": [
            {
                "region": "us-west-2",
                "secondsToTrain": 5214,
                "copySeconds": 30,
                "copyUsd": 0.0,
                "spotSighted": None,
                "note": "not yet observed",
            }
        ],
        "regionMoves": 0,
        "regionMovesAllowed": 4,
    },
    "nextTrainingPlan": None,
    "maxPendingSeconds": None,
    "capacityWaitSeconds": 0,
    "deadlineAtRisk": {
        "at": "2026-12-01T07:30:00Z",
        "cause": "8h18m30s left before the deadline; 8h of work left",
        "notified": True,
        "workLeftSeconds": 28800,
        "workLeftSpreadSeconds": 0,
        "workLeftEstimated": False,
    },
    "backoffSeconds": 0,
    "finishReason": None,
    "checkedAt": "2026-12-01T07:40:00Z",
    "nextPollSeconds": 900,
    "nextCheckReason": "safety check (events announce every change that needs acting on)",
    "checks": 7,
    "links": {"execution": "https://console/execution", "batchJob": "https://console/batch/job-2"},
}

PLAN = {
    "arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p4d-december",
    "name": "p4d-december",
    "region": "us-east-1",
    "instanceType": "ml.p4d.24xlarge",
    "usableUntil": "2026-12-04T05:30:00Z",
    "zone": None,
}


def previous_attempt_state(**changes: Any) -> dict[str, Any]:
    """One `$.training.previousAttempts[]` item, with `changes`."""
    return copy.deepcopy(_PREVIOUS) | changes


def training_state(**changes: Any) -> dict[str, Any]:
    """A whole `$.training` (a second attempt, moved to us-west-2 with a checkpoint copy), with `changes`."""
    return copy.deepcopy(_TRAINING) | changes


def status_state(**changes: Any) -> dict[str, Any]:
    """A whole `$.status` (every optional part filled in), with `changes`."""
    return copy.deepcopy(_STATUS) | changes


def manifest_state(spec: Any = None, spec_ref: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    """A whole `$.manifest` of an accepted manifest: `spec`'s summary (a JobSpec; the example's
    when None) and `spec_ref` (what `store_spec` returned; a reference to nothing when None)."""
    job = JobSummary.of(spec if spec is not None else example_spec()).to_state()
    ref = spec_ref or {"bucket": "ingest", "key": "specs/ranker-v2-1.json", "versionId": "v1", "sha256": "0" * 64}
    accepted = {
        "valid": True,
        "missing": False,
        "errors": [],
        "errorCount": 0,
        "summary": "valid",
        "report": None,
        "job": job,
        "specRef": ref,
    }
    return accepted | changes


def regions_state(allowed: list[str] | None = None, **changes: Any) -> dict[str, Any]:
    """A whole `$.resources.regions`: home us-east-1 and `allowed` (home alone when None)."""
    return {"home": "us-east-1", "allowed": allowed or ["us-east-1"], "excluded": []} | changes


def resources_state(**changes: Any) -> dict[str, Any]:
    """A whole `$.resources` of resources found valid, with `changes`."""
    valid = {
        "valid": True,
        "problems": [],
        "summary": "all resources available",
        "regions": regions_state(),
        "subnets": None,
        "zones": None,
    }
    return valid | changes


def live_runs_state(**changes: Any) -> dict[str, Any]:
    """A whole `$.liveRuns` with no other run live, with `changes`."""
    clear = {"clear": True, "problems": [], "summary": "no other run of search-ranking/ranker-v2 is queued or running"}
    return clear | {"found": []} | changes


def dependencies_state(**changes: Any) -> dict[str, Any]:
    """A whole `$.dependencies` with every dataset ready, with `changes`."""
    return {"ready": True, "datasets": {}, "missing": []} | changes


# --- appended for the outcome's tests (RecordOutcome reads the whole state) ----------------------


def final_status_state(**changes: Any) -> dict[str, Any]:
    """A whole `$.training.previousAttempts[].finalStatus`, with `changes`."""
    return copy.deepcopy(_PREVIOUS["finalStatus"]) | changes


def checkpoint_copy_state(**changes: Any) -> dict[str, Any]:
    """A whole `$.training.checkpointCopy` (us-east-1 to us-west-2), with `changes`."""
    return copy.deepcopy(_TRAINING["checkpointCopy"]) | changes


def input_state(**changes: Any) -> dict[str, Any]:
    """The keys every state keeps from the execution's input (`$`: `RunInput`), with `changes`."""
    started = {
        "bucket": "ingest",
        "key": "manifests/search-ranking/ranker-v2.yaml",
        "versionId": "v1",
        "etag": "etag-1",
        "team": "search-ranking",
        "receivedAt": "2026-12-01T05:59:00Z",
    }
    return started | changes


def fallback_state(**changes: Any) -> dict[str, Any]:
    """A whole `$.fallback`: the spot job StopSpotJob stopped for an on-demand attempt, with `changes`."""
    stopped = {
        "jobId": "job-1",
        "capacity": "on-demand",
        "terminated": True,
        "reason": "Spotline: moving the run to on-demand",
        "at": "2026-12-01T07:30:00Z",
        "notified": True,
    }
    return stopped | changes


def service_job_state(**changes: Any) -> dict[str, Any]:
    """One `$.liveRuns.found[]` or `$.cleanup.stopped[]` item (a Batch service job), with `changes`."""
    job = {
        "jobId": "job-2",
        "jobName": "ranker-v2-1-a2-spot",
        "status": "RUNNING",
        "trainingJobName": "AWSBatchranker-a2-spot2",
        "execution": "ranker-v2-1",
    }
    return job | changes


def cleanup_state(stopped: list[dict[str, Any]] | None = None, **changes: Any) -> dict[str, Any]:
    """A whole `$.cleanup` (StopExecutionJobs after an error): `stopped` (none when None), with `changes`."""
    jobs = stopped or []
    return {"stopped": jobs, "checked": len(jobs), "at": "2026-12-01T08:00:00Z"} | changes


def outcome_state(**changes: Any) -> dict[str, Any]:
    """A whole `$.outcome` of a training run that succeeded (as the state keeps it: no `prices`), with `changes`."""
    succeeded = {
        "name": "TrainingSucceeded",
        "succeeded": True,
        "cause": "training completed",
        "next_step": "Nothing to do: the model is in s3://search-ranking-models/ranker-v2/.",
        "figures": {"attempts": 1, "interruptions": 0, "training_seconds": 3600, "cost_usd": 1.52},
        "report": "s3://ingest/reports/manifests/search-ranking/ranker-v2.yaml.outcome.json",
        "notified": False,
    }
    return succeeded | changes


def continued_as_state(**changes: Any) -> dict[str, Any]:
    """A whole `$.continuedAs`: the watch handed to `ranker-v2-1-c1`, with `changes`."""
    name = str(changes.get("executionName", "ranker-v2-1-c1"))
    handed = {"executionName": name, "executionArn": EXECUTION.rsplit(":", 1)[0] + ":" + name, "retagged": []}
    return handed | changes
