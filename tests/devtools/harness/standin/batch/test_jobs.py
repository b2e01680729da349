"""Batch service jobs: retry decisions, timeouts, idempotent submission, termination, listing."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from devtools.harness.standin.fixture_rig import (
    CHECKPOINT,
    PROJECT_RETRY,
    RigFactory,
    batch_named,
    check_shapes,
    run_to_end,
    training_payload,
)
from spotline_dev.harness.standin import SpotWeather, TrainingBehaviour


def test_retry_when_no_rule_matches_counts_training_across_attempts(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=7200, fail_after=1800))
    retry = {"attempts": 2, "evaluateOnExit": [{"action": "EXIT", "onStatusReason": "*CapacityError*"}]}
    job_id = rig.submit(training_payload(), retryStrategy=retry)

    assert rig.status_at(2140, job_id) == ("RUNNABLE", "Failed")  # latestAttempt: the failed one
    # The second attempt restores the last checkpoint and fails as soon as it trains again:
    # the training code has already used up its 1800 s under this checkpoint prefix.
    assert rig.status_at(2160 + 300, job_id) == ("FAILED", "Failed")
    job = rig.batch_job(job_id)
    names = [a["serviceResourceId"]["value"].rsplit("/", 1)[1] for a in job["attempts"]]
    assert len(names) == 2 and batch_named(names)
    assert rig.view(job_id).attempts[1].restored_from_step == 30


def test_internal_server_error_is_retried_by_the_batch_retry_strategy(make_rig: RigFactory) -> None:
    rig = make_rig()
    rig.standin.fail_next_attempt("InternalServerError: We encountered an internal error. Please try again.")
    job_id = rig.submit(training_payload(), retryStrategy=PROJECT_RETRY)

    assert rig.status_at(89, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(91, job_id)[0] == "RUNNABLE"
    assert rig.status_at(121, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(120 + 300 + 3600 + 60, job_id) == ("SUCCEEDED", "Completed")
    job = rig.batch_job(job_id)
    assert len(job["attempts"]) == 2
    assert job["attempts"][0]["statusReason"] == (
        "Received status from SageMaker: InternalServerError: We encountered an internal error. Please try again."
    )
    assert job["latestAttempt"]["serviceResourceId"]["value"].endswith("/" + rig.training_name(2, job_id))
    failed = rig.training(rig.training_name(1, job_id))
    assert (failed["TrainingJobStatus"], failed["FailureReason"][:19]) == ("Failed", "InternalServerError")


def test_capacity_errors_are_retried_without_using_attempts(make_rig: RigFactory) -> None:
    rig = make_rig()
    for _ in range(2):
        rig.standin.fail_next_attempt("CapacityError: Unable to provision requested ML compute capacity.")
    job_id = rig.submit(training_payload(spot=False), retryStrategy={"attempts": 1})

    rig.clock.at(100)
    job = rig.batch_job(job_id)
    assert job["status"] == "RUNNABLE"
    assert job["statusReason"].startswith("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")
    assert run_to_end(rig, job_id, step=60) > 0
    job = rig.batch_job(job_id)
    assert job["status"] == "SUCCEEDED"
    assert len(job["attempts"]) == 3


def test_a_capacity_failure_keeps_the_job_runnable_until_capacity_returns(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(requeue_wait=600))
    rig.standin.fail_next_attempt("CapacityError: Unable to provision requested ML compute capacity.")
    job_id = rig.submit(training_payload(), retryStrategy=PROJECT_RETRY)

    # Created at +30 s, the attempt fails at +90 s; Batch requeues the job for the 600 s wait.
    assert rig.status_at(89, job_id) == ("SCHEDULED", "Starting")
    for seconds in (90, 400, 689):
        assert rig.status_at(seconds, job_id) == ("RUNNABLE", "Failed"), seconds
    job = rig.batch_job(job_id)
    assert job["statusReason"].startswith("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")
    assert [a["statusReason"][:45] for a in job["attempts"]] == ["Received status from SageMaker: CapacityError"]
    assert job["latestAttempt"]["serviceResourceId"]["value"].endswith("/" + rig.training_name(1, job_id))

    assert rig.status_at(690, job_id) == ("SCHEDULED", "Starting")  # capacity is back: a new training job
    job = rig.batch_job(job_id)
    names = [a["serviceResourceId"]["value"].rsplit("/", 1)[1] for a in job["attempts"]]
    assert len(names) == 2 and batch_named(names)
    assert "statusReason" not in job and "stoppedAt" not in job["attempts"][1]
    assert job["latestAttempt"] == {"serviceResourceId": job["attempts"][1]["serviceResourceId"]}
    assert rig.status_at(690 + 300 + 3600 + 60, job_id) == ("SUCCEEDED", "Completed")
    check_shapes(rig)


def test_internal_errors_are_retried_up_to_the_attempts_then_the_job_fails(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(requeue_wait=600))
    for _ in range(3):
        rig.standin.fail_next_attempt("InternalServerError: We encountered an internal error. Please try again.")
    job_id = rig.submit(training_payload(), retryStrategy=PROJECT_RETRY)

    # Attempts at +30, +690 and +1350 s, each failing 60 s after it starts; the third is the last.
    assert rig.status_at(600, job_id) == ("RUNNABLE", "Failed")
    assert rig.status_at(700, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(1349, job_id) == ("RUNNABLE", "Failed")
    assert rig.status_at(1409, job_id) == ("SCHEDULED", "Starting")
    assert rig.status_at(1410, job_id) == ("FAILED", "Failed")
    job = rig.batch_job(job_id)
    assert len(job["attempts"]) == 3
    assert job["statusReason"].startswith("Received status from SageMaker: InternalServerError")


def test_other_failures_end_the_job_at_once_whatever_the_wait(make_rig: RigFactory) -> None:
    rig = make_rig(SpotWeather(requeue_wait=600), behaviour=TrainingBehaviour(duration=7200, fail_after=1800))
    job_id = rig.submit(training_payload(), retryStrategy=PROJECT_RETRY)

    assert rig.status_at(330 + 1800, job_id) == ("FAILED", "Failed")
    assert len(rig.batch_job(job_id)["attempts"]) == 1


def test_batch_timeout_stops_the_attempt(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload(), timeoutConfig={"attemptDurationSeconds": 600}, retryStrategy=PROJECT_RETRY)

    assert rig.status_at(630, job_id) == ("RUNNING", "Stopping")
    assert rig.status_at(660, job_id) == ("FAILED", "Stopped")
    job = rig.batch_job(job_id)
    assert (job["statusReason"], len(job["attempts"])) == ("Job attempt duration exceeded timeout", 1)
    assert rig.store.files[CHECKPOINT]["step"] == 5  # SIGTERM after 300 s of training


def test_a_repeated_client_token_is_rejected_without_a_second_job(make_rig: RigFactory) -> None:
    rig = make_rig()
    first = rig.submit(training_payload(), clientToken="execution-1-attempt-1-spot")

    # The API reference: the second of two identical requests with one clientToken "is rejected".
    with pytest.raises(ClientError, match="already used") as rejected:
        rig.submit(training_payload(), clientToken="execution-1-attempt-1-spot")
    assert rejected.value.response["Error"]["Code"] == "ClientException"
    assert rejected.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with pytest.raises(ClientError, match="different parameters"):
        rig.submit(training_payload(max_runtime=3600), clientToken="execution-1-attempt-1-spot")
    assert [job.job_id for job in rig.standin.jobs] == [first]
    rig.submit(training_payload("ranker-v2-1a2b3c4d-a2-spot"), clientToken="execution-1-attempt-2-spot")
    assert len(rig.standin.jobs) == 2


def test_terminate_stops_the_training_job_after_a_final_checkpoint(make_rig: RigFactory) -> None:
    rig = make_rig(behaviour=TrainingBehaviour(duration=7200))
    job_id = rig.submit(training_payload())
    rig.clock.at(330 + 40 * 60)  # 40 minutes into training: checkpoints at 15 and 30 minutes
    rig.batch.terminate_service_job(jobId=job_id, reason="Deadline at risk: switching to on-demand")

    job = rig.batch_job(job_id)
    assert (job["status"], job["isTerminated"]) == ("RUNNING", True)
    training = rig.training(rig.training_name())
    assert (training["TrainingJobStatus"], training["SecondaryStatus"]) == ("Stopping", "Stopping")
    assert rig.store.files[CHECKPOINT] == {
        "step": 40,
        "totalSteps": 120,
        "updatedAt": "2026-11-29T08:45:30Z",
        "trainingSeconds": 2400.0,  # 40 of 120 steps of a 2-hour job, as the helper records
        "byInstanceType": {"ml.g5.2xlarge": {"steps": 40, "seconds": 2400.0}},  # the type it ran on
    }

    rig.clock.at(330 + 40 * 60 + 30)
    job = rig.batch_job(job_id)
    assert (job["status"], job["statusReason"]) == ("FAILED", "Terminated: Deadline at risk: switching to on-demand")
    training = rig.training(rig.training_name())
    assert (training["TrainingJobStatus"], training["SecondaryStatus"]) == ("Stopped", "Stopped")
    assert training["TrainingTimeInSeconds"] == 60 + 40 * 60
    assert [p["step"] for _, p in rig.store.writes] == [15, 30, 40]
    rig.batch.terminate_service_job(jobId=job_id, reason="again")  # a finished job: nothing happens
    with pytest.raises(ClientError, match="ValidationException"):
        rig.sagemaker.stop_training_job(TrainingJobName=rig.training_name())

    # The resubmission (on-demand, same checkpoint prefix) picks up at step 40 of 120.
    rig.clock.at(3000)
    second = rig.submit(training_payload("ranker-v2-a2-od", spot=False), name="ranker-v2-a2-od")
    assert rig.status_at(3000 + 30 + 480 + 1, second) == ("RUNNING", "Training")
    assert rig.view(second).restored_from_step == 40
    assert rig.status_at(3000 + 30 + 480 + 80 * 60 + 60, second) == ("SUCCEEDED", "Completed")
    assert rig.store.files[CHECKPOINT]["step"] == 120


def test_list_service_jobs_filters_by_queue_and_status(make_rig: RigFactory) -> None:
    rig = make_rig()
    rig.standin.register_queue("other-queue")
    running = rig.submit(training_payload("job-a"), name="ranker-a")
    rig.clock.at(600)
    queued = rig.submit(training_payload("job-b"), name="ranker-b")
    elsewhere = rig.submit(training_payload("job-c"), name="ranker-c", jobQueue="other-queue")
    failed = rig.submit(training_payload("job-d"), name="other-d")
    rig.batch.terminate_service_job(jobId=failed, reason="not needed")

    def ids(**query: Any) -> list[str]:
        return [job["jobId"] for job in rig.batch.list_service_jobs(**query)["jobSummaryList"]]

    assert ids(jobQueue="spotline-training") == [running]  # RUNNING unless told otherwise
    assert ids(jobQueue="spotline-training", jobStatus="SUBMITTED") == [queued]
    assert ids(jobQueue=rig.queue, jobStatus="FAILED") == [failed]
    assert ids(jobQueue="other-queue", jobStatus="SUBMITTED") == [elsewhere]
    assert ids(jobQueue="spotline-training", filters=[{"name": "JOB_NAME", "values": ["ranker-*"]}]) == [
        queued,
        running,
    ]

    first = rig.batch.list_service_jobs(
        jobQueue="spotline-training", filters=[{"name": "JOB_NAME", "values": ["*"]}], maxResults=2
    )
    assert len(first["jobSummaryList"]) == 2
    rest = rig.batch.list_service_jobs(
        jobQueue="spotline-training", filters=[{"name": "JOB_NAME", "values": ["*"]}], nextToken=first["nextToken"]
    )
    assert [j["jobId"] for j in rest["jobSummaryList"]] == [running]
    assert "nextToken" not in rest
    summary = next(j for j in first["jobSummaryList"] if j["jobId"] == failed)
    assert (summary["status"], summary["isTerminated"]) == ("FAILED", True)
    pages = rig.batch.get_paginator("list_service_jobs").paginate(
        jobQueue="spotline-training", jobStatus="FAILED", PaginationConfig={"PageSize": 1}
    )
    assert [j["jobId"] for page in pages for j in page["jobSummaryList"]] == [failed]
    check_shapes(rig)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # ListServiceJobs.filters: "Only one filter can be used at a time."
        (
            {
                "filters": [
                    {"name": "JOB_NAME", "values": ["ranker-*"]},
                    {"name": "AFTER_CREATED_AT", "values": ["0"]},
                ]
            },
            "only one filter",
        ),
        ({"filters": [{"name": "JOB_STATUS", "values": ["RUNNING"]}]}, "not a filter name"),  # not documented
        ({"filters": [{"name": "job_name", "values": ["ranker-*"]}]}, "not a filter name"),  # "case sensitive"
        # "a string representation of the number of milliseconds since 00:00:00 UTC (midnight) on January 1, 1970"
        ({"filters": [{"name": "BEFORE_CREATED_AT", "values": ["2026-11-29"]}]}, "milliseconds"),
        ({"maxResults": 0}, "maxResults"),  # "This value can be between 1 and 100."
        ({"maxResults": 101}, "maxResults"),
        ({"nextToken": "not-a-token"}, "nextToken"),
    ],
)
def test_list_service_jobs_refuses_what_the_api_reference_refuses(
    make_rig: RigFactory, query: dict[str, Any], expected: str
) -> None:
    rig = make_rig()
    rig.submit(training_payload(), name="ranker-a")
    with pytest.raises(ClientError, match=expected) as refused:
        rig.batch.list_service_jobs(jobQueue="spotline-training", **query)
    assert refused.value.response["Error"]["Code"] == "ClientException"


def test_list_service_jobs_reads_the_created_at_filters_and_leaves_out_is_terminated_when_false(
    make_rig: RigFactory,
) -> None:
    rig = make_rig()
    early = rig.submit(training_payload("job-a"), name="ranker-a")
    rig.clock.at(600)
    late = rig.submit(training_payload("job-b"), name="ranker-b")
    middle = str(int(rig.clock.now.timestamp() * 1000) - 1)

    def ids(name: str) -> list[str]:
        page = rig.batch.list_service_jobs(jobQueue=rig.queue, filters=[{"name": name, "values": [middle]}])
        return [job["jobId"] for job in page["jobSummaryList"]]

    assert (ids("BEFORE_CREATED_AT"), ids("AFTER_CREATED_AT")) == ([early], [late])
    summaries = rig.batch.list_service_jobs(jobQueue=rig.queue, jobStatus="SUBMITTED")["jobSummaryList"]
    # ServiceJobSummary.isTerminated: "This field is only present when the value is true."
    assert [("isTerminated" in summary) for summary in summaries] == [False]


def test_service_jobs_are_found_by_their_id_only(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload())
    arn = rig.batch_job(job_id)["jobArn"]
    for call in (
        lambda: rig.batch.describe_service_job(jobId=arn),  # "The job ID for the service job to describe."
        lambda: rig.batch.terminate_service_job(jobId=arn, reason="stop"),
        lambda: rig.batch.update_service_job(jobId="00000000-0000-0000-0000-000000000000", schedulingPriority=1),
    ):
        with pytest.raises(ClientError, match="no service job has the ID") as refused:
            call()
        assert refused.value.response["Error"]["Code"] == "ClientException"
    assert rig.batch_job(job_id)["isTerminated"] is False


def test_update_service_job_keeps_the_priority_within_its_range(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload())
    # UpdateServiceJob: "The minimum supported value is 0 and the maximum supported value is 9999."
    # The model gives the Integer no range, so neither botocore nor request_problems checks it.
    with pytest.raises(ClientError, match="schedulingPriority: 10000 is not between 0 and 9999"):
        rig.batch.update_service_job(jobId=job_id, schedulingPriority=10000)
    rig.batch.update_service_job(jobId=job_id, schedulingPriority=9999)
    assert rig.batch_job(job_id)["schedulingPriority"] == 9999


def test_tag_resource_keeps_the_user_guides_tag_restrictions(make_rig: RigFactory) -> None:
    rig = make_rig()
    job_id = rig.submit(training_payload(), tags={f"submitted-{n}": "x" for n in range(30)})
    arn = rig.batch_job(job_id)["jobArn"]
    # "Tag restrictions": at most 50 tags per resource, counting the job's own tags.
    with pytest.raises(ClientError, match="51 tags"):
        rig.batch.tag_resource(resourceArn=arn, tags={f"added-{n}": "y" for n in range(21)})
    # "Don't use aws:, AWS:, or any upper or lowercase combination of such as a prefix for either keys or values"
    for tags in ({"AWS:team": "a"}, {"team": "aws:a"}):
        with pytest.raises(ClientError, match="reserved for AWS use"):
            rig.batch.tag_resource(resourceArn=arn, tags=tags)
    rig.batch.tag_resource(resourceArn=arn, tags={"submitted-0": "changed", **{f"added-{n}": "y" for n in range(20)}})
    tags = rig.batch_job(job_id)["tags"]
    assert (len(tags), tags["submitted-0"]) == (50, "changed")
