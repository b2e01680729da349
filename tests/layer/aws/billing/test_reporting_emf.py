"""RecordOutcome's metrics are valid CloudWatch Embedded Metric Format documents.

The schema below follows the EMF specification (CloudWatch User Guide, "Specification:
Embedded metric format"): root `_aws` with an integer Timestamp and CloudWatchMetrics
directives; each referenced dimension a string member and each metric a number (or <= 100
numbers) member of the root.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from spotline.aws.billing.reporting import publish_metrics
from spotline.aws.common.observability import metrics
from spotline.core.billing.outcome import Figures, Outcome

UNITS = [
    "Seconds",
    "Microseconds",
    "Milliseconds",
    "Bytes",
    "Kilobytes",
    "Megabytes",
    "Gigabytes",
    "Terabytes",
    "Bits",
    "Kilobits",
    "Megabits",
    "Gigabits",
    "Terabits",
    "Percent",
    "Count",
    "Bytes/Second",
    "Kilobytes/Second",
    "Megabytes/Second",
    "Gigabytes/Second",
    "Terabytes/Second",
    "Bits/Second",
    "Kilobits/Second",
    "Megabits/Second",
    "Gigabits/Second",
    "Terabits/Second",
    "Count/Second",
    "None",
]
EMF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["_aws"],
    "properties": {
        "_aws": {
            "type": "object",
            "required": ["Timestamp", "CloudWatchMetrics"],
            "properties": {
                "Timestamp": {"type": "integer", "minimum": 0},
                "CloudWatchMetrics": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["Namespace", "Dimensions", "Metrics"],
                        "properties": {
                            "Namespace": {"type": "string", "minLength": 1, "maxLength": 1024},
                            "Dimensions": {
                                "type": "array",
                                "items": {
                                    "type": "array",
                                    "maxItems": 30,
                                    "items": {"type": "string", "minLength": 1, "maxLength": 250},
                                },
                            },
                            "Metrics": {
                                "type": "array",
                                "maxItems": 100,
                                "items": {
                                    "type": "object",
                                    "required": ["Name"],
                                    "properties": {
                                        "Name": {"type": "string", "minLength": 1, "maxLength": 1024},
                                        "Unit": {"enum": UNITS},
                                        "StorageResolution": {"enum": [1, 60]},
                                    },
                                },
                            },
                        },
                    },
                },
            },
        }
    },
}


def assert_valid_emf(document: dict[str, Any]) -> None:
    errors = [e.message for e in Draft202012Validator(EMF_SCHEMA).iter_errors(document)]
    assert not errors, errors
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for dimension_set in directive["Dimensions"]:
            for name in dimension_set:
                assert isinstance(document.get(name), str), f"dimension {name} missing at the root"
        for metric in directive["Metrics"]:
            value = document.get(metric["Name"])
            values = value if isinstance(value, list) else [value]
            assert values and len(values) <= 100 and all(isinstance(v, int | float) for v in values), metric


@pytest.mark.parametrize("succeeded", [True, False])
def test_outcome_metrics_are_valid_emf(
    succeeded: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(metrics, "namespace", "Spotline")
    figures = Figures(
        attempts=2,
        interruptions=3,
        training_seconds=10800,
        billable_seconds=3240,
        queue_wait_seconds=95,
        cost_usd=1.3635,
        on_demand_cost_usd=4.545,
        savings_percent=70.0,
    )
    outcome = Outcome("TrainingSucceeded" if succeeded else "TrainingFailed", succeeded, "", "", figures)

    @metrics.log_metrics
    def handler(event: dict[str, Any], context: object) -> None:
        publish_metrics("search-ranking", outcome)

    handler({}, None)
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    document = json.loads(line)
    assert_valid_emf(document)
    directive = document["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "Spotline"
    assert sorted(directive["Dimensions"][0]) == ["service", "team"]
    assert document["team"] == "search-ranking"
    assert document["JobsSucceeded" if succeeded else "JobsFailed"] == [1.0]
    assert document["SavingsPercent"] == [70.0]


def test_a_cost_that_is_unknown_publishes_no_cost_metric(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An instance type without a price: the other figures, but no EstimatedCostUSD (not a zero)."""
    monkeypatch.setattr(metrics, "namespace", "Spotline")
    figures = Figures(attempts=1, training_seconds=7200, billable_seconds=2200, cost_usd=None, on_demand_cost_usd=None)

    @metrics.log_metrics
    def handler(event: dict[str, Any], context: object) -> None:
        publish_metrics("ads-experiments", Outcome("TrainingSucceeded", True, "", "", figures))

    handler({}, None)
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    document = json.loads(line)
    assert_valid_emf(document)
    assert "EstimatedCostUSD" not in document and document["BillableSeconds"] == [2200.0]


def test_the_emf_check_itself_rejects_broken_documents() -> None:
    broken = {
        "_aws": {
            "Timestamp": 1,
            "CloudWatchMetrics": [
                {"Namespace": "S", "Dimensions": [["team"]], "Metrics": [{"Name": "X", "Unit": "Apples"}]}
            ],
        },
        "X": 1,
    }
    with pytest.raises(AssertionError):
        assert_valid_emf(broken)
