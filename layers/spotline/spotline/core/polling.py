"""How long to wait before the next status check (pure).

Every poll costs Step Functions history events (about 9) and state transitions (3), so the
interval is short where something is likely to change (queue, start-up, the expected end)
and long in the middle of a long training run: a 72-hour job takes roughly 90 checks.
"""

from __future__ import annotations

from spotline.core.status import TrainingStatus

MIN_SECONDS = 60
MAX_SECONDS = 3600
EARLY_TRAINING_SECONDS = 900
WAITING_MAX_SECONDS = 900


def next_poll_seconds(
    status: TrainingStatus,
    *,
    seconds_since_submit: float,
    expected_duration: int | None,
    deadline_slack: float | None = None,
    seconds_in_state: float | None = None,
) -> int:
    """`deadline_slack`: seconds of spare time before the deadline, if there is one; a poll
    never sleeps through more than a quarter of it. `seconds_in_state`: how long the job has
    been in its current SageMaker status, when known."""
    if status.state in ("queued", "starting", "interrupted"):
        # Waiting for capacity or start-up: look again soon, then back off while it lasts.
        waited = seconds_since_submit if seconds_in_state is None else seconds_in_state
        interval: float = min(WAITING_MAX_SECONDS, max(60.0, waited / 2))
    elif status.training_seconds < EARLY_TRAINING_SECONDS:
        interval = 300
    elif expected_duration is None:
        interval = 1800
    else:
        remaining = expected_duration - status.training_seconds
        interval = 900 if remaining <= 0 else max(300, remaining / 4)
    if deadline_slack is not None:
        interval = min(interval, max(MIN_SECONDS, deadline_slack / 4))
    return int(min(MAX_SECONDS, max(MIN_SECONDS, interval)))
