"""Batch and SageMaker state change events, read as the gate reads them."""

from __future__ import annotations

from typing import Any

import pytest

from spotline.core.training.training_events import MAX_FIELD, TrainingChange, training_change_of

BATCH = {
    "source": "aws.batch",
    "detail-type": "Batch Service Job State Change",
    "time": "2026-11-29T10:26:00Z",
    "detail": {"jobId": "4c7599ae", "jobName": "search-ranking-hotfix-a1", "status": "SUCCEEDED"},
}
SAGEMAKER = {
    "source": "aws.sagemaker",
    "detail-type": "SageMaker Training Job State Change",
    "time": "2026-11-29T10:25:00Z",
    "detail": {
        "TrainingJobName": "search-ranking-hotfix-a1",
        "TrainingJobStatus": "InProgress",
        "SecondaryStatus": "Interrupted",
        "Tags": {"spotline:execution": "search-ranking-hotfix-2a265c01", "spotline:team": "search-ranking"},
    },
}


def test_a_batch_change_names_the_service_job_but_not_the_execution() -> None:
    change = training_change_of(BATCH)
    assert change == TrainingChange("batch", "4c7599ae", "SUCCEEDED", None, "2026-11-29T10:26:00Z", None)
    assert change.summary == "Batch service job 4c7599ae: SUCCEEDED"


def test_a_sagemaker_change_names_the_execution_from_its_tags() -> None:
    change = training_change_of(SAGEMAKER)
    assert change is not None
    assert change.execution == "search-ranking-hotfix-2a265c01"
    assert change.summary == "SageMaker training job search-ranking-hotfix-a1: InProgress (Interrupted)"
    assert change.to_dict()["secondaryStatus"] == "Interrupted"


def test_tags_in_the_api_form_are_read_too() -> None:
    event = {**SAGEMAKER, "detail": {**SAGEMAKER["detail"], "Tags": [{"Key": "spotline:execution", "Value": "e"}]}}
    change = training_change_of(event)
    assert change is not None and change.execution == "e"


@pytest.mark.parametrize(
    "event",
    [
        None,
        "text",
        {"source": "aws.batch", "detail-type": "Batch Job State Change", "detail": BATCH["detail"]},
        {**BATCH, "detail": {"jobId": "x"}},
        {**BATCH, "detail": "not an object"},
        {**SAGEMAKER, "detail": {"TrainingJobName": "", "TrainingJobStatus": "Completed"}},
        {**SAGEMAKER, "source": "aws.batch"},
    ],
)
def test_what_is_not_a_training_job_change_is_none(event: Any) -> None:
    assert training_change_of(event) is None


def test_every_kept_field_is_bounded() -> None:
    event = {**BATCH, "detail": {"jobId": "j" * 10_000, "status": "S" * 10_000}}
    change = training_change_of(event)
    assert change is not None
    assert len(change.job) == len(change.status) == MAX_FIELD


def test_a_change_names_the_region_its_job_lives_in_the_arn_first_then_the_event() -> None:
    peer_arn = "arn:aws:batch:us-west-2:123456789012:service-job/4c7599ae"
    forwarded = {**BATCH, "region": "us-west-2"}
    assert (change := training_change_of(forwarded)) is not None and change.region == "us-west-2"
    with_arn = {**BATCH, "region": "us-east-1", "detail": {**BATCH["detail"], "jobArn": peer_arn}}
    assert (change := training_change_of(with_arn)) is not None and change.region == "us-west-2"
    trained = {**SAGEMAKER, "region": "eu-west-1"}
    assert (change := training_change_of(trained)) is not None and change.region == "eu-west-1"
