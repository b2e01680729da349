"""The local stack's dataset event bus: created from the template with its policy, and
`put_dataset_event` judging a publisher by that policy as IAM would."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from botocore.exceptions import ClientError

from conftest import NOW, sample_event
from spotline_dev.harness.local.dataset_bus import default_publisher
from spotline_dev.harness.local.stack import ACCOUNT, start_local_stack

PIPELINE_ACCOUNT = "210987654321"
PIPELINE = f"arn:aws:iam::{PIPELINE_ACCOUNT}:role/preprocessing/nightly-export"
STRANGER = "arn:aws:iam::999999999999:role/spotline-dataset-publisher"  # that role name, an account not named


@pytest.mark.parametrize(
    ("patterns", "publisher"),
    [
        ("arn:aws:iam::*:role/spotline-dataset-publisher", f"arn:aws:iam::{ACCOUNT}:role/spotline-dataset-publisher"),
        (f"{PIPELINE},arn:aws:iam::*:role/x", PIPELINE),
        (f"arn:aws:iam::{ACCOUNT}:role/pipeline-*", f"arn:aws:iam::{ACCOUNT}:role/pipeline-publisher"),
    ],
)
def test_the_default_publisher_is_the_first_pattern_with_its_wildcards_filled(patterns: str, publisher: str) -> None:
    stack = SimpleNamespace(template={"Parameters": {"DatasetEventPublishers": {"Default": patterns}}}, account=ACCOUNT)
    assert default_publisher(stack) == publisher


def test_the_bus_carries_the_template_s_policy_and_admits_a_named_publisher_of_another_account() -> None:
    parameters = {
        "DatasetEventPublishers": f"arn:aws:iam::*:role/spotline-dataset-publisher,{PIPELINE}",
        "DatasetEventPublisherAccounts": PIPELINE_ACCOUNT,
    }
    with start_local_stack(NOW, parameters=parameters) as stack:
        events = stack.client("events")
        bus = events.describe_event_bus(Name=stack.physical["DatasetEventBus"])
        assert bus["Arn"] == f"arn:aws:events:us-east-1:{ACCOUNT}:event-bus/spotline-local-datasets"
        sids = [s["Sid"] for s in json.loads(bus["Policy"])["Statement"]]
        assert sids == ["OnlyNamedPublishersPutEvents", "NamedPublishersOfOtherAccounts"]
        rule = events.describe_rule(Name="DatasetGateFunctionDatasetReady", EventBusName=bus["Name"])
        assert json.loads(rule["EventPattern"])["account"] == [ACCOUNT, PIPELINE_ACCOUNT]

        stack.put_dataset_event("Dataset Ready", sample_event("dataset_ready.json")["detail"], publisher=PIPELINE)
        assert stack.deliver_events() == [{"dataset": "clicks-2026-11-28", "released": []}]
        with pytest.raises(ClientError, match="OnlyNamedPublishersPutEvents"):
            stack.put_dataset_event("Dataset Ready", {}, publisher=f"arn:aws:iam::{PIPELINE_ACCOUNT}:role/other")
        with pytest.raises(ClientError, match="the resource's policy does not allow"):
            stack.put_dataset_event("Dataset Ready", {}, publisher=STRANGER)
