"""Batch job queues: SubmitServiceJob's checks against them, fair share, DescribeJobQueues."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from devtools.harness.standin.fixture_rig import RigFactory, check_shapes, training_payload
from spotline_dev.harness.standin.base.http_answers import ApiError


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"jobQueue": "nope"}, "jobQueue nope does not exist"),
        ({"jobName": "has space"}, "jobName must be 1 to 128 characters"),
        ({"jobName": "a" * 129}, "jobName must be 1 to 128 characters"),
        ({"schedulingPriority": 10_000}, "schedulingPriority 10000 is not an integer between 0 and 9999"),
        ({"retryStrategy": {"attempts": 11}}, "retryStrategy.attempts 11 is not between 1 and 10"),
        (
            {"retryStrategy": {"attempts": 2, "evaluateOnExit": [{"action": "EXIT"}] * 6}},
            "retryStrategy.evaluateOnExit has 6 entries: at most 5",
        ),
        (
            {"retryStrategy": {"attempts": 2, "evaluateOnExit": [{"action": "EXIT", "onStatusReason": "x" * 513}]}},
            r"evaluateOnExit\[0\]\.onStatusReason must be at most 512 printable characters",
        ),
        (
            {"retryStrategy": {"attempts": 2, "evaluateOnExit": [{"action": "EXIT", "onStatusReason": "a\nb"}]}},
            r"evaluateOnExit\[0\]\.onStatusReason must be at most 512 printable characters",
        ),
        ({"preemptionConfiguration": {"preemptionRetriesBeforeTermination": -1}}, "is negative"),
    ],
)
def test_submit_is_validated_like_batch(make_rig: RigFactory, extra: dict[str, Any], expected: str) -> None:
    rig = make_rig()
    with pytest.raises(ClientError, match=expected) as raised:
        rig.submit(training_payload(), **extra)
    assert raised.value.response["Error"]["Code"] == "ClientException"


def test_job_names_take_what_submit_service_job_documents(make_rig: RigFactory) -> None:
    # API reference, SubmitServiceJob.jobName: "It can be up to 128 characters long. It can contain
    # uppercase and lowercase letters, numbers, hyphens (-), and underscores (_)": unlike SubmitJob's
    # jobName, nothing about the first character.
    rig = make_rig()
    for name in ("_retry-of-ranker", "-ranker", "a" * 128):
        job_id = rig.submit(training_payload(), name=name)
        assert rig.batch_job(job_id)["jobName"] == name


def test_a_retry_strategy_within_the_documented_limits_is_taken(make_rig: RigFactory) -> None:
    rig = make_rig()
    rules = [{"action": "RETRY", "onStatusReason": "Received status from SageMaker: " + "x" * 479 + "*"}] * 5
    job_id = rig.submit(training_payload(), retryStrategy={"attempts": 10, "evaluateOnExit": rules})
    assert rig.batch_job(job_id)["retryStrategy"]["attempts"] == 10


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
    with pytest.raises(ClientError, match="is DISABLED: new jobs can't be added to the queue"):
        disabled.submit(training_payload())
    invalid = make_rig(status="INVALID")
    with pytest.raises(ClientError, match="is INVALID, not VALID"):
        invalid.submit(training_payload())
    check_shapes(rig)


@pytest.mark.parametrize(
    ("capacity", "policy", "message"),
    [
        ({}, None, "capacityLimits is required"),
        ({"ml.g5.2xlarge": -1}, "arn:aws:batch:us-east-1:123456789012:scheduling-policy/q", "0 or more"),
        ({"m5.large": 1}, "arn:aws:batch:us-east-1:123456789012:scheduling-policy/q", "neither NUM_INSTANCES"),
        ({"NUM_INSTANCES": 2, "ml.g5.2xlarge": 1}, "arn:aws:batch:us-east-1:123456789012:scheduling-policy/q", "mixes"),
        ({"ml.g5.2xlarge": 1}, None, "must be NUM_INSTANCES outside quota management"),
    ],
)
def test_a_service_environment_s_capacity_limits_are_checked(
    make_rig: RigFactory, capacity: dict[str, int], policy: str | None, message: str
) -> None:
    # API reference, CapacityLimit.capacityUnit: "For SAGEMAKER_TRAINING jobs in a quota management enabled
    # service environment, specify the instance type (for example, ml.m5.large). Otherwise, use NUM_INSTANCES."
    with pytest.raises(ApiError, match=message) as raised:
        make_rig(capacity=capacity, scheduling_policy_arn=policy)
    assert raised.value.code == "ClientException"


def _payload_of_size(size: int) -> dict[str, Any]:
    payload = training_payload()
    payload["HyperParameters"] = {"pad": ""}
    payload["HyperParameters"]["pad"] = "x" * (size - len(json.dumps(payload).encode()))
    assert len(json.dumps(payload).encode()) == size
    return payload


def test_submit_takes_a_payload_of_10_kib_and_refuses_one_byte_more(make_rig: RigFactory) -> None:
    # User guide, "AWS Batch service quotas": "Maximum job service request payload size (for
    # SubmitServiceJob API operations) | 10 KiB".
    rig = make_rig()
    assert rig.submit(_payload_of_size(10 * 1024))
    with pytest.raises(ClientError, match="serviceRequestPayload is 10241 bytes") as raised:
        rig.submit(_payload_of_size(10 * 1024 + 1))
    assert raised.value.response["Error"]["Code"] == "ClientException"


def test_submit_refuses_a_request_over_30_kib(make_rig: RigFactory) -> None:
    # User guide, "AWS Batch service quotas": "Maximum size of SubmitServiceJob request | 30 KiB".
    rig = make_rig()
    tags = {f"{i:03d}" + "k" * 125: "v" * 256 for i in range(50)}
    payload = _payload_of_size(10 * 1024)
    payload["HyperParameters"]["pad"] = '"' * (len(payload["HyperParameters"]["pad"]) // 2)  # sent as \"
    with pytest.raises(ClientError, match=r"The SubmitServiceJob request is 3\d+ bytes") as raised:
        rig.submit(payload, tags=tags)
    assert raised.value.response["Error"]["Code"] == "ClientException"
