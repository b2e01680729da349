"""The EventBridge events the stand-in produces for its jobs, and the moments they happen at.

Times as in fixture_rig: RUNNABLE at +15 s, the training job created (SCHEDULED) at +30 s,
Downloading (STARTING) at +270 s, Training (RUNNING) at +330 s; one hour of training, then
60 s of Uploading.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from devtools.harness.standin.fixture_rig import PROJECT_RETRY, T0, Rig, RigFactory, at, ms, training_payload
from devtools.harness.standin.quota_rig import G5, QUEUE, quota_rig
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour

EVENTS_DIR = Path(__file__).resolve().parents[4] / "events"
SPOTLINE_TAGS = {
    "spotline:team": "search-ranking",
    "spotline:job": "ranker-v2",
    "spotline:execution": "search-ranking-ranker-v2-2a265c01",
    "spotline:attempt": "1",
    "spotline:capacity": "spot",
}
PLAIN_SPOT_JOB = [
    (15, "aws.batch", "RUNNABLE"),
    (30, "aws.batch", "SCHEDULED"),
    (30, "aws.sagemaker", "InProgress/Starting"),
    (270, "aws.sagemaker", "InProgress/Downloading"),
    (270, "aws.batch", "STARTING"),
    (330, "aws.sagemaker", "InProgress/Training"),
    (330, "aws.batch", "RUNNING"),
    (3930, "aws.sagemaker", "InProgress/Uploading"),
    (3990, "aws.sagemaker", "Completed/Completed"),
    (3990, "aws.batch", "SUCCEEDED"),
]


def seconds(moment: datetime) -> float:
    return (moment - T0).total_seconds()


def summary(event: dict[str, Any]) -> tuple[float, str, str]:
    """(seconds after T0, source, status) of an event; status is TrainingJobStatus/SecondaryStatus for SageMaker."""
    detail = json.loads(event["Detail"])
    if event["Source"] == "aws.batch":
        return seconds(event["Time"]), "aws.batch", detail["status"]
    return seconds(event["Time"]), "aws.sagemaker", f"{detail['TrainingJobStatus']}/{detail['SecondaryStatus']}"


def summaries(events: list[dict[str, Any]]) -> list[tuple[float, str, str]]:
    return [summary(event) for event in events]


def details(events: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    return [json.loads(e["Detail"]) for e in events if e["Source"] == source]


def spotline_job(rig: Rig, **share: str) -> str:
    """A service job submitted the way Spotline submits one (tags on the Batch job and the payload);
    `share`: quotaShareName on a quota-managed queue (Spotline's), else a fair-share shareIdentifier."""
    payload = training_payload()
    payload["Tags"] = [{"Key": k, "Value": v} for k, v in SPOTLINE_TAGS.items()]
    return rig.submit(
        payload,
        name="search-ranking-ranker-v2-2a265c01-a1-spot",
        retryStrategy=PROJECT_RETRY,
        schedulingPriority=50,
        tags=SPOTLINE_TAGS,
        **(share or {"shareIdentifier": "search-ranking"}),
    )


def test_a_plain_spot_job_changes_ten_times_and_the_submission_is_not_one(make_rig: RigFactory) -> None:
    rig = make_rig()
    rig.clock.at(10)
    job_id = spotline_job(rig)
    assert rig.standin.state_change_events() == []  # submitted at +10 s: no event for that
    rig.clock.at(5000)

    events = rig.standin.state_change_events()
    assert summaries(events) == [(t + 10, source, status) for t, source, status in PLAIN_SPOT_JOB]
    assert rig.standin.state_change_events() == []  # each change is reported once
    batch_arn = f"arn:aws:batch:us-east-1:123456789012:service-job/{job_id}"
    training_arn = f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{rig.training_name(1, job_id).lower()}"
    assert {(e["Source"], e["DetailType"], e["Resources"][0]) for e in events} == {
        ("aws.batch", "Batch Service Job State Change", batch_arn),
        ("aws.sagemaker", "SageMaker Training Job State Change", training_arn),
    }
    assert all(len(e["Resources"]) == 1 and e["Time"].tzinfo is not None for e in events)


def test_each_detail_describes_the_job_as_of_its_own_moment(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = spotline_job(rig)
    rig.clock.at(5000)
    events = rig.standin.state_change_events()

    runnable, scheduled, starting, running, succeeded = details(events, "aws.batch")
    assert (runnable["status"], runnable["attempts"], "latestAttempt" in runnable) == ("RUNNABLE", [], False)
    assert "scheduledAt" not in runnable and "stoppedAt" not in runnable
    assert scheduled["scheduledAt"] == ms(30) and scheduled["startedAt"] == 0  # required, not started yet
    assert starting["startedAt"] == ms(270) and "stoppedAt" not in starting["attempts"][0]
    assert running["status"] == "RUNNING" and not running["isTerminated"]
    assert (succeeded["stoppedAt"], succeeded["attempts"][0]["stoppedAt"]) == (ms(3990), ms(3990))
    assert succeeded["jobId"] == job_id and succeeded["shareIdentifier"] == "search-ranking"
    for detail in (runnable, scheduled, starting, running, succeeded):
        assert "tags" not in detail and "serviceRequestPayload" not in detail  # as Batch leaves them out
        rest = {k: v for k, v in rig.batch_job(job_id).items() if k != "ResponseMetadata"}
        assert set(rest) - set(detail) >= {"tags", "serviceRequestPayload"}

    trainings = details(events, "aws.sagemaker")
    assert [len(d["SecondaryStatusTransitions"]) for d in trainings] == [1, 2, 3, 4, 5]
    created, downloading, *_, completed = trainings
    assert "TrainingStartTime" not in created and downloading["TrainingStartTime"] == ms(270)
    assert created["CreationTime"] == ms(30) and created["LastModifiedTime"] == ms(30)
    assert completed["TrainingEndTime"] == ms(3990) and completed["BillableTimeInSeconds"] == round(3720 * 0.3)
    assert completed["SecondaryStatusTransitions"][0] == {
        "Status": "Starting",
        "StartTime": ms(30),
        "EndTime": ms(270),
        "StatusMessage": "Launching requested ML instances.",
    }
    assert all(d["Tags"] == SPOTLINE_TAGS for d in trainings)  # the payload's Tags, as a map


def test_next_change_after_names_each_change_in_turn_then_none(make_rig: RigFactory) -> None:
    rig = make_rig()
    assert rig.standin.next_change_after(T0) is None  # no job, nothing will change
    spotline_job(rig)
    moments, batches = [], []
    while (moment := rig.standin.next_change_after(rig.clock.now)) is not None:
        assert moment > rig.clock.now
        moments.append(seconds(moment))
        rig.clock.now = moment
        batches.append(summaries(rig.standin.state_change_events()))

    assert moments == [15, 30, 270, 330, 3930, 3990]
    assert [change for batch in batches for change in batch] == PLAIN_SPOT_JOB
    assert all({t for t, _, _ in batch} == {moment} for batch, moment in zip(batches, moments, strict=True))
    rig.clock.at(10 * 86_400)
    assert rig.standin.next_change_after(rig.clock.now) is None and rig.standin.state_change_events() == []


def test_an_interruption_shows_in_sagemaker_events_while_batch_stays_running(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(interruptions=[1200]))  # after 20 min of training
    spotline_job(rig)
    rig.clock.at(2000)
    first = summaries(rig.standin.state_change_events())
    rig.clock.at(10_000)
    rest = summaries(rig.standin.state_change_events())

    # Interrupted at 330 + 1200; the spot notice and teardown take 75 s (a quarter of the
    # 300 s start delay), then SageMaker starts again and training resumes from the 15 min checkpoint.
    assert [c for c in first + rest if c[0] > 330] == [
        (1530, "aws.sagemaker", "InProgress/Interrupted"),
        (1605, "aws.sagemaker", "InProgress/Starting"),
        (1770, "aws.sagemaker", "InProgress/Downloading"),
        (1830, "aws.sagemaker", "InProgress/Training"),
        (1830 + 2700, "aws.sagemaker", "InProgress/Uploading"),
        (1830 + 2760, "aws.sagemaker", "Completed/Completed"),
        (1830 + 2760, "aws.batch", "SUCCEEDED"),
    ]
    assert [c for c in first if c[0] > 330][-1][0] == 1830  # the call at +2000 s saw up to then


def test_a_batch_retry_moves_the_job_from_running_back_to_runnable(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=7200, fail_after=1800))
    retry = {"attempts": 2, "evaluateOnExit": [{"action": "EXIT", "onStatusReason": "*CapacityError*"}]}
    job_id = rig.submit(training_payload(), retryStrategy=retry)
    rig.clock.at(10_000)
    events = rig.standin.state_change_events()

    assert [c for c in summaries(events) if c[1] == "aws.batch"] == [
        (15, "aws.batch", "RUNNABLE"),
        (30, "aws.batch", "SCHEDULED"),
        (270, "aws.batch", "STARTING"),
        (330, "aws.batch", "RUNNING"),
        (2130, "aws.batch", "RUNNABLE"),  # the training code failed; retryStrategy retries
        (2160, "aws.batch", "SCHEDULED"),
        (2400, "aws.batch", "STARTING"),
        (2460, "aws.batch", "FAILED"),  # the second attempt fails the moment it would train: never RUNNING
    ]
    batch = details(events, "aws.batch")
    requeued = batch[4]
    assert [("stoppedAt" in a, a.get("statusReason", "")[:46]) for a in requeued["attempts"]] == [
        (True, "Received status from SageMaker: AlgorithmError")
    ]
    assert "statusReason" not in requeued and len(batch[-1]["attempts"]) == 2
    first, second = (
        [c[2] for c, e in zip(summaries(events), events, strict=True) if e["Resources"][0].endswith(name)]
        for name in ("/" + rig.training_name(1, job_id).lower(), "/" + rig.training_name(2, job_id).lower())
    )
    assert first == ["InProgress/Starting", "InProgress/Downloading", "InProgress/Training", "Failed/Failed"]
    assert second == ["InProgress/Starting", "InProgress/Downloading", "Failed/Failed"]


def test_a_capacity_failure_requeues_the_job_with_batchs_capacity_reason(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(requeue_wait=600))
    rig.standin.fail_next_attempt("CapacityError: Unable to provision requested ML compute capacity.")
    rig.submit(training_payload(), retryStrategy=PROJECT_RETRY)
    moments = []
    while (moment := rig.standin.next_change_after(rig.clock.now)) is not None and seconds(moment) < 900:
        moments.append(seconds(moment))
        rig.clock.now = moment
    events = rig.standin.state_change_events()

    assert moments == [15, 30, 90, 690]
    assert summaries(events) == [
        (15, "aws.batch", "RUNNABLE"),
        (30, "aws.batch", "SCHEDULED"),
        (30, "aws.sagemaker", "InProgress/Starting"),
        (90, "aws.sagemaker", "Failed/Failed"),
        (90, "aws.batch", "RUNNABLE"),
        (690, "aws.batch", "SCHEDULED"),
        (690, "aws.sagemaker", "InProgress/Starting"),
    ]
    failed, requeued = json.loads(events[3]["Detail"]), json.loads(events[4]["Detail"])
    assert failed["FailureReason"].startswith("CapacityError")
    assert requeued["statusReason"].startswith("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")


def test_a_terminated_job_ends_with_stopping_and_stopped_and_its_planned_changes_vanish(
    make_rig: RigFactory,
) -> None:
    rig = make_rig()
    job_id = spotline_job(rig)
    rig.clock.at(600)
    assert summaries(rig.standin.state_change_events())[-1] == (330, "aws.batch", "RUNNING")
    assert rig.standin.next_change_after(at(600)) == at(3930)  # Uploading, as planned so far
    rig.batch.terminate_service_job(jobId=job_id, reason="Deadline at risk: switching to on-demand")

    assert rig.standin.next_change_after(at(600)) == at(600 + 30)  # the 30 s of Stopping
    rig.clock.at(5000)
    events = rig.standin.state_change_events()
    assert summaries(events) == [
        (600, "aws.sagemaker", "Stopping/Stopping"),
        (630, "aws.sagemaker", "Stopped/Stopped"),
        (630, "aws.batch", "FAILED"),
    ]
    failed = json.loads(events[-1]["Detail"])
    assert failed["statusReason"] == "Terminated: Deadline at risk: switching to on-demand"
    assert failed["isTerminated"] is True and failed["stoppedAt"] == ms(630)
    assert rig.standin.next_change_after(at(600)) == at(630)  # a change in the past is still one
    assert rig.standin.next_change_after(rig.clock.now) is None


def test_a_job_terminated_while_runnable_fails_at_once_without_a_training_job(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload())
    rig.clock.at(20)
    assert summaries(rig.standin.state_change_events()) == [(15, "aws.batch", "RUNNABLE")]
    rig.batch.terminate_service_job(jobId=job_id, reason="Execution stopped")
    rig.clock.at(1000)

    events = rig.standin.state_change_events()
    assert summaries(events) == [(20, "aws.batch", "FAILED")]
    assert json.loads(events[0]["Detail"])["statusReason"] == "Terminated: Execution stopped"
    assert rig.standin.next_change_after(at(20)) is None


def test_a_stop_at_the_moment_of_a_reported_change_is_reported_too(make_rig: RigFactory) -> None:
    rig = make_rig()
    rig.submit(training_payload())
    rig.clock.at(330)  # Training begins now, and is reported
    assert summaries(rig.standin.state_change_events())[-1] == (330, "aws.batch", "RUNNING")
    rig.sagemaker.stop_training_job(TrainingJobName=rig.training_name())
    rig.clock.at(400)

    assert summaries(rig.standin.state_change_events()) == [
        (330, "aws.sagemaker", "Stopping/Stopping"),
        (360, "aws.sagemaker", "Stopped/Stopped"),
        (360, "aws.batch", "FAILED"),
    ]


def _structure(value: Any) -> Any:
    """The keys of a JSON value, all the way down (a list by its first item)."""
    if isinstance(value, dict):
        return {key: _structure(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_structure(value[0])] if value else []
    return type(value).__name__


@pytest.mark.parametrize(
    ("sample", "source", "status"),
    [
        ("batch_service_job_state_change.json", "aws.batch", "SUCCEEDED"),
        ("sagemaker_training_job_state_change.json", "aws.sagemaker", "Completed/Completed"),
    ],
)
def test_the_sample_events_have_the_shape_the_stand_in_emits(
    make_rig: RigFactory, sample: str, source: str, status: str
) -> None:
    # As Spotline submits on its quota-managed queue: the team's quotaShareName, no shareIdentifier.
    rig = quota_rig(make_rig)
    rig.standin.register_quota_share(QUEUE, "search-ranking", {G5: 2})
    spotline_job(rig, quotaShareName="search-ranking")
    rig.clock.at(5000)
    (emitted,) = [e for e in rig.standin.state_change_events() if summary(e)[1:] == (source, status)]
    event = json.loads((EVENTS_DIR / sample).read_text())
    detail = json.loads(emitted["Detail"])
    if source == "aws.batch":
        # DescribeServiceJob's members (botocore): the job's quota share, never both share fields.
        assert detail["quotaShareName"] == event["detail"]["quotaShareName"] == "search-ranking"
        assert "shareIdentifier" not in event["detail"] and "shareIdentifier" not in detail

    assert set(event) == {"version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"}
    assert (event["source"], event["detail-type"]) == (emitted["Source"], emitted["DetailType"])
    assert event["resources"] == emitted["Resources"]
    assert datetime.fromisoformat(event["time"]) == emitted["Time"]
    assert _structure(event["detail"]) == _structure(json.loads(emitted["Detail"]))
