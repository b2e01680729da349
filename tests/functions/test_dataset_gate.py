"""DatasetGate handler: a bad Dataset Ready event is rejected once, with its reason, and changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.events.models import EventPattern

from conftest import emitted_metrics, sample_event
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import ACCOUNT

DATASET = "clicks-2026-11-28"
HUGE_LOCATION = "s3://search-ranking-data/" + "x" * 140 * 1024
OTHER_ACCOUNT = "210987654321"


def dead_letters(stack: LocalStack) -> list[dict[str, Any]]:
    """Drain the events dead-letter queue: each message's JSON body and its attributes."""
    sqs, url, letters = stack.client("sqs"), stack.physical["EventsDeadLetterQueue"], []
    while True:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]).get(
            "Messages", []
        )
        if not messages:
            return letters
        for message in messages:
            attributes = {k: v["StringValue"] for k, v in message.get("MessageAttributes", {}).items()}
            letters.append({"body": json.loads(message["Body"]), "attributes": attributes})
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def _table_items(stack: LocalStack) -> list[dict[str, Any]]:
    return stack.client("dynamodb").scan(TableName=stack.physical["DatasetsTable"])["Items"]  # type: ignore[no-any-return]


def _with_detail(detail: Any) -> dict[str, Any]:
    return sample_event("dataset_ready.json") | {"detail": detail}


SAMPLE_DETAIL = sample_event("dataset_ready.json")["detail"]
BAD_EVENTS = {
    "a 140 KB location": (SAMPLE_DETAIL | {"location": HUGE_LOCATION}, "detail.location"),
    "a float location": (SAMPLE_DETAIL | {"location": 1.5}, "detail.location"),
    "a string detail": (DATASET, "detail"),
    "no dataset": ({k: v for k, v in SAMPLE_DETAIL.items() if k != "dataset"}, "detail.dataset"),
}


