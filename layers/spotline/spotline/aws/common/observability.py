"""Logging and metrics through Powertools, configured from the environment the template
sets (POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE, LOG_LEVEL)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics

logger = Logger()
metrics = Metrics()


def log_metrics[Handler: Callable[..., Any]](handler: Handler) -> Handler:
    """Powertools' `log_metrics`, on metrics of this invocation only.

    Powertools clears its metrics, dimensions and metadata when it flushes, and it flushes only
    when there are metrics (and metrics are enabled): an invocation that set a team dimension and
    then failed before its first metric would lend that team to the next invocation's metrics
    in the same warm Lambda process. So every invocation starts clear."""

    @functools.wraps(handler)
    def fresh(*args: Any, **kwargs: Any) -> Any:
        metrics.clear_metrics()
        return handler(*args, **kwargs)

    return metrics.log_metrics(fresh)  # type: ignore[return-value]


def bind_execution(event: dict[str, Any]) -> None:
    """Put the Step Functions execution id on every log line of this invocation."""
    execution = event.get("execution")
    if execution:
        logger.append_keys(execution=execution)


def add_team_dimension(team: str) -> None:
    metrics.add_dimension(name="team", value=team or "unknown")
