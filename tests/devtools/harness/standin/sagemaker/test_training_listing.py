"""ListTrainingJobs over the stand-in's training jobs, as the SageMaker API reference describes its
filters, sort order, pages and the StatusEquals-with-MaxResults rule; every answer passes botocore's
output shape (the stand-in checks it)."""

from __future__ import annotations

from devtools.harness.standin.fixture_rig import Rig, RigFactory, at, check_shapes, training_payload
from spotline_dev.harness.standin import TrainingBehaviour


def _three_jobs(make_rig: RigFactory) -> tuple[Rig, list[str]]:
    """Three one-hour jobs submitted 10 minutes apart; at +4400 s only the first has completed."""
    rig = make_rig(behaviour=TrainingBehaviour(duration=3600))
    ids = []
    for index in range(3):
        rig.clock.at(600 * index)
        payload = training_payload()
        payload["CheckpointConfig"]["S3Uri"] += f"job-{index}/"  # each its own: none resumes another's
        ids.append(rig.submit(payload, name=f"ranker-v2-a{index + 1}-spot"))
    rig.clock.at(4400)
    return rig, [rig.training_name(job_id=job_id) for job_id in ids]


def test_jobs_are_listed_oldest_first_by_default_with_their_statuses(make_rig: RigFactory) -> None:
    rig, names = _three_jobs(make_rig)
    listed = rig.sagemaker.list_training_jobs()["TrainingJobSummaries"]
    assert [s["TrainingJobName"] for s in listed] == names  # "The default is CreationTime", "Ascending"
    assert [s["TrainingJobStatus"] for s in listed] == ["Completed", "InProgress", "InProgress"]
    assert listed[0]["CreationTime"] == at(30) and "TrainingEndTime" in listed[0]
    assert "TrainingEndTime" not in listed[1]
    check_shapes(rig)


def test_filters_sort_and_pages(make_rig: RigFactory) -> None:
    rig, names = _three_jobs(make_rig)
    sagemaker = rig.sagemaker
    newest_first = sagemaker.list_training_jobs(SortOrder="Descending")["TrainingJobSummaries"]
    assert [s["TrainingJobName"] for s in newest_first] == names[::-1]
    running = sagemaker.list_training_jobs(StatusEquals="InProgress")["TrainingJobSummaries"]
    assert [s["TrainingJobName"] for s in running] == names[1:]
    assert (
        sagemaker.list_training_jobs(CreationTimeAfter=at(31))["TrainingJobSummaries"][0]["TrainingJobName"]
        == (names[1])
    )
    assert sagemaker.list_training_jobs(NameContains="no-such-job")["TrainingJobSummaries"] == []
    first = sagemaker.list_training_jobs(MaxResults=2)
    second = sagemaker.list_training_jobs(MaxResults=2, NextToken=first["NextToken"])
    assert [s["TrainingJobName"] for s in first["TrainingJobSummaries"] + second["TrainingJobSummaries"]] == names
    assert "NextToken" not in second
    paged = [
        s["TrainingJobName"]
        for page in sagemaker.get_paginator("list_training_jobs").paginate(PaginationConfig={"PageSize": 1})
        for s in page["TrainingJobSummaries"]
    ]
    assert paged == names


def test_status_with_max_results_filters_the_newest_max_results(make_rig: RigFactory) -> None:
    """API reference: "the MaxResults number of training jobs are first retrieved ignoring the
    StatusEquals parameter and then they are filtered": the two newest are in progress, the oldest
    completed, so MaxResults=2 with StatusEquals=Completed finds none."""
    rig, names = _three_jobs(make_rig)
    sagemaker = rig.sagemaker
    assert sagemaker.list_training_jobs(StatusEquals="Completed", MaxResults=2)["TrainingJobSummaries"] == []
    found = sagemaker.list_training_jobs(StatusEquals="Completed", MaxResults=3)["TrainingJobSummaries"]
    assert [s["TrainingJobName"] for s in found] == names[:1]