@pytest.mark.parametrize("case", list(BAD_EVENTS))
def test_a_bad_event_is_rejected_once_with_its_reason_and_changes_nothing(
    stack: LocalStack, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    detail, path = BAD_EVENTS[case]
    event = _with_detail(detail)
    result = stack.invoke("DatasetGateFunction", event)  # returns normally: nothing for Lambda to retry

    assert result["status"] == "rejected"
    assert path in [e["path"] for e in result["errors"]]
    assert result["reason"].startswith("Dataset Ready event rejected: ")
    assert len(result["reason"]) < 600  # the reason names the field, not the whole oversized value
    (letter,) = dead_letters(stack)
    assert letter["attributes"] == {"reason": result["reason"], "eventType": "Dataset Ready"}
    assert letter["body"]["reason"] == result["reason"]
    assert letter["body"]["errors"] == result["errors"]
    assert letter["body"]["event"]["id"] == event["id"]
    emitted = emitted_metrics(capsys.readouterr().out)
    rejected = [m for m in emitted if "EventsRejected" in m]
    assert [(m["EventsRejected"], m["eventType"]) for m in rejected] == [([1.0], "Dataset Ready")]
    assert not [m for m in emitted if "DatasetsReady" in m]
    assert _table_items(stack) == []
    assert [i.error for i in stack.invocations] == [None]

    assert stack.invoke("DatasetGateFunction", sample_event("dataset_ready.json")) == {
        "dataset": DATASET,
        "released": [],
    }
    (ready,) = _table_items(stack)
    assert ready["location"] == {"S": SAMPLE_DETAIL["location"]}
    assert dead_letters(stack) == []


def test_a_huge_location_copied_to_the_dead_letter_queue_is_clipped(stack: LocalStack) -> None:
    stack.invoke("DatasetGateFunction", _with_detail(SAMPLE_DETAIL | {"location": HUGE_LOCATION}))
    (letter,) = dead_letters(stack)
    location = letter["body"]["event"]["detail"]["location"]
    assert location.endswith(f"... (clipped, {len(HUGE_LOCATION)} characters)")
    assert len(location) < 1100


def test_unknown_fields_are_accepted_but_not_recorded(stack: LocalStack) -> None:
    detail = SAMPLE_DETAIL | {"rows": 1200, "pipelineRun": {"id": "r-17"}}
    assert stack.invoke("DatasetGateFunction", _with_detail(detail)) == {"dataset": DATASET, "released": []}
    (ready,) = _table_items(stack)
    assert set(ready) == {"pk", "sk", "location", "producedAt", "readyAt", "expiresAt"}


def test_events_through_the_rule_are_rejected_the_same_way(stack: LocalStack) -> None:
    stack.put_dataset_event("Dataset Ready", {"dataset": DATASET, "location": 7})
    (result,) = stack.deliver_events()
    assert result["status"] == "rejected"
    assert result["errors"] == [
        {"path": "detail.location", "message": "must be an S3 URI: s3://<bucket>/<prefix> (got 7)"}
    ]
    (letter,) = dead_letters(stack)
    assert letter["body"]["event"]["account"] == ACCOUNT
    assert _table_items(stack) == []


def test_the_rules_take_events_of_this_account_only(stack: LocalStack) -> None:
    samples = {
        "DatasetGateFunctionDatasetReady": sample_event("dataset_ready.json"),
        "IntakeFunctionTrainingRequested": sample_event("training_requested.json"),
        "IntakeFunctionManifestUploaded": sample_event("s3_manifest_created.json"),
    }
    samples["IntakeFunctionManifestUploaded"]["detail"]["bucket"]["name"] = stack.bucket
    samples["StopExecutionJobsFunctionExecutionEnded"] = sample_event("execution_status_change.json")
    samples["StopExecutionJobsFunctionExecutionEnded"]["detail"]["stateMachineArn"] = stack.state_machine_arn()
    samples["TrainingEventGateFunctionServiceJobEnded"] = sample_event("batch_service_job_state_change.json")
    samples["TrainingEventGateFunctionServiceJobEnded"]["detail"]["jobQueue"] = stack.physical["TrainingJobQueue"]
    samples["TrainingEventGateFunctionTrainingJobEnded"] = sample_event("sagemaker_training_job_state_change.json")
    interrupted = sample_event("sagemaker_training_job_state_change.json")
    interrupted["detail"] |= {"TrainingJobStatus": "InProgress", "SecondaryStatus": "Interrupted"}
    samples["TrainingEventGateFunctionTrainingJobInterrupted"] = interrupted
    rules = {rule for _function, rule in stack.rule_taps.values()}
    assert rules == set(samples)
    events = stack.client("events")
    buses = {
        listed["Name"]: bus
        for bus in ("default", stack.physical["DatasetEventBus"])
        for listed in events.list_rules(EventBusName=bus)["Rules"]
    }
    dataset_rules = {"DatasetGateFunctionDatasetReady", "IntakeFunctionTrainingRequested"}
    assert {rule for rule, bus in buses.items() if bus != "default"} == dataset_rules  # the stack's own bus
    for rule, event in samples.items():
        described = events.describe_rule(Name=rule, EventBusName=buses[rule])
        pattern = EventPattern.load(described["EventPattern"])  # as moto delivers
        assert event["account"] == ACCOUNT
        assert pattern.matches_event(event), rule
        assert not pattern.matches_event(event | {"account": OTHER_ACCOUNT}), rule


def test_dataset_events_come_through_the_stack_s_bus_only(stack: LocalStack) -> None:
    """Issue 45: a Dataset Ready on the default bus, where anyone of the account may put events,
    starts nothing; on the stack's bus a named publisher's does, and another principal's is refused
    by the bus's policy (AccessDeniedException, nothing put)."""
    detail = SAMPLE_DETAIL
    stack.client("events").put_events(
        Entries=[{"Source": "spotline.preprocessing", "DetailType": "Dataset Ready", "Detail": json.dumps(detail)}]
    )
    assert stack.deliver_events() == []

    intruder = f"arn:aws:iam::{ACCOUNT}:role/media-recs-training"
    with pytest.raises(ClientError) as refused:
        stack.put_dataset_event("Dataset Ready", detail, publisher=intruder)
    assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    assert "OnlyNamedPublishersPutEvents" in refused.value.response["Error"]["Message"]
    assert stack.deliver_events() == []

    stack.put_dataset_event("Dataset Ready", detail)  # as DatasetEventPublishers' default names
    assert stack.deliver_events() == [{"dataset": DATASET, "released": []}]
