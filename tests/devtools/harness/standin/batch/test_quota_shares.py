"""Quota shares on a SAGEMAKER_TRAINING queue: created by the stand-in or through boto3 (answers
shaped as botocore's model), SubmitServiceJob's quotaShareName checks, and admission with borrowing
(own capacity first, then other shares' idle capacity as their sharing strategy allows)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from devtools.harness.standin.fixture_rig import RigFactory, check_shapes, ms, run_to_end
from devtools.harness.standin.quota_rig import (
    G5,
    POLICY,
    QUEUE,
    START,
    STOPPING,
    capture_share_bodies,
    check_bodies,
    payload,
    quota_rig,
    submit,
)
from spotline_dev.harness.standin.base.http_answers import ApiError

RUNNING_BY = START + 600  # every job admitted at START runs by then


def _error(excinfo: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    error = excinfo.value.response["Error"]
    return error["Code"], error["Message"]


# --- the quota share resources ------------------------------------------------------------


def test_quota_shares_are_created_described_listed_and_updated_through_boto3(make_rig: RigFactory) -> None:
    rig = quota_rig(make_rig)
    bodies = capture_share_bodies(rig)
    created = rig.batch.create_quota_share(
        quotaShareName="search-ranking",
        jobQueue=QUEUE,
        capacityLimits=[{"maxCapacity": 4, "capacityUnit": "ml.g5.2xlarge"}],
        resourceSharingConfiguration={"strategy": "LEND_AND_BORROW", "borrowLimit": 100},
        preemptionConfiguration={"inSharePreemption": "ENABLED"},
        tags={"team": "search-ranking"},
    )
    arn = "arn:aws:batch:us-east-1:123456789012:job-queue/spotline-training/quota-share/search-ranking"
    assert created["quotaShareArn"] == arn
    rig.standin.register_quota_share(QUEUE, "vision", {G5: 2}, strategy="LEND")

    described = rig.batch.describe_quota_share(quotaShareArn=arn)
    assert {k: v for k, v in described.items() if k != "ResponseMetadata"} == {
        "quotaShareName": "search-ranking",
        "quotaShareArn": arn,
        "jobQueueArn": rig.queue,
        "capacityLimits": [{"maxCapacity": 4, "capacityUnit": "ml.g5.2xlarge"}],
        "resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW", "borrowLimit": 100},
        "preemptionConfiguration": {"inSharePreemption": "ENABLED"},
        "state": "ENABLED",
        "status": "VALID",
        "tags": {"team": "search-ranking"},
    }
    first = rig.batch.list_quota_shares(jobQueue=QUEUE, maxResults=1)
    second = rig.batch.list_quota_shares(jobQueue=QUEUE, nextToken=first["nextToken"])
    assert [s["quotaShareName"] for s in first["quotaShares"] + second["quotaShares"]] == ["search-ranking", "vision"]
    assert "nextToken" not in second
    assert second["quotaShares"][0]["capacityLimits"] == [{"maxCapacity": 2, "capacityUnit": "ml.g5.2xlarge"}]

    rig.batch.update_quota_share(
        quotaShareArn=arn, capacityLimits=[{"maxCapacity": 6, "capacityUnit": "ml.g5.2xlarge"}], state="DISABLED"
    )
    updated = rig.batch.describe_quota_share(quotaShareArn=arn)
    assert (updated["capacityLimits"][0]["maxCapacity"], updated["state"]) == (6, "DISABLED")
    assert updated["preemptionConfiguration"] == {"inSharePreemption": "ENABLED"}  # what was not given stays
    check_bodies(bodies)
    assert {operation for operation, _ in bodies} == {
        "CreateQuotaShare",
        "DescribeQuotaShare",
        "ListQuotaShares",
        "UpdateQuotaShare",
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"resourceSharingConfiguration": {"strategy": "RESERVE", "borrowLimit": 50}}, "only be applied"),
        (
            {"resourceSharingConfiguration": {"strategy": "SHARE"}},
            "'SHARE' is not one of RESERVE, LEND, LEND_AND_BORROW",
        ),
        ({"capacityLimits": []}, "a quota share needs between 1 and 5 capacity limits"),
        ({"capacityLimits": [{"maxCapacity": 1, "capacityUnit": f"ml.c5.{n}xlarge"} for n in range(6)]}, "1 and 5"),
        ({"capacityLimits": [{"maxCapacity": 1, "capacityUnit": "NUM_INSTANCES"}]}, "is not an instance type"),
        ({"quotaShareName": "team a"}, "1 to 128 characters"),
        ({"quotaShareName": "t" * 129}, "1 to 128 characters"),
        ({"resourceSharingConfiguration": {"strategy": "LEND_AND_BORROW", "borrowLimit": -2}}, "-1 (unlimited)"),
        ({"preemptionConfiguration": {"inSharePreemption": "MAYBE"}}, "'MAYBE' is not one of ENABLED, DISABLED"),
    ],
)
def test_create_quota_share_refuses_what_batch_refuses(
    make_rig: RigFactory, change: dict[str, object], message: str
) -> None:
    rig = quota_rig(make_rig)
    request = {
        "quotaShareName": "team-a",
        "jobQueue": QUEUE,
        "capacityLimits": [{"maxCapacity": 1, "capacityUnit": "ml.g5.2xlarge"}],
        "resourceSharingConfiguration": {"strategy": "LEND"},
        "preemptionConfiguration": {"inSharePreemption": "DISABLED"},
        **change,
    }
    with pytest.raises(ClientError) as excinfo:
        rig.batch.create_quota_share(**request)
    code, text = _error(excinfo)
    assert code == "ClientException" and message in text


def test_a_quota_share_needs_a_queue_with_a_scheduling_policy_and_a_name_of_its_own(make_rig: RigFactory) -> None:
    rig = make_rig(capacity=2)  # no scheduling policy
    with pytest.raises(ApiError, match="no quota management scheduling policy"):
        rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1})
    rig = make_rig(capacity=2, scheduling_policy_arn=POLICY)  # an environment counting NUM_INSTANCES
    with pytest.raises(ApiError, match="counts NUM_INSTANCES: a quota management service environment's capacity"):
        rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1})
    rig = quota_rig(make_rig)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1})
    with pytest.raises(ApiError, match="already exists"):
        rig.standin.register_quota_share(QUEUE, "team-a", {G5: 2})


def test_a_job_queue_holds_at_most_20_quota_shares(make_rig: RigFactory) -> None:
    # User guide, "Quota shares": "A maximum of 20 can be attached to any job queue."
    rig = quota_rig(make_rig)
    for n in range(20):
        rig.standin.register_quota_share(QUEUE, f"team-{n:02d}", {G5: 1})
    with pytest.raises(ClientError) as excinfo:
        rig.batch.create_quota_share(
            quotaShareName="team-20",
            jobQueue=QUEUE,
            capacityLimits=[{"maxCapacity": 1, "capacityUnit": G5}],
            resourceSharingConfiguration={"strategy": "LEND"},
            preemptionConfiguration={"inSharePreemption": "DISABLED"},
        )
    assert _error(excinfo) == (
        "ClientException",
        "Job queue spotline-training already has 20 quota shares, the most it can have",
    )


@pytest.mark.parametrize(
    ("queue", "share", "message"),
    [
        ({"status": "INVALID"}, {}, "is INVALID: it must be VALID to have quota shares"),
        ({}, {"tags": {f"k{n}": "v" for n in range(51)}}, "tags has 51 entries: a quota share can have at most 50"),
        ({}, {"strategy": "SHARE"}, "strategy 'SHARE' is not one of RESERVE, LEND, LEND_AND_BORROW"),
        ({}, {"strategy": "LEND", "borrow_limit": 10}, "can only be applied to quota shares with a strategy of"),
        ({}, {"state": "PAUSED"}, "state 'PAUSED' is not ENABLED or DISABLED"),
        ({}, {"capacity": {G5: -1}}, "must be a whole number of instances"),
        (
            {},
            {
                "capacity": {
                    G5: 1,
                    "ml.c5.xlarge": 1,
                    "ml.c5.2xlarge": 1,
                    "ml.c5.4xlarge": 1,
                    "ml.c5.9xlarge": 1,
                    "ml.c5.18xlarge": 1,
                }
            },
            "capacityLimits has 6 entries",
        ),
        ({}, {"capacity": {"": 1}}, "capacityUnit '' is not an instance type"),
    ],
)
def test_register_quota_share_refuses_what_create_quota_share_refuses(
    make_rig: RigFactory, queue: dict[str, str], share: dict[str, object], message: str
) -> None:
    rig = make_rig(capacity={G5: 2}, scheduling_policy_arn=POLICY, **queue)
    arguments: dict[str, object] = {"capacity": {G5: 1}, **share}
    with pytest.raises(ApiError, match=message) as raised:
        rig.standin.register_quota_share(QUEUE, "team-a", **arguments)
    assert raised.value.code == "ClientException"


@pytest.mark.parametrize("size", [0, 101])
def test_list_quota_shares_takes_max_results_between_1_and_100(make_rig: RigFactory, size: int) -> None:
    # API reference, ListQuotaShares.maxResults: "This value can be between 1 and 100."
    rig = quota_rig(make_rig)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1})
    with pytest.raises(ClientError) as excinfo:
        rig.batch.list_quota_shares(jobQueue=QUEUE, maxResults=size)
    assert _error(excinfo) == ("ClientException", f"maxResults {size} is not between 1 and 100")
    assert len(rig.batch.list_quota_shares(jobQueue=QUEUE, maxResults=100)["quotaShares"]) == 1


# --- SubmitServiceJob's checks ------------------------------------------------------------


def test_submissions_to_a_quota_queue_must_name_one_of_its_enabled_shares(make_rig: RigFactory) -> None:
    rig = quota_rig(make_rig)
    share = rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1})

    with pytest.raises(ClientError) as missing:
        rig.submit(payload("no-share"), name="no-share")
    assert _error(missing) == (
        "ClientException",
        "quotaShareName is required: job queue spotline-training uses quota management",
    )
    with pytest.raises(ClientError) as unknown:
        submit(rig, "typo", "team-b")
    assert _error(unknown) == ("ClientException", "Quota share team-b does not exist in job queue spotline-training")
    running = submit(rig, "running", "team-a")  # no shareIdentifier needed: quota, not fair share
    rig.clock.at(RUNNING_BY)

    rig.batch.update_quota_share(quotaShareArn=share, state="DISABLED")
    with pytest.raises(ClientError, match="DISABLED: it does not accept new jobs"):
        submit(rig, "late", "team-a")
    assert rig.batch_job(running)["status"] == "RUNNING"  # "jobs already submitted can finish"
    run_to_end(rig, running)
    assert rig.batch_job(running)["status"] == "SUCCEEDED"


def test_delete_quota_share_takes_only_a_disabled_share_and_terminates_its_jobs(make_rig: RigFactory) -> None:
    # API reference, DeleteQuotaShare: "You must first disable submissions for the share by updating the
    # state to DISABLED using the UpdateQuotaShare operation. All jobs in the share are eventually
    # terminated when you delete a quota share."
    rig = quota_rig(make_rig)
    share = rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1}, strategy="RESERVE")
    rig.standin.register_quota_share(QUEUE, "team-b", {G5: 1}, strategy="RESERVE")
    bodies = capture_share_bodies(rig)
    running = submit(rig, "running", "team-a")
    other = submit(rig, "other", "team-b")
    rig.clock.at(RUNNING_BY)
    waiting = submit(rig, "waiting", "team-a")  # team-a's one instance is taken: RUNNABLE
    rig.clock.at(RUNNING_BY + START)
    assert [rig.batch_job(j)["status"] for j in (running, other, waiting)] == ["RUNNING", "RUNNING", "RUNNABLE"]

    with pytest.raises(ClientError) as refused:
        rig.batch.delete_quota_share(quotaShareArn=share)
    assert _error(refused) == (
        "ClientException",
        "Quota share team-a is ENABLED: you must first disable submissions for the share by updating the state "
        "to DISABLED using the UpdateQuotaShare operation",
    )
    assert rig.batch_job(running)["status"] == "RUNNING"  # a refused delete changes nothing

    rig.batch.update_quota_share(quotaShareArn=share, state="DISABLED")
    assert rig.batch.delete_quota_share(quotaShareArn=share)["ResponseMetadata"]["HTTPStatusCode"] == 200
    listed = rig.batch.list_quota_shares(jobQueue=QUEUE)["quotaShares"]
    assert [s["quotaShareName"] for s in listed] == ["team-b"]
    with pytest.raises(ClientError, match="does not exist"):
        rig.batch.describe_quota_share(quotaShareArn=share)
    with pytest.raises(ClientError, match="does not exist"):
        rig.batch.delete_quota_share(quotaShareArn=share)  # deleted once only

    # The waiting job ends at once; the running one once its training job has stopped.
    assert (rig.batch_job(waiting)["status"], rig.batch_job(waiting)["statusReason"]) == (
        "FAILED",
        "Terminated: Quota share team-a was deleted",
    )
    assert rig.batch_job(running)["status"] == "RUNNING"
    rig.clock.at(RUNNING_BY + START + STOPPING + 60)
    assert (rig.batch_job(running)["status"], rig.batch_job(running)["statusReason"]) == (
        "FAILED",
        "Terminated: Quota share team-a was deleted",
    )
    assert rig.batch_job(other)["status"] == "RUNNING"  # the other share's jobs go on
    check_bodies(bodies)
    assert "DeleteQuotaShare" in {operation for operation, _ in bodies}


def test_share_identifier_is_refused_on_a_quota_management_queue(make_rig: RigFactory) -> None:
    # API reference, SubmitServiceJob.shareIdentifier: "Don't specify this parameter if the job queue
    # doesn't have a fair-share scheduling policy."
    rig = quota_rig(make_rig)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1})
    with pytest.raises(ClientError) as excinfo:
        submit(rig, "both", "team-a", shareIdentifier="team-a")
    assert _error(excinfo) == (
        "ClientException",
        "shareIdentifier cannot be used: job queue spotline-training has a quota share scheduling policy, not a "
        "fair-share one (use quotaShareName)",
    )


def test_quota_share_name_is_refused_on_a_queue_without_quota_shares(make_rig: RigFactory) -> None:
    rig = make_rig(capacity=2)
    with pytest.raises(ClientError) as excinfo:
        submit(rig, "job", "team-a")
    code, text = _error(excinfo)
    assert code == "ClientException" and "has no quota share scheduling policy" in text


def test_describe_and_list_show_the_share_the_preemption_configuration_and_the_capacity_used(
    make_rig: RigFactory,
) -> None:
    rig = quota_rig(make_rig, capacity=4)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 4})
    job = submit(rig, "wide", "team-a", 2, preemptionConfiguration={"preemptionRetriesBeforeTermination": 3})
    rig.clock.at(RUNNING_BY)

    described = rig.batch_job(job)
    assert described["quotaShareName"] == "team-a"
    assert described["preemptionConfiguration"] == {"preemptionRetriesBeforeTermination": 3}
    assert described["capacityUsage"] == [{"capacityUnit": "ml.g5.2xlarge", "quantity": 2.0}]
    assert "preemptionSummary" not in described  # "appears on a service job when it has been preempted"
    (summary,) = rig.batch.list_service_jobs(
        jobQueue=QUEUE, jobStatus="RUNNING", filters=[{"name": "QUOTA_SHARE_NAME", "values": ["team-a"]}]
    )["jobSummaryList"]
    assert (summary["jobId"], summary["quotaShareName"]) == (job, "team-a")
    assert summary["capacityUsage"] == [{"capacityUnit": "ml.g5.2xlarge", "quantity": 2.0}]
    assert not rig.batch.list_service_jobs(
        jobQueue=QUEUE, jobStatus="RUNNABLE", filters=[{"name": "QUOTA_SHARE_NAME", "values": ["team-a"]}]
    )["jobSummaryList"]  # QUOTA_SHARE_NAME combines with jobStatus
    check_shapes(rig)


# --- admission and borrowing --------------------------------------------------------------


def test_a_share_borrows_the_idle_capacity_of_lending_shares(make_rig: RigFactory) -> None:
    rig = quota_rig(make_rig, capacity=3)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1})
    rig.standin.register_quota_share(QUEUE, "team-b", {G5: 2}, strategy="LEND")
    jobs = [submit(rig, f"a-{n}", "team-a") for n in range(3)]
    assert {rig.status_at(RUNNING_BY, j)[0] for j in jobs} == {"RUNNING"}  # 1 own + 2 borrowed

    fourth = submit(rig, "a-3", "team-a")
    assert rig.status_at(RUNNING_BY * 2, fourth)[0] == "RUNNABLE"  # nothing idle is left
    assert rig.batch_job(fourth).get("statusReason") is None


def test_a_borrow_limit_caps_what_a_share_borrows(make_rig: RigFactory) -> None:
    rig = quota_rig(make_rig, capacity=None)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1}, borrow_limit=100)  # 100 % of 1: one more
    rig.standin.register_quota_share(QUEUE, "team-b", {G5: 3}, strategy="LEND")
    jobs = [submit(rig, f"a-{n}", "team-a") for n in range(3)]
    assert [rig.status_at(RUNNING_BY, j)[0] for j in jobs] == ["RUNNING", "RUNNING", "RUNNABLE"]


@pytest.mark.parametrize(("lender", "borrower"), [("RESERVE", "LEND_AND_BORROW"), ("LEND_AND_BORROW", "LEND")])
def test_reserved_capacity_is_not_lent_and_a_lend_only_share_does_not_borrow(
    make_rig: RigFactory, lender: str, borrower: str
) -> None:
    rig = quota_rig(make_rig)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1}, strategy=borrower)
    rig.standin.register_quota_share(QUEUE, "team-b", {G5: 1}, strategy=lender)
    first, second = (submit(rig, f"a-{n}", "team-a") for n in range(2))
    assert [rig.status_at(RUNNING_BY, j)[0] for j in (first, second)] == ["RUNNING", "RUNNABLE"]
    end = run_to_end(rig, first)
    assert rig.status_at(end + 60, second)[0] != "RUNNABLE"  # its own capacity, once free
    assert rig.batch_job(second)["scheduledAt"] == ms(end)


def test_within_a_share_priority_then_submission_order_and_no_backfilling(make_rig: RigFactory) -> None:
    rig = quota_rig(make_rig, capacity=None)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 2}, strategy="RESERVE")
    running = submit(rig, "running", "team-a", 2, schedulingPriority=1)
    rig.clock.at(RUNNING_BY)  # the others arrive once it runs
    big = submit(rig, "big", "team-a", 2, schedulingPriority=5)
    small = submit(rig, "small", "team-a", 1, schedulingPriority=1)
    urgent = submit(rig, "urgent", "team-a", 1, schedulingPriority=9)
    end = run_to_end(rig, running)
    assert [rig.status_at(end + 60, j)[0] != "RUNNABLE" for j in (urgent, big, small)] == [True, False, False]
    end = run_to_end(rig, urgent)
    assert [rig.status_at(end + 60, j)[0] != "RUNNABLE" for j in (big, small)] == [True, False]  # small waits


def test_a_job_its_share_can_never_run_waits_with_the_misconfiguration_reason(make_rig: RigFactory) -> None:
    rig = quota_rig(make_rig, capacity=8)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 2}, strategy="RESERVE")
    rig.standin.register_quota_share(QUEUE, "team-b", {G5: 2}, borrow_limit=50)
    too_big = submit(rig, "too-big", "team-a", 3)
    behind = submit(rig, "behind", "team-a", 1)
    beyond_borrowing = submit(rig, "beyond", "team-b", 4)  # 2 own + 50 % of 2 borrowed at most
    rig.clock.at(RUNNING_BY)

    assert rig.batch_job(too_big)["statusReason"] == (
        "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requirements exceed quota share capacity limits."
    )
    assert rig.batch_job(beyond_borrowing)["statusReason"] == (
        "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED - Job requirements exceed quota share capacity limits "
        "and borrow limits."
    )
    assert (rig.batch_job(behind)["status"], rig.batch_job(behind).get("statusReason")) == ("RUNNABLE", None)
    rig.batch.terminate_service_job(jobId=too_big, reason="on-call: too big for the share")
    assert rig.status_at(RUNNING_BY * 2, behind)[0] == "RUNNING"  # no longer held back


def test_a_job_larger_than_the_service_environment_says_so(make_rig: RigFactory) -> None:
    rig = make_rig(capacity=2)  # FIFO queue, no shares: the same documented reason
    job = rig.submit(payload("huge", 3), name="huge")
    rig.clock.at(RUNNING_BY)
    assert rig.batch_job(job)["statusReason"].startswith("MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE - ")


def test_raising_a_share_limit_lets_its_waiting_job_start(make_rig: RigFactory) -> None:
    rig = quota_rig(make_rig, capacity=None)
    share = rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1}, strategy="RESERVE")
    first, second = (submit(rig, f"a-{n}", "team-a") for n in range(2))
    rig.clock.at(RUNNING_BY)
    assert rig.batch_job(second)["status"] == "RUNNABLE"

    rig.batch.update_quota_share(
        quotaShareArn=share, capacityLimits=[{"maxCapacity": 2, "capacityUnit": "ml.g5.2xlarge"}]
    )
    assert rig.batch_job(second)["scheduledAt"] == ms(RUNNING_BY)
    assert rig.batch_job(first)["status"] == "RUNNING"


def test_jobs_asking_at_the_same_moment_are_admitted_by_priority(make_rig: RigFactory) -> None:
    rig = quota_rig(make_rig, capacity=None)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1}, strategy="RESERVE")
    first = submit(rig, "first", "team-a", schedulingPriority=1)
    urgent = submit(rig, "urgent", "team-a", schedulingPriority=9)
    assert [rig.status_at(RUNNING_BY, j)[0] for j in (first, urgent)] == ["RUNNABLE", "RUNNING"]


def test_the_first_share_comes_before_any_job_of_the_queue(make_rig: RigFactory) -> None:
    rig = quota_rig(make_rig)
    rig.submit(payload("early"), name="early", shareIdentifier="search-ranking")  # a fair-share queue so far
    with pytest.raises(ApiError, match="already has jobs without a quota share"):
        rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1})
