"""Batch job queues: SubmitServiceJob's checks against them, fair share, DescribeJobQueues."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from devtools.standin.fixture_rig import RigFactory, check_shapes, training_payload


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"jobQueue": "nope"}, "does not exist"),
        ({"jobName": "has space"}, "Job name"),
        ({"schedulingPriority": 10_000}, "schedulingPriority"),
        ({"retryStrategy": {"attempts": 11}}, "attempts"),
    ],
)
def test_submit_is_validated_like_batch(make_rig: RigFactory, extra: dict[str, Any], expected: str) -> None:
    rig = make_rig()
    with pytest.raises(ClientError, match=expected) as raised:
        rig.submit(training_payload(), **extra)
    assert raised.value.response["Error"]["Code"] == "ClientException"


def test_fair_share_queue_needs_a_share_identifier(make_rig: RigFactory) -> None:
    rig = make_rig(scheduling_policy_arn="arn:aws:batch:us-east-1:123456789012:scheduling-policy/teams")
    with pytest.raises(ClientError, match="shareIdentifier is required"):
        rig.submit(training_payload())
    job_id = rig.submit(training_payload(), shareIdentifier="search-ranking", schedulingPriority=100)
    assert rig.batch_job(job_id)["shareIdentifier"] == "search-ranking"


def test_describe_job_queues_answers_for_registered_queues(make_rig: RigFactory) -> None:
    rig = make_rig(state="ENABLED")
    queues = rig.batch.describe_job_queues(jobQueues=["spotline-training"])["jobQueues"]

    assert [(q["jobQueueName"], q["jobQueueArn"], q["jobQueueType"], q["state"], q["status"]) for q in queues] == [
        ("spotline-training", rig.queue, "SAGEMAKER_TRAINING", "ENABLED", "VALID")
    ]
    assert rig.batch.describe_job_queues(jobQueues=["unknown-to-the-stand-in"])["jobQueues"] == []  # moto answers
    disabled = make_rig(state="DISABLED")
    with pytest.raises(ClientError, match="DISABLED"):
        disabled.submit(training_payload())
    check_shapes(rig)
