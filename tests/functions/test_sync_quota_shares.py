"""SyncQuotaShares, the TeamQuotaShares custom resource's handler, against the Batch stand-in
through boto3: CloudFormation's Create, Update and Delete requests make the queue's quota shares
follow the team registry (its index.json, as ApplyTeamChange writes it), and every request gets
exactly one answer, FAILED with the reason when something is wrong, so no stack waits for one."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import Request

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import ClientError
from moto import mock_aws

from spotline.aws.common import clients as spotline_clients
from spotline.aws.common import custom_resource
from spotline_dev.harness.local.lambda_context import LocalLambdaContext
from spotline_dev.harness.standin import BatchSageMakerStandIn, InMemoryCheckpointStore, SpotWeather, TrainingBehaviour
from spotline_dev.harness.standin.base.http_answers import ApiError, answer

APP = Path(__file__).resolve().parents[2] / "functions" / "sync_quota_shares" / "app.py"
REGION, ACCOUNT = "us-east-1", "123456789012"
POLICY_ARN = f"arn:aws:batch:{REGION}:{ACCOUNT}:scheduling-policy/spotline-TeamQuotaSharePolicy"
STACK_ID = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/spotline/1"
RESPONSE_URL = "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/spotline?X-Amz-Signature=x"
T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
REGISTRY = "spotline-team-registry"
TWO_TEAMS = {
    "teams": {
        "search-ranking": {"maxInstances": 4, "quotas": {"ml.g5.2xlarge": 5}},
        "vision": {"maxInstances": 2, "quotas": {"ml.g5.2xlarge": 3}},
    }
}


def _load_handler() -> Callable[[dict[str, Any], Any], None]:
    spec = importlib.util.spec_from_file_location("spotline_functions.sync_quota_shares.app", APP)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler  # type: ignore[no-any-return]


HANDLER = _load_handler()


@dataclass
class Rig:
    """The stand-in's queue, the Batch calls the handler made, and CloudFormation's inbox."""

    standin: BatchSageMakerStandIn
    queue: str
    clock: list[datetime]
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)

    def request(
        self,
        kind: str,
        policy: Any = TWO_TEAMS,
        *,
        physical_id: str | None = None,
        remaining_ms: int = 60_000,
        **properties: Any,
    ) -> dict[str, Any]:
        """Send CloudFormation's request (scalars as strings, as it sends them) with the registry
        holding `policy`; return its one answer."""
        body = policy if isinstance(policy, str) else json.dumps({"teams": policy["teams"]})
        boto3.client("s3", region_name=REGION).put_object(Bucket=REGISTRY, Key="index.json", Body=body.encode())
        props = {
            "ServiceToken": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:spotline-SyncQuotaSharesFunction",
            "JobQueue": self.queue,
            "TeamRegistryBucket": REGISTRY,
            "Capacity": "ml.g5.2xlarge=8",
            **properties,
        }
        event: dict[str, Any] = {
            "RequestType": kind,
            "ResponseURL": RESPONSE_URL,
            "StackId": STACK_ID,
            "RequestId": f"request-{len(self.answers)}",
            "ResourceType": "Custom::TeamQuotaShares",
            "LogicalResourceId": "TeamQuotaShares",
            "ResourceProperties": {k: v for k, v in props.items() if v is not None},
        }
        if kind != "Create":
            event["PhysicalResourceId"] = physical_id or self.queue
        before = len(self.answers)
        self.calls.clear()
        HANDLER(
            event, LocalLambdaContext(function_name="spotline-SyncQuotaSharesFunction", remaining_millis=remaining_ms)
        )
        assert len(self.answers) == before + 1, "exactly one answer per request"
        return self.answers[-1]

    def shares(self) -> dict[str, tuple[int, str]]:
        listed = boto3.client("batch", region_name=REGION).list_quota_shares(jobQueue=self.queue)["quotaShares"]
        return {s["quotaShareName"]: (s["capacityLimits"][0]["maxCapacity"], s["state"]) for s in listed}

    def submit(self, name: str, share: str) -> str:
        payload = {
            "TrainingJobName": name,
            "AlgorithmSpecification": {
                "TrainingImage": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/x:1",
                "TrainingInputMode": "File",
            },
            "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/spotline/x",
            "OutputDataConfig": {"S3OutputPath": "s3://out/"},
            "ResourceConfig": {"InstanceType": "ml.g5.2xlarge", "InstanceCount": 1, "VolumeSizeInGB": 50},
            "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        }
        return boto3.client("batch", region_name=REGION).submit_service_job(  # type: ignore[no-any-return]
            jobName=name,
            jobQueue=self.queue,
            serviceJobType="SAGEMAKER_TRAINING",
            serviceRequestPayload=json.dumps(payload),
            quotaShareName=share,
        )["jobId"]


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[Rig]:
    for name, value in {"AWS_ACCESS_KEY_ID": "t", "AWS_SECRET_ACCESS_KEY": "t", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        clock = [T0]
        standin = BatchSageMakerStandIn(
            lambda: clock[0], SpotWeather(), lambda _r: TrainingBehaviour(duration=3600), InMemoryCheckpointStore()
        )
        boto3.setup_default_session()
        session = boto3.DEFAULT_SESSION
        assert session is not None
        standin.install(session)
        boto3.client("s3", region_name=REGION).create_bucket(Bucket=REGISTRY)
        queue = standin.register_queue(
            "spotline-training", scheduling_policy_arn=POLICY_ARN, capacity={"ml.g5.2xlarge": 8}
        )
        rig = Rig(standin, queue, clock)
        session.events.register(
            "before-parameter-build.batch", lambda model, params, **_: rig.calls.append((model.name, dict(params)))
        )

        def urlopen(request: Request, timeout: float | None = None) -> BytesIO:
            assert request.get_method() == "PUT" and request.full_url == RESPONSE_URL
            assert isinstance(request.data, bytes) and len(request.data) < 4096
            rig.answers.append(json.loads(request.data))
            return BytesIO(b"")

        monkeypatch.setattr(custom_resource, "urlopen", urlopen)
        spotline_clients.reset_clients()
        yield rig
        spotline_clients.reset_clients()


def _misbehaving(operation: str, error: str = "ClientException", message: str | None = None) -> None:
    """Batch answers `operation` (DeleteQuotaShare, UpdateQuotaShare) with `error`, or, for
    "ignore", takes it and changes nothing (a change Batch has not applied yet). A hook on the
    operation's own event runs before the stand-in's on every Batch call; botocore still emits the
    request to the later hooks, so it is pointed at a path the stand-in does not serve."""

    def send(request: AWSPreparedRequest, **_: Any) -> AWSResponse:
        arn = str(json.loads(request.body or b"{}").get("quotaShareArn"))

        def run() -> dict[str, Any]:
            if error == "ignore":
                return {"quotaShareName": arn.rsplit("/", 1)[-1], "quotaShareArn": arn}
            raise ApiError(error, message or f"{operation} of {arn} failed")

        response = answer(request, "rest-json", 1, run)
        request.url = urlsplit(request.url)._replace(path="/answered-by-the-test").geturl()
        return response

    session = boto3.DEFAULT_SESSION
    assert session is not None
    session.events.register(f"before-send.batch.{operation}", send)
    spotline_clients.reset_clients()  # clients copy the session's hooks when they are made


def _operations(rig: Rig) -> list[str]:
    return [name for name, _ in rig.calls]


# --- Create ----------------------------------------------------------------------------------


def test_create_makes_one_share_per_team_and_answers_success(rig: Rig) -> None:
    answered = rig.request("Create")
    assert answered["Status"] == "SUCCESS"
    assert answered["PhysicalResourceId"] == rig.queue
    assert (answered["StackId"], answered["LogicalResourceId"], answered["RequestId"]) == (
        STACK_ID,
        "TeamQuotaShares",
        "request-0",
    )
    assert answered["Data"] == {
        "JobQueueArn": rig.queue,
        "QuotaShareNames": "search-ranking,vision",
        "Warnings": "0",
        "Created": "2",
        "Updated": "0",
        "Disabled": "0",
    }
    assert rig.shares() == {"search-ranking": (5, "ENABLED"), "vision": (3, "ENABLED")}
    described = boto3.client("batch", region_name=REGION).describe_quota_share(
        quotaShareArn=f"{rig.queue}/quota-share/vision"
    )
    assert described["resourceSharingConfiguration"] == {"strategy": "LEND_AND_BORROW", "borrowLimit": -1}
    assert described["preemptionConfiguration"] == {"inSharePreemption": "ENABLED"}
    assert described["tags"] == {"spotline:team": "vision"}
    rig.submit("first-job", "vision")  # the queue takes jobs for the team's share at once


def test_quotas_over_the_service_environment_are_created_with_a_warning(rig: Rig) -> None:
    policy = {"teams": {"search-ranking": {"quotas": {"ml.g5.2xlarge": 6}}, "vision": {"quotas": {"ml.g5.2xlarge": 6}}}}
    answered = rig.request("Create", policy)
    assert (answered["Status"], answered["Data"]["Warnings"]) == ("SUCCESS", "1")
    assert rig.shares() == {"search-ranking": (6, "ENABLED"), "vision": (6, "ENABLED")}


def test_a_quota_on_a_type_the_environment_lacks_fails_with_the_type_named(rig: Rig) -> None:
    answered = rig.request("Create", {"teams": {"vision": {"quotas": {"ml.p4d.24xlarge": 1}}}})
    assert answered["Status"] == "FAILED"
    assert (
        "team vision's quotas name ml.p4d.24xlarge, which the service environment has no capacity limit for"
        in (answered["Reason"])
    )
    assert rig.shares() == {}


def test_a_team_without_a_quota_shares_the_whole_service_environment(rig: Rig) -> None:
    answered = rig.request("Create", {"teams": {"search-ranking": {"maxInstances": 4}}}, Capacity="ml.g5.2xlarge=12")
    assert (answered["Status"], answered["Data"]["Warnings"]) == ("SUCCESS", "0")
    assert rig.shares() == {"search-ranking": (12, "ENABLED")}


# --- Update ----------------------------------------------------------------------------------


def test_update_changes_a_quota_and_adds_a_team_under_the_same_id(rig: Rig) -> None:
    rig.request("Create")
    policy = {"teams": {**TWO_TEAMS["teams"], "vision": {"maxInstances": 2, "quotas": {"ml.g5.2xlarge": 5}}, "nlp": {}}}
    answered = rig.request("Update", policy)
    assert (answered["Status"], answered["PhysicalResourceId"]) == ("SUCCESS", rig.queue)  # no replacement
    assert _operations(rig) == ["ListQuotaShares", "CreateQuotaShare", "UpdateQuotaShare"]
    assert rig.shares() == {"search-ranking": (5, "ENABLED"), "vision": (5, "ENABLED"), "nlp": (8, "ENABLED")}
    assert rig.request("Update", policy)["Data"]["Updated"] == "0"  # in step: nothing to change
    assert _operations(rig) == ["ListQuotaShares"]


def test_a_removed_team_is_disabled_its_running_job_finishes_and_no_new_job_is_taken(rig: Rig) -> None:
    rig.request("Create")
    running = rig.submit("vision-running", "vision")
    answered = rig.request("Update", {"teams": {"search-ranking": TWO_TEAMS["teams"]["search-ranking"]}})
    assert (answered["Status"], answered["Data"]["Disabled"]) == ("SUCCESS", "1")
    assert rig.shares() == {"search-ranking": (5, "ENABLED"), "vision": (3, "DISABLED")}
    with pytest.raises(ClientError, match="Quota share vision is DISABLED"):
        rig.submit("vision-late", "vision")
    rig.clock[0] = T0 + timedelta(hours=2)
    assert next(j for j in rig.standin.jobs if j.job_id == running).status == "SUCCEEDED"
    assert rig.request("Update", TWO_TEAMS)["Status"] == "SUCCESS"  # the team is back: so is its share
    assert rig.shares() == {"search-ranking": (5, "ENABLED"), "vision": (3, "ENABLED")}


def test_a_replaced_queue_gets_its_shares_under_a_new_id(rig: Rig) -> None:
    rig.request("Create")
    new_queue = rig.standin.register_queue("spotline-training-2", scheduling_policy_arn=POLICY_ARN)
    answered = rig.request("Update", JobQueue=new_queue, physical_id=rig.queue)
    # A new id: CloudFormation then sends Delete for the old one (the old queue's shares).
    assert (answered["Status"], answered["PhysicalResourceId"]) == ("SUCCESS", new_queue)
    listed = boto3.client("batch", region_name=REGION).list_quota_shares(jobQueue=new_queue)["quotaShares"]
    assert sorted(s["quotaShareName"] for s in listed) == ["search-ranking", "vision"]


# --- Delete ----------------------------------------------------------------------------------


def test_delete_disables_waits_then_deletes_every_share_and_their_jobs_end(rig: Rig) -> None:
    rig.request("Create")
    running = rig.submit("search-running", "search-ranking")
    rig.request("Update", {"teams": {"search-ranking": TWO_TEAMS["teams"]["search-ranking"]}})  # vision: DISABLED
    answered = rig.request("Delete")
    assert (answered["Status"], answered["PhysicalResourceId"], answered["Data"]) == (
        "SUCCESS",
        rig.queue,
        {"Deleted": "2"},
    )
    assert "Reason" not in answered
    # DeleteQuotaShare takes only a DISABLED share (the stand-in refuses others, as Batch does): the
    # enabled one is disabled first, and the shares are read back DISABLED before any is deleted.
    assert _operations(rig) == [
        "ListQuotaShares",
        "UpdateQuotaShare",
        "ListQuotaShares",
        "DeleteQuotaShare",
        "DeleteQuotaShare",
    ]
    assert rig.calls[1][1] == {"quotaShareArn": f"{rig.queue}/quota-share/search-ranking", "state": "DISABLED"}
    assert [params["quotaShareArn"] for _, params in rig.calls[3:]] == [
        f"{rig.queue}/quota-share/search-ranking",
        f"{rig.queue}/quota-share/vision",
    ]
    assert rig.shares() == {}
    # "All jobs in the share are eventually terminated when you delete a quota share".
    rig.clock[0] = T0 + timedelta(minutes=10)
    job = boto3.client("batch", region_name=REGION).describe_service_job(jobId=running)
    assert (job["status"], job["statusReason"]) == ("FAILED", "Terminated: Quota share search-ranking was deleted")


def test_a_delete_whose_delete_quota_share_fails_still_answers_success_naming_what_was_left(rig: Rig) -> None:
    rig.request("Create")
    _misbehaving("DeleteQuotaShare")
    answered = rig.request("Delete")
    # Never FAILED on Delete: the stack's deletion must not end in DELETE_FAILED over Spotline's clean-up.
    assert (answered["Status"], answered["PhysicalResourceId"]) == ("SUCCESS", rig.queue)
    assert answered["Data"] == {"Deleted": "0", "LeftInPlace": "search-ranking,vision"}
    assert answered["Reason"].startswith(
        f"Quota shares left in place on {rig.queue}: search-ranking, vision (ClientException"
    )
    assert "aws batch delete-quota-share" in answered["Reason"]
    assert rig.shares() == {"search-ranking": (5, "DISABLED"), "vision": (3, "DISABLED")}  # disabled: no new jobs


def test_a_delete_whose_shares_do_not_read_disabled_in_time_deletes_none_and_answers_success(rig: Rig) -> None:
    rig.request("Create")
    _misbehaving("UpdateQuotaShare", "ignore")  # Batch has not applied the DISABLED state yet
    answered = rig.request("Delete", remaining_ms=20_000)  # no time left to wait in
    assert (answered["Status"], answered["Data"]) == (
        "SUCCESS",
        {"Deleted": "0", "LeftInPlace": "search-ranking,vision"},
    )
    assert "quota shares not yet DISABLED when time ran out: search-ranking (ENABLED/VALID)" in answered["Reason"]
    assert "DeleteQuotaShare" not in _operations(rig)  # an ENABLED share is never sent to DeleteQuotaShare
    assert rig.shares() == {"search-ranking": (5, "ENABLED"), "vision": (3, "ENABLED")}


def test_a_delete_of_a_queue_that_is_already_gone_answers_success_with_nothing_left(rig: Rig) -> None:
    _misbehaving("ListQuotaShares", message=f"Job queue {rig.queue} does not exist")
    answered = rig.request("Delete")
    assert (answered["Status"], answered["PhysicalResourceId"], answered["Data"]) == (
        "SUCCESS",
        rig.queue,
        {"Deleted": "0"},
    )
    assert "Reason" not in answered


def test_a_delete_whose_shares_cannot_even_be_listed_answers_success(rig: Rig) -> None:
    rig.request("Create")
    _misbehaving("ListQuotaShares", "ServerException")
    answered = rig.request("Delete")
    assert (answered["Status"], answered["Data"]) == (
        "SUCCESS",
        {"Deleted": "0", "LeftInPlace": "every share of the queue"},
    )
    assert "ListQuotaShares failed" in answered["Reason"]


def test_delete_of_a_resource_whose_create_failed_before_naming_a_queue_does_nothing(rig: Rig) -> None:
    answered = rig.request("Delete", physical_id="TeamQuotaShares-not-created")
    assert (answered["Status"], answered["PhysicalResourceId"]) == ("SUCCESS", "TeamQuotaShares-not-created")
    assert rig.calls == []


# --- Failures: FAILED with the reason, never no answer ----------------------------------------


def test_an_invalid_team_policy_fails_the_update_and_changes_nothing(rig: Rig) -> None:
    rig.request("Create")
    answered = rig.request("Update", {"teams": {"vision": {"quotas": {"ml.g5.2xlarge": 0}}}})
    assert answered["Status"] == "FAILED"
    assert answered["PhysicalResourceId"] == rig.queue  # the id CloudFormation knows: its rollback reconciles back
    assert answered["Reason"].startswith(
        "TeamPolicyInvalid: teams.vision.quotas.ml.g5.2xlarge: must be at least 1, got 0"
    )
    assert "log stream" in answered["Reason"]
    assert rig.shares() == {"search-ranking": (5, "ENABLED"), "vision": (3, "ENABLED")}


def test_more_teams_than_a_queue_holds_shares_fails_with_what_to_do(rig: Rig) -> None:
    policy = {"teams": {f"team-{n:02d}": {} for n in range(21)}}
    answered = rig.request("Create", policy)
    assert answered["Status"] == "FAILED"
    assert answered["Reason"].startswith(
        "QuotaSharesInvalid: the team registry needs 21 quota shares, and a Batch job queue holds at most 20"
    )
    assert answered["PhysicalResourceId"] == rig.queue  # a failed Create: the rollback's Delete cleans this queue
    assert rig.shares() == {}


def test_batch_refusing_a_share_fails_the_create_with_batchs_message(rig: Rig) -> None:
    # A queue that took a job without a share cannot get shares (a stack whose queue was not replaced).
    boto3.client("batch", region_name=REGION).submit_service_job(
        jobName="unshared",
        jobQueue=rig.queue,
        serviceJobType="SAGEMAKER_TRAINING",
        serviceRequestPayload="{}",
        shareIdentifier="search-ranking",
    )
    answered = rig.request("Create")
    assert answered["Status"] == "FAILED"
    assert "CreateQuotaShare" in answered["Reason"] and "already has jobs without a quota share" in answered["Reason"]


@pytest.mark.parametrize(
    ("properties", "reason"),
    [
        ({"JobQueue": None}, "ResourceProperties.JobQueue is required"),
        ({"TeamRegistryBucket": ""}, "ResourceProperties.TeamRegistryBucket is required"),
        (
            {"Capacity": "8"},
            "ResourceProperties.Capacity: TrainingCapacity entry '8' is not <instance type>=<instances>",
        ),
        ({"Capacity": "ml.g5.2xlarge=0"}, "entry 'ml.g5.2xlarge=0' is not <instance type>=<instances>"),
        ({"Capacity": None}, "ResourceProperties.Capacity is required"),
    ],
)
def test_a_malformed_request_fails_with_the_property_it_lacks(
    rig: Rig, properties: dict[str, Any], reason: str
) -> None:
    answered = rig.request("Create", **properties)
    assert answered["Status"] == "FAILED" and reason in answered["Reason"], answered["Reason"]
