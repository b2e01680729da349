"""A run's bills read from its training jobs (spotline.core.billing.billing), and the figures built on them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from state_samples import final_status_state, previous_attempt_state, status_state, training_state

from spotline.core.billing.billing import JobBill, RunBill, bill_of, kept_by_type_of
from spotline.core.state import RunStatus, Training, history_of

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _transitions(*steps: tuple[str, float]) -> list[dict[str, Any]]:
    """(status, minutes from T0 it began), each ending where the next begins."""
    out = []
    for i, (status, begins) in enumerate(steps):
        entry: dict[str, Any] = {"Status": status, "StartTime": _at(begins)}
        if i + 1 < len(steps):
            entry["EndTime"] = _at(steps[i + 1][1])
        out.append(entry)
    return out


SPOT_JOB = {
    "TrainingJobName": "spot-job",
    "TrainingJobStatus": "Completed",
    "SecondaryStatusTransitions": _transitions(
        ("Starting", 0),
        ("Downloading", 5),
        ("Training", 6),
        ("Interrupted", 66),  # an hour of training, then spot reclaimed
        ("Starting", 68),
        ("Downloading", 80),
        ("Training", 81),
        ("Uploading", 141),
        ("Completed", 142),
    ),
    "TrainingTimeInSeconds": 7440,
    "BillableTimeInSeconds": 2232,
}


def test_an_ended_job_is_billed_as_sagemaker_says_and_its_time_is_split_by_status() -> None:
    bill = bill_of(SPOT_JOB, _at(500))

    assert (bill.ended, bill.completed) == (True, True)
    assert (bill.training_seconds, bill.billable_seconds) == (7440, 2232)  # SageMaker's figures, not recomputed
    assert bill.in_training_seconds == 120 * 60
    assert bill.last_stretch_seconds == 60 * 60  # since the restart
    assert (bill.download_seconds, bill.upload_seconds, bill.interruptions) == (60, 60, 1)


def test_a_job_still_stopping_has_no_bill_yet() -> None:
    stopping = {
        "TrainingJobName": "stopping",
        "TrainingJobStatus": "Stopping",
        "SecondaryStatusTransitions": _transitions(("Starting", 0), ("Downloading", 5), ("Training", 6)),
        "BillableTimeInSeconds": 999,  # not trusted before the end
    }
    bill = bill_of(stopping, _at(36))

    assert not bill.ended
    assert bill.billable_seconds == 0
    assert bill.training_seconds == 31 * 60  # billed statuses so far
    assert not RunBill((bill,), checkpointed=True).settled


def _job(**figures: Any) -> JobBill:
    base = {
        "name": "j",
        "ended": True,
        "completed": False,
        "training_seconds": 0,
        "billable_seconds": 0,
        "in_training_seconds": 0,
        "last_stretch_seconds": 0,
        "download_seconds": 60,
        "upload_seconds": 0,
        "interruptions": 0,
    }
    return JobBill(**(base | figures))


def test_a_fallback_run_counts_its_stopped_spot_attempt_and_the_baseline_bills_one_start() -> None:
    spot = _job(training_seconds=5460, billable_seconds=1638, in_training_seconds=5400, last_stretch_seconds=1800)
    on_demand = _job(
        completed=True,
        training_seconds=3720,
        billable_seconds=3720,
        in_training_seconds=3600,
        last_stretch_seconds=3600,
        upload_seconds=60,
    )
    bill = RunBill((spot, on_demand), checkpointed=True, kept_work_seconds=7200.0)

    assert bill.settled and bill.completed
    assert bill.billable_seconds == 1638 + 3720
    assert bill.lost_work_seconds == 5400 + 3600 - 7200
    assert bill.on_demand_seconds == 7200 + 60 + 60  # work, one download, the upload
    assert bill.savings_percent == round(100 * (1 - 5358 / 7320), 2)


def test_a_run_on_two_types_counts_each_types_kept_work_in_its_own_seconds() -> None:
    """Issue 46: 3870 s trained on ml.g5.2xlarge (checkpoint at 3600 s), then the rest of an 8-hour job
    (28800 - 3600 = 25200 s of g5 work) on ml.g6.2xlarge at 0.8 the speed: 25200 / 0.8 = 31500 s there.
    progress.json's total (36000 s, the whole job in g6 seconds) is in no single type's seconds."""
    g5 = _job(instance_type="ml.g5.2xlarge", in_training_seconds=3870)
    g6 = _job(instance_type="ml.g6.2xlarge", completed=True, in_training_seconds=31500, upload_seconds=60)
    kept = kept_by_type_of(
        {
            "byInstanceType": {
                "ml.g5.2xlarge": {"steps": 1250, "seconds": 3600.0},
                "ml.g6.2xlarge": {"steps": 8750, "seconds": 31500.0},
            }
        }
    )
    bill = RunBill((g5, g6), checkpointed=True, kept_work_seconds=36000.0, kept_by_type=kept)

    assert bill.lost_work_seconds == 3870 - 3600  # 270 on g5, none on g6
    # A type that kept nothing (no checkpoint there) lost all it trained.
    assert RunBill((g5,), checkpointed=True, kept_work_seconds=0.0, kept_by_type={}).lost_work_seconds == 3870


def test_a_progress_without_a_usable_per_type_record_falls_back_to_its_total() -> None:
    assert kept_by_type_of({"step": 3}) is None  # an older helper
    assert kept_by_type_of({"byInstanceType": {"ml.g5.2xlarge": {"steps": 3}}}) is None
    assert kept_by_type_of({"byInstanceType": {"ml.g5.2xlarge": {"steps": 3, "seconds": True}}}) is None
    assert kept_by_type_of(None) is None


def test_without_checkpoints_only_the_completing_stretch_is_kept() -> None:
    preempted = _job(training_seconds=1910, billable_seconds=1910, in_training_seconds=1850)
    rerun = _job(
        completed=True,
        training_seconds=7320,
        billable_seconds=7320,
        in_training_seconds=7200,
        last_stretch_seconds=7200,
    )

    assert RunBill((preempted,), checkpointed=False).lost_work_seconds == 1850  # nothing kept
    finished = RunBill((preempted, rerun), checkpointed=False)
    assert finished.lost_work_seconds == 1850
    assert finished.on_demand_seconds == 7200 + 60


def test_work_the_checkpoints_do_not_measure_gives_no_baseline_rather_than_a_wrong_one() -> None:
    done = _job(completed=True, billable_seconds=2196, in_training_seconds=7200, last_stretch_seconds=7200)
    bill = RunBill((done,), checkpointed=True, kept_work_seconds=None)  # an older helper: no trainingSeconds

    assert (bill.lost_work_seconds, bill.on_demand_seconds, bill.savings_percent) == (None, None, None)
    assert bill.billable_seconds == 2196  # the bill itself is SageMaker's, measured or not


def test_a_run_that_did_not_finish_has_no_baseline_and_no_saving() -> None:
    bill = RunBill((_job(billable_seconds=600, in_training_seconds=900),), checkpointed=True, kept_work_seconds=600)

    assert (bill.on_demand_seconds, bill.savings_percent) == (None, None)
    assert bill.lost_work_seconds == 300


def test_the_previous_attempts_last_check_is_not_paired_with_the_new_attempt() -> None:
    at_home = {"region": "us-east-1", "checkpointCopy": None, "previousAttempts": []}
    first = training_state(**at_home, attempt=1, capacity="spot", jobId="job-1", submittedAt="2026-12-01T00:00:00Z")
    earlier = previous_attempt_state(
        attempt=1, jobId="job-1", submittedAt="2026-12-01T00:00:00Z", finalStatus=final_status_state(interruptions=1)
    )
    second = training_state(
        **(at_home | {"previousAttempts": [earlier]}),
        attempt=2,
        capacity="spot",
        jobId="job-2",
        submittedAt="2026-12-01T02:00:00Z",
    )
    last_check_of_first = RunStatus.from_state(
        {"jobId": "job-1", **status_state(interruptions=1, checkedAt="2026-12-01T01:59:00Z")}
    )

    history = history_of(Training.from_state(second), last_check_of_first)

    assert [a.final_status for a in history][1] is None  # never checked: not the first one's status again
    legacy = replace(last_check_of_first, job_id=None)  # a check from before checks named their job
    assert history_of(Training.from_state(second), legacy)[1].final_status is None
    final = history_of(Training.from_state(first), last_check_of_first)[0].final_status
    assert final is not None and final.interruptions == 1


def test_the_baseline_is_the_work_on_the_primary_as_the_manifest_declares_it_wherever_the_run_ended() -> None:
    """Issue 50: the 8-hour job of test_a_run_on_two_types...: 3600 s kept on ml.g5.2xlarge (the
    primary), 31500 s on ml.g6.2xlarge, declared 0.8 as fast: 25200 s of the primary's work. The
    baseline is 28800 s of work on the primary, as for the same job that never left it."""
    g5 = _job(instance_type="ml.g5.2xlarge", in_training_seconds=3870, download_seconds=60)
    g6 = _job(instance_type="ml.g6.2xlarge", completed=True, in_training_seconds=31500, upload_seconds=60)
    kept = {"ml.g5.2xlarge": 3600.0, "ml.g6.2xlarge": 31500.0}
    speeds = {"ml.g5.2xlarge": 1.0, "ml.g6.2xlarge": 0.8, "ml.g6e.2xlarge": 1.0}
    moved = RunBill((g5, g6), checkpointed=True, kept_work_seconds=36000.0, kept_by_type=kept, speeds=speeds)
    stayed = RunBill(
        (g5, replace(g6, instance_type="ml.g5.2xlarge", in_training_seconds=25200)),
        checkpointed=True,
        kept_work_seconds=28800.0,
        kept_by_type={"ml.g5.2xlarge": 28800.0},
        speeds=speeds,
    )

    assert moved.primary_work_seconds == stayed.primary_work_seconds == 3600 + 25200
    assert moved.on_demand_seconds == stayed.on_demand_seconds == 28800 + 60 + 60
    # All on the alternative: its seconds at its declared speed; without a per-type record for a run
    # on two types, its work on the primary is not known.
    alone = RunBill(
        (replace(g6, in_training_seconds=36000),), checkpointed=True, kept_work_seconds=36000.0, speeds=speeds
    )
    assert alone.primary_work_seconds == 28800
    assert RunBill((g5, g6), checkpointed=True, kept_work_seconds=36000.0, speeds=speeds).on_demand_seconds is None
