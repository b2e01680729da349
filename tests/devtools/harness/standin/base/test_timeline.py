"""A training job's timeline, seen through the Batch and SageMaker APIs: start-up, training,
checkpoints, spot interruptions, capacity gaps, MaxWait and MaxRuntime, failure."""

from __future__ import annotations

from datetime import timedelta

import pytest

from devtools.harness.standin.fixture_rig import (
    CHECKPOINT,
    PROJECT_RETRY,
    RigFactory,
    at,
    batch_named,
    check_shapes,
    ms,
    run_to_end,
    statuses,
    training_payload,
)
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour


def test_on_demand_job_walks_every_status_to_completed(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload(spot=False), name="ranker-v2-a1-od", retryStrategy=PROJECT_RETRY)

    assert rig.status_at(0, job_id) == ("SUBMITTED", None)
    assert rig.status_at(20, job_id) == ("RUNNABLE", None)
    assert rig.status_at(40, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(460, job_id) == ("STARTING", "Downloading")
    assert rig.status_at(600, job_id) == ("RUNNING", "Training")
    assert rig.status_at(4120, job_id) == ("RUNNING", "Uploading")
    assert rig.status_at(4170, job_id) == ("SUCCEEDED", "Completed")

    job = rig.batch_job(job_id)
    training = rig.training(rig.training_name())
    batch_arn = job["attempts"][0]["serviceResourceId"]["value"]
    assert (job["createdAt"], job["scheduledAt"], job["startedAt"], job["stoppedAt"]) == (
        ms(0),
        ms(30),
        ms(450),
        ms(4170),
    )
    assert job["isTerminated"] is False
    assert job["attempts"] == [
        {
            "serviceResourceId": {"name": "TrainingJobArn", "value": batch_arn},
            "startedAt": ms(30),
            "stoppedAt": ms(4170),
        }
    ]
    assert job["latestAttempt"]["serviceResourceId"]["value"] == batch_arn
    assert job["retryStrategy"] == PROJECT_RETRY
    # SageMaker's ARN has the name in lower case; Batch's attempt keeps it as created (the user guide's examples).
    assert batch_named([training["TrainingJobName"]])
    assert batch_arn == f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{training['TrainingJobName']}"
    assert training["TrainingJobArn"] == batch_arn.lower()
    assert training["TrainingJobStatus"] == "Completed"
    assert statuses(training) == ["Starting", "Downloading", "Training", "Uploading", "Completed"]
    assert (training["CreationTime"], training["TrainingStartTime"], training["TrainingEndTime"]) == (
        at(30),
        at(450),
        at(4170),
    )
    assert training["TrainingTimeInSeconds"] == 60 + 3600 + 60
    assert training["BillableTimeInSeconds"] == training["TrainingTimeInSeconds"]
    assert training["EnableManagedSpotTraining"] is False
    assert training["HyperParameters"] == {"epochs": "12", "lr": "0.0003"}
    assert training["ResourceConfig"]["InstanceType"] == "ml.g5.2xlarge"
    assert training["CheckpointConfig"]["S3Uri"] == CHECKPOINT
    assert training["ModelArtifacts"]["S3ModelArtifacts"].endswith(
        f"/{training['TrainingJobName']}/output/model.tar.gz"
    )
    assert "Tags" not in training
    # progress.json every 15 minutes of training and once more at the end, stamped with its own time
    assert [p["step"] for _, p in rig.store.writes] == [15, 30, 45, 60]
    assert rig.store.writes[0][1] == {
        "step": 15,
        "totalSteps": 60,
        "updatedAt": "2026-11-29T08:23:30Z",
        "trainingSeconds": 900.0,
        "byInstanceType": {"ml.g5.2xlarge": {"steps": 15, "seconds": 900.0}},  # the type it ran on
    }
    check_shapes(rig)


def test_spot_job_bills_a_fraction_of_its_training_time(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload())

    assert rig.status_at(40, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(331, job_id) == ("RUNNING", "Training")
    assert rig.view(job_id).training_seconds == pytest.approx(61)
    assert rig.view(job_id).billable_seconds == pytest.approx(61 * 0.3)
    assert rig.status_at(330 + 3600 + 60, job_id) == ("SUCCEEDED", "Completed")

    training = rig.training(rig.training_name())
    assert training["TrainingTimeInSeconds"] == 3720
    assert training["BillableTimeInSeconds"] == round(3720 * 0.3)
    assert training["StoppingCondition"] == {"MaxRuntimeInSeconds": 86_400, "MaxWaitTimeInSeconds": 172_800}
    view = rig.view(job_id)
    assert (view.capacity, view.status, view.interruptions, view.lost_work_seconds) == ("spot", "SUCCEEDED", 0, 0)
    check_shapes(rig)


def test_interrupted_spot_job_resumes_from_its_last_checkpoint(make_rig: RigFactory) -> None:
    behaviour = TrainingBehaviour(duration=4 * 3600)
    payload = training_payload(interval_minutes=25)
    calm = make_rig(SpotWeather(), behaviour)
    calm_end = run_to_end(calm, calm.submit(payload))

    rig = make_rig(SpotWeather(interruptions=[2 * 3600]), behaviour)
    job_id = rig.submit(payload)
    # Training starts at +330 s; the 2 h mark of training time comes at +7530 s.
    assert rig.status_at(7529, job_id) == ("RUNNING", "Training")
    assert rig.status_at(7531, job_id) == ("RUNNING", "Interrupted")
    assert rig.status_at(7700, job_id) == ("RUNNING", "Starting")
    assert rig.status_at(7800, job_id) == ("RUNNING", "Downloading")
    assert rig.status_at(7831, job_id) == ("RUNNING", "Training")
    view = rig.view(job_id)
    assert view.interruptions == 1
    assert view.lost_work_seconds == pytest.approx(1200)  # 2 h of work, last checkpoint at 100 minutes
    assert view.lost_work_seconds < 25 * 60
    end = run_to_end(rig, job_id)

    training = rig.training(rig.training_name())
    assert statuses(training) == [
        "Starting", "Downloading", "Training", "Interrupted", "Starting", "Downloading", "Training",
        "Uploading", "Completed",
    ]  # fmt: skip
    assert end - calm_end == pytest.approx(300 + 1200)  # restart delay + lost work
    assert training["TrainingTimeInSeconds"] == 60 + 7200 + 60 + (4 * 3600 - 6000) + 60
    steps = [p["step"] for _, p in rig.store.writes]
    assert steps[:5] == [25, 50, 75, 100, 125]  # resumed from step 100, then every 25 minutes again
    assert steps[-1] == 240
    check_shapes(rig)


def test_an_early_first_checkpoint_comes_first_after_every_start(make_rig: RigFactory) -> None:
    """SPOTLINE_FIRST_CHECKPOINT_MINUTES: the helper saves first after it, then every interval."""
    payload = training_payload(interval_minutes=25)
    payload["Environment"]["SPOTLINE_FIRST_CHECKPOINT_MINUTES"] = "5"
    rig = make_rig(SpotWeather(interruptions=[2 * 3600]), TrainingBehaviour(duration=4 * 3600))
    job_id = rig.submit(payload)
    run_to_end(rig, job_id)
    assert rig.view(job_id).lost_work_seconds == pytest.approx(15 * 60)  # 2 h of work, last checkpoint at 105 min
    steps = [p["step"] for _, p in rig.store.writes]
    assert steps[:7] == [5, 30, 55, 80, 105, 110, 135]  # resumed from step 105: 5 minutes, then every 25 again
    check_shapes(rig)


def test_spot_job_waits_out_a_capacity_gap_in_starting(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(capacity_gaps=[(at(0), at(3600))]))
    job_id = rig.submit(training_payload())

    assert rig.status_at(1800, job_id) == ("SCHEDULED", "Starting")
    message = rig.training(rig.training_name())["SecondaryStatusTransitions"][-1]["StatusMessage"]
    assert "capacity" in message
    assert rig.status_at(3600 + 301, job_id) == ("RUNNING", "Training")
    assert rig.status_at(3600 + 300 + 3600 + 60, job_id) == ("SUCCEEDED", "Completed")


def test_capacity_gap_during_training_interrupts_the_job(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(capacity_gaps=[(at(3600), at(7200))]))
    job_id = rig.submit(training_payload())

    assert rig.status_at(3601, job_id) == ("RUNNING", "Interrupted")
    assert rig.status_at(5000, job_id) == ("RUNNING", "Starting")
    waiting = rig.training(rig.training_name())["SecondaryStatusTransitions"][-1]
    assert (waiting["Status"], "capacity" in waiting["StatusMessage"]) == ("Starting", True)
    assert rig.status_at(7200 + 301, job_id) == ("RUNNING", "Training")
    view = rig.view(job_id)
    # 3270 s of work when the gap began, last checkpoint at 2700 s (every 15 minutes)
    assert (view.interruptions, view.lost_work_seconds) == (1, pytest.approx(570))
    assert view.latest is not None and view.latest.interrupted_at == (at(3600),)
    assert rig.status_at(7500 + (3600 - 2700) + 60, job_id) == ("SUCCEEDED", "Completed")


def test_capacity_gap_longer_than_max_wait_stops_the_job(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(capacity_gaps=[(at(0), at(10 * 3600))]))
    job_id = rig.submit(training_payload(max_runtime=3600, max_wait=7200))

    # The guide's "Spot instances were never launched": Starting, then Stopping, then Stopped
    # (MaxWaitTimeExceeded); the training job was created at +30 s, so its wait is up at +7230 s.
    assert rig.status_at(7000, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(7230, job_id) == ("SCHEDULED", "Stopping")
    assert [t["Status"] for t in rig.training(rig.training_name())["SecondaryStatusTransitions"]] == [
        "Starting",
        "Stopping",
    ]
    assert rig.status_at(7260, job_id) == ("FAILED", "MaxWaitTimeExceeded")
    training = rig.training(rig.training_name())
    assert training["TrainingJobStatus"] == "Stopped"
    assert [t["Status"] for t in training["SecondaryStatusTransitions"]] == [
        "Starting",
        "Stopping",
        "MaxWaitTimeExceeded",
    ]
    assert training["TrainingEndTime"] == at(7260)
    assert training["TrainingTimeInSeconds"] == 0
    assert "TrainingStartTime" not in training
    job = rig.batch_job(job_id)
    assert job["statusReason"] == (
        "Received status from SageMaker: MaxWaitTimeExceeded: "
        "Training job stopped: it exceeded MaxWaitTimeInSeconds (7200 seconds)"
    )
    assert job["attempts"][0]["statusReason"] == job["statusReason"]


def test_max_runtime_exceeded_stops_with_a_final_checkpoint(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=3 * 3600))
    job_id = rig.submit(training_payload(spot=False, max_runtime=3600), name="ranker-v2-a1-od")

    # Billed time starts with Downloading at +450 s, so the hour is up at +4050 s.
    assert rig.status_at(4049, job_id) == ("RUNNING", "Training")
    assert rig.status_at(4050, job_id) == ("RUNNING", "Stopping")  # SIGTERM: the job saves and stops
    assert rig.status_at(4080, job_id) == ("FAILED", "MaxRuntimeExceeded")
    training = rig.training(rig.training_name())
    assert (training["TrainingJobStatus"], training["TrainingTimeInSeconds"]) == ("Stopped", 3600)
    assert rig.batch_job(job_id)["statusReason"].startswith("Received status from SageMaker: MaxRuntimeExceeded")
    assert rig.store.files[CHECKPOINT] == {
        "step": 59,
        "totalSteps": 180,
        "updatedAt": "2026-11-29T09:07:30Z",
        "trainingSeconds": 3540.0,
        "byInstanceType": {"ml.g5.2xlarge": {"steps": 59, "seconds": 3540.0}},  # the type it ran on
    }


def test_algorithm_error_fails_the_batch_job(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=7200, fail_after=1800))
    job_id = rig.submit(training_payload(), retryStrategy=PROJECT_RETRY)

    assert rig.status_at(330 + 1799, job_id) == ("RUNNING", "Training")
    assert rig.status_at(330 + 1800, job_id) == ("FAILED", "Failed")
    training = rig.training(rig.training_name())
    assert training["TrainingJobStatus"] == "Failed"
    assert training["FailureReason"].startswith("AlgorithmError: ")
    job = rig.batch_job(job_id)
    assert job["statusReason"].startswith("Received status from SageMaker: AlgorithmError: ")
    assert len(job["attempts"]) == 1  # EXIT on "*": not retried


def test_a_gpu_failure_is_repaired_unbilled_and_training_restarts_from_the_last_checkpoint(
    make_rig: RigFactory,
) -> None:
    """SageMaker guide, "Cluster repairs for GPU errors": the job keeps running through the repair
    (status message "Repairing training cluster due to hardware failure"), restarts from the previous
    checkpoint, and the repair is not billed. On-demand too: a GPU fails whatever the capacity."""
    behaviour = TrainingBehaviour(duration=4 * 3600)
    payload = training_payload(spot=False, interval_minutes=25)
    calm = make_rig(SpotWeather(), behaviour)
    calm_end = run_to_end(calm, calm.submit(payload))

    rig = make_rig(SpotWeather(), TrainingBehaviour(duration=4 * 3600, hardware_faults=(2 * 3600,)))
    job_id = rig.submit(payload)
    # Training starts at +510 s (on-demand start delay); the 2 h mark of training time comes at +7710 s.
    assert rig.status_at(7709, job_id) == ("RUNNING", "Training")
    assert rig.status_at(7711, job_id) == ("RUNNING", "Restarting")
    assert rig.status_at(7710 + 599, job_id) == ("RUNNING", "Restarting")
    assert rig.status_at(7710 + 601, job_id) == ("RUNNING", "Training")
    view = rig.view(job_id)
    assert (view.interruptions, view.lost_work_seconds) == (0, pytest.approx(1200))  # not a spot interruption
    end = run_to_end(rig, job_id)

    training = rig.training(rig.training_name())
    assert statuses(training) == [
        "Starting",
        "Downloading",
        "Training",
        "Restarting",
        "Training",
        "Uploading",
        "Completed",
    ]
    repair = training["SecondaryStatusTransitions"][3]
    assert repair["StatusMessage"] == "Repairing training cluster due to hardware failure"
    assert end - calm_end == pytest.approx(600 + 1200)  # the repair + the work since the checkpoint at 100 min
    # Billed: the download, every second of training (the 20 lost minutes twice), the upload; not the repair.
    assert training["TrainingTimeInSeconds"] == 60 + 7200 + (4 * 3600 - 6000) + 60
    assert training["BillableTimeInSeconds"] == training["TrainingTimeInSeconds"]
    steps = [p["step"] for _, p in rig.store.writes]
    assert steps[:5] == [25, 50, 75, 100, 125]  # resumed from step 100 (no new Downloading: same instances)
    assert (rig.view(job_id).repairs, rig.view(job_id).lost_work_seconds) == (1, pytest.approx(1200))
    check_shapes(rig)


def test_spot_capacity_taken_back_during_a_repair_interrupts_the_job(make_rig: RigFactory) -> None:
    """A gap that begins while SageMaker repairs the cluster reclaims the spot instances there: the
    job is interrupted at the gap's start and waits it out, as any spot job does."""
    start = at(0)
    # Training from +330 s; the GPU fails after 2 h of training (+7530 s); spot goes at +7800 s for 6 h.
    gap = (start + timedelta(seconds=7800), start + timedelta(seconds=7800 + 6 * 3600))
    rig = make_rig(SpotWeather(capacity_gaps=[gap]), TrainingBehaviour(duration=4 * 3600, hardware_faults=(7200,)))
    job_id = rig.submit(training_payload(interval_minutes=25))
    assert rig.status_at(7700, job_id) == ("RUNNING", "Restarting")
    assert rig.status_at(7801, job_id)[1] == "Interrupted"
    run_to_end(rig, job_id)
    training = rig.training(rig.training_name())
    assert statuses(training)[:6] == ["Starting", "Downloading", "Training", "Restarting", "Interrupted", "Starting"]
    assert rig.view(job_id).interruptions == 1 and rig.view(job_id).repairs == 1


def test_a_gpu_failure_at_the_moment_of_a_spot_interruption_is_not_repaired_after(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(interruptions=[7200]), TrainingBehaviour(duration=4 * 3600, hardware_faults=(7200,)))
    job_id = rig.submit(training_payload(interval_minutes=25))
    run_to_end(rig, job_id)
    training = rig.training(rig.training_name())
    assert "Restarting" not in statuses(training)
    assert rig.view(job_id).interruptions == 1 and rig.view(job_id).repairs == 0
