"""Each invocation's metrics carry its own team, never the previous invocation's (one warm
Lambda process serves many teams)."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from aws_lambda_powertools.metrics import MetricUnit

from spotline.aws.common.observability import add_team_dimension, log_metrics, metrics


@log_metrics
def _handler(event: dict[str, Any], _context: Any) -> None:
    if event.get("team"):
        add_team_dimension(event["team"])
    if event.get("fail"):
        raise RuntimeError("failed before its first metric")
    if event.get("metric"):
        metrics.add_metric(name=event["metric"], unit=MetricUnit.Count, value=1)


def _emitted(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]


def test_a_team_set_by_an_invocation_that_failed_early_is_not_lent_to_the_next(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Spotline")
    with pytest.raises(RuntimeError):
        _handler({"team": "ads-experiments", "fail": True}, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Dimension 'team' has already been added"
        _handler({"team": "search-ranking", "metric": "JobsSucceeded"}, None)
        _handler({"metric": "ManifestsRejected"}, None)

    teamed, untouched = _emitted(capsys)

    assert teamed["team"] == "search-ranking" and teamed["JobsSucceeded"] == [1.0]
    assert "team" not in untouched and untouched["ManifestsRejected"] == [1.0]
