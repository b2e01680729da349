"""Logging and metrics through Powertools, configured from the environment the template
sets (POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE, LOG_LEVEL)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics

logger = Logger()
metrics = Metrics()


def bind_execution(event: dict[str, Any]) -> None:
    """Put the Step Functions execution id on every log line of this invocation."""
    execution = event.get("execution")
    if execution:
        logger.append_keys(execution=execution)


def add_team_dimension(team: str) -> None:
    metrics.add_dimension(name="team", value=team or "unknown")
