"""TrainingEventGate and WaitForTrainingEvent: a Batch or SageMaker change of a Spotline job
wakes the execution watching it at once; other events change nothing."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import boto3
import pytest
from moto.events.models import EventPattern

from conftest import EXAMPLE_MANIFEST, NOW, entered_states, example_spec, run_upload, sample_event, team_policy_for
from spotline.aws.common.clients import reset_clients
from spotline.aws.training.request_check import submit_service_job_request
from spotline.core.regions.regions import arn_in_region
from spotline.core.training.training_request import Attempt
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import start_local_stack
from spotline_dev.harness.local.template import resources_of_type
from spotline_dev.harness.sandbox.account import prepare_account
from spotline_dev.harness.standin import SpotWeather

SAGEMAKER = sample_event("sagemaker_training_job_state_change.json")
SAGEMAKER_TAGS_LIST = sample_event("sagemaker_training_job_state_change_tags_list.json")
BATCH = sample_event("batch_service_job_state_change.json")


def _gate(stack: LocalStack, event: dict[str, Any]) -> dict[str, Any]:
    return stack.invoke("TrainingEventGateFunction", event)  # type: ignore[no-any-return]


def _woken_by(history: list[dict[str, Any]]) -> list[str]:
    outputs = [json.loads(e["taskSucceededEventDetails"]["output"]) for e in history if e["type"] == "TaskSucceeded"]
    return [o["wokenBy"]["summary"] for o in outputs if "wokenBy" in o]


def test_the_end_of_training_ends_the_execution_within_seconds(stack: LocalStack) -> None:
    execution, history = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())

    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    (job,) = stack.standin.jobs
    assert job.latest is not None and job.latest.ended_at is not None
    ended = stack.execution(execution["executionArn"]).ended_at
    assert ended is not None
    assert 0 <= (ended - job.latest.ended_at).total_seconds() <= 60
    woken = _woken_by(history)
    assert woken[-1] == f"Batch service job {job.job_id}: SUCCEEDED"
    assert entered_states(history).count("WaitForTrainingEvent") >= 1


def test_events_of_jobs_that_are_not_spotlines_change_nothing(stack: LocalStack) -> None:
    untagged = copy.deepcopy(SAGEMAKER)
    untagged["detail"]["Tags"] = {"team": "someone-else"}
    assert _gate(stack, untagged) == {"woken": None, "ignored": f"{_summary(untagged)}: not a Spotline job"}
    unknown = copy.deepcopy(BATCH)
    unknown["detail"]["jobId"] = "00000000-0000-0000-0000-000000000000"
    assert _gate(stack, unknown)["woken"] is None
    assert _gate(stack, {"source": "aws.batch", "detail-type": "Batch Job State Change", "detail": {}}) == {
        "woken": None,
        "ignored": "not a training job state change",
    }
    items = stack.client("dynamodb").scan(TableName=stack.physical["TrainingWatchesTable"])["Items"]
    assert items == []


def test_a_change_with_no_waiting_execution_is_recorded_for_the_next_registration(stack: LocalStack) -> None:
    assert _gate(stack, SAGEMAKER) == {"woken": None, "change": _summary(SAGEMAKER)}
    (item,) = stack.client("dynamodb").scan(TableName=stack.physical["TrainingWatchesTable"])["Items"]
    assert item["pk"]["S"] == SAGEMAKER["detail"]["Tags"]["spotline:execution"]
    assert json.loads(item["lastEvent"]["S"])["status"] == "Completed"


def test_the_rules_match_only_the_changes_worth_acting_on(stack: LocalStack) -> None:
    events = stack.client("events")

    def matches(rule: str, event: dict[str, Any]) -> bool:
        return bool(EventPattern.load(events.describe_rule(Name=rule)["EventPattern"]).matches_event(event))

    batch = copy.deepcopy(BATCH)
    batch["detail"]["jobQueue"] = stack.physical["TrainingJobQueue"]
    ended = "TrainingEventGateFunctionServiceJobEnded"
    assert matches(ended, batch)
    assert not matches(ended, batch | {"detail": batch["detail"] | {"status": "RUNNING"}})
    assert not matches(ended, batch | {"detail": batch["detail"] | {"jobQueue": "arn:aws:batch:::job-queue/other"}})
    training = "TrainingEventGateFunctionTrainingJobEnded"
    interrupted = "TrainingEventGateFunctionTrainingJobInterrupted"
    running = SAGEMAKER | {
        "detail": SAGEMAKER["detail"] | {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"}
    }
    assert matches(training, SAGEMAKER) and not matches(training, running) and not matches(interrupted, running)
    spot_gone = running | {"detail": running["detail"] | {"SecondaryStatus": "Interrupted"}}
    assert matches(interrupted, spot_gone)
    untagged = SAGEMAKER | {"detail": SAGEMAKER["detail"] | {"Tags": {}, "TrainingJobName": "someone-elses-job"}}
    assert not matches(training, untagged)


def test_the_sagemaker_rules_match_either_shape_of_the_tags_and_the_gate_reads_both(stack: LocalStack) -> None:
    """AWS's samples disagree whether detail.Tags is a map or a [{Key, Value}] list; a list's keys
    cannot be matched by name, so the rules also take jobs Batch named (AWSBatch...), and the gate
    drops those that are not Spotline's."""
    events = stack.client("events")

    def matches(rule: str, event: dict[str, Any]) -> bool:
        return bool(EventPattern.load(events.describe_rule(Name=rule)["EventPattern"]).matches_event(event))

    listed = SAGEMAKER_TAGS_LIST
    assert isinstance(listed["detail"]["Tags"], list) and isinstance(SAGEMAKER["detail"]["Tags"], dict)
    training, interrupted = (
        "TrainingEventGateFunctionTrainingJobEnded",
        "TrainingEventGateFunctionTrainingJobInterrupted",
    )
    assert matches(training, listed) and matches(training, SAGEMAKER)
    renamed = SAGEMAKER | {"detail": SAGEMAKER["detail"] | {"TrainingJobName": "not-named-by-batch"}}
    assert matches(training, renamed)  # a map of tags matches by its spotline:execution alone
    spot_gone = listed | {
        "detail": listed["detail"] | {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Interrupted"}
    }
    assert matches(interrupted, spot_gone) and not matches(training, spot_gone)
    someone_elses = listed | {"detail": listed["detail"] | {"TrainingJobName": "nightly-etl-7", "Tags": []}}
    assert not matches(training, someone_elses)

    assert _gate(stack, listed) == {"woken": None, "change": _summary(listed)}
    (item,) = stack.client("dynamodb").scan(TableName=stack.physical["TrainingWatchesTable"])["Items"]
    assert item["pk"]["S"] == "search-ranking-ranker-v2-2a265c01"  # from the list's spotline:execution
    batch_named_untagged = copy.deepcopy(listed)
    batch_named_untagged["detail"]["Tags"] = [{"Key": "team", "Value": "someone-else"}]
    assert matches(training, batch_named_untagged)
    assert _gate(stack, batch_named_untagged) == {
        "woken": None,
        "ignored": f"{_summary(batch_named_untagged)}: not a Spotline job",
    }


def test_a_change_between_the_check_and_the_registration_releases_at_once(stack: LocalStack) -> None:
    """The training ends after CheckTrainingStatus read it and before WaitForTrainingEvent registers."""
    fired: dict[str, Any] = {"done": False}

    def job_ends_now(params: dict[str, Any], **_: Any) -> None:
        if fired["done"] or "taskToken" not in str(params.get("UpdateExpression")):
            return
        (job,) = stack.standin.jobs
        if job.status == "RUNNING":
            fired["done"] = True
            change = copy.deepcopy(SAGEMAKER)
            change["detail"]["Tags"]["spotline:execution"] = params["Key"]["pk"]
            change["detail"]["TrainingJobStatus"] = "Failed"
            stack.clock.advance(1)  # the event is processed a moment after the check
            stack.invoke("TrainingEventGateFunction", change)

    session = boto3._get_default_session()
    session.events.register("provide-client-params.dynamodb.UpdateItem", job_ends_now)
    reset_clients()
    execution, _ = run_upload(stack, EXAMPLE_MANIFEST.read_bytes())
    assert fired["done"]
    assert execution["status"] == "SUCCEEDED", execution.get("cause")
    registrations = [i.result for i in stack.invocations if i.function.endswith("WaitForTrainingEventFunction")]
    assert {"registered": True, "releasedAtOnce": True} in registrations


def _summary(event: dict[str, Any]) -> str:
    detail = event["detail"]
    status = f"{detail['TrainingJobStatus']} ({detail['SecondaryStatus']})"
    return f"SageMaker training job {detail['TrainingJobName']}: {status}"


# --- a Batch event a peer region forwarded ------------------------------------------------------

PEER = "us-west-2"
PEER_EXECUTION = (
    "arn:aws:states:us-east-1:123456789012:execution:spotline-local-training-lifecycle:search-ranking-ranker-v2-peer"
)


@pytest.fixture
def peered() -> Iterator[LocalStack]:
    spec = replace(example_spec(), regions=("us-east-1", PEER))
    with start_local_stack(NOW, team_policy=team_policy_for(spec), peers={PEER: SpotWeather()}) as local:
        prepare_account(local.client, spec)
        yield local


def _peer_job(stack: LocalStack) -> dict[str, Any]:
    """A Spotline attempt placed in the peer region (its queue there), as SubmitTrainingJob submits it."""
    (queue,) = resources_of_type(stack.template, "AWS::Batch::JobQueue")
    request = submit_service_job_request(
        replace(example_spec(), regions=("us-east-1", PEER)),
        Attempt(PEER_EXECUTION, 1, "spot"),
        arn_in_region(stack.physical[queue], PEER),
    )
    return stack.session.client("batch", region_name=PEER).submit_service_job(**request)  # type: ignore[no-any-return]


def _forwarded(job: dict[str, Any], *, with_arn: bool) -> dict[str, Any]:
    """The peer's event as its forwarding rule delivers it here: `region` stays the peer's."""
    event = copy.deepcopy(BATCH)
    event["region"] = PEER
    event["resources"] = [job["jobArn"]]
    event["detail"] |= {"jobId": job["jobId"], "jobArn": job["jobArn"], "status": "RUNNING"}
    if not with_arn:
        del event["detail"]["jobArn"]
    return event


@pytest.mark.parametrize("with_arn", [True, False], ids=["by-job-arn", "by-event-region"])
def test_a_forwarded_batch_event_is_read_in_the_region_its_job_lives_in(peered: LocalStack, with_arn: bool) -> None:
    job = _peer_job(peered)
    answer = _gate(peered, _forwarded(job, with_arn=with_arn))
    assert answer == {"woken": None, "change": f"Batch service job {job['jobId']}: RUNNING"}
    (item,) = peered.client("dynamodb").scan(TableName=peered.physical["TrainingWatchesTable"])["Items"]
    assert item["pk"]["S"] == PEER_EXECUTION.rsplit(":", 1)[-1]
