"""The AWS service events of the local stack's training jobs: Batch's "Service Job State
Change" and SageMaker's "Training Job State Change", put on the default bus at the virtual
moment each change happens, then delivered to the rules' functions as EventBridge would.

The virtual clock stops at every change the stand-in has scheduled (`VirtualClock.watch`), so
an execution waiting for its job's next change is woken then, not at its timeout."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from spotline_dev.harness.local.peers import next_change_after, state_change_events

if TYPE_CHECKING:
    from spotline_dev.harness.local.handles import LocalStack

PUT_EVENTS_BATCH = 10
"""PutEvents takes at most ten entries per call."""
SERVICE_EVENT_SOURCES = ("aws.batch", "aws.sagemaker")


def install_service_events(stack: LocalStack) -> None:
    """From now on, every Batch or SageMaker change of a stand-in job is put on the bus and
    delivered at its moment. Failed deliveries are kept in `stack.delivery_errors`."""

    def publish() -> None:
        publish_service_events(stack)

    stack.clock.watch(partial(next_change_after, stack), publish)


def publish_service_events(stack: LocalStack) -> list[Any]:
    """Put the changes since the last call on the bus, then deliver what rules on the service
    events matched (and only that: a manifest uploaded meanwhile waits for its own delivery)."""
    entries = state_change_events(stack)
    if not entries:
        return []
    events = stack.client("events")
    for first in range(0, len(entries), PUT_EVENTS_BATCH):
        answer = events.put_events(Entries=entries[first : first + PUT_EVENTS_BATCH])
        if answer.get("FailedEntryCount"):
            raise RuntimeError(f"PutEvents refused service events: {answer['Entries']}")
    return stack.deliver_events(
        on_error=lambda rule, error: stack.delivery_errors.append(f"{rule}: {error}"),
        sources=SERVICE_EVENT_SOURCES,
    )
