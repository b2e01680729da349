"""Whether each execution of a sandbox run ends with its training: within a minute (virtual) of
its training job's end, never leaving a job running that nothing watches."""

from __future__ import annotations

from datetime import datetime
from typing import Any

GAP_SECONDS = 60


def gaps(summary: dict[str, Any]) -> list[float]:
    """Seconds from each execution's last training end to the execution's end (negative: the
    execution was stopped or failed first, and the training job stopped after it)."""
    return [
        (
            datetime.fromisoformat(run["executionEndedAt"]) - datetime.fromisoformat(run["trainingEndedAt"])
        ).total_seconds()
        for run in summary["executions"]
        if run["trainingEndedAt"] and run["executionEndedAt"]
    ]


def assert_timely(summary: dict[str, Any]) -> None:
    for run in summary["executions"]:
        assert run["trainingStatus"] is None or run["trainingEndedAt"], f"{run['name']}: its training never ended"
    assert all(abs(gap) <= GAP_SECONDS for gap in gaps(summary)), gaps(summary)
    assert summary["leftRunning"] == []
