"""The wait for a training job's next change: whoever comes second releases, exactly once."""

from __future__ import annotations

from datetime import timedelta

from conftest import NOW
from spotline.aws.training.training_watch import TrainingWatches, watches_from_environment
from spotline_dev.harness.local.handles import LocalStack

EXECUTION = "search-ranking-ranker-v2-2a265c01"
CHANGE = {"source": "sagemaker", "job": "j", "status": "Completed", "summary": "SageMaker training job j: Completed"}


def _watches(stack: LocalStack) -> TrainingWatches:
    """The store the functions use (the stack set TRAINING_WATCHES_TABLE)."""
    assert stack.physical["TrainingWatchesTable"]
    return watches_from_environment()


def _item(stack: LocalStack) -> dict[str, object]:
    table = stack.client("dynamodb")
    item = table.get_item(TableName=stack.physical["TrainingWatchesTable"], Key={"pk": {"S": EXECUTION}})
    return dict(item.get("Item") or {})


def test_a_change_after_registration_takes_the_token_once(stack: LocalStack) -> None:
    watches = _watches(stack)
    assert watches.register(EXECUTION, "token-1", checked_at=NOW, now=NOW, timeout_seconds=900) is None
    assert watches.record(EXECUTION, CHANGE, now=NOW + timedelta(seconds=5)) == "token-1"
    assert watches.record(EXECUTION, CHANGE, now=NOW + timedelta(seconds=6)) is None  # a duplicate event
    assert "taskToken" not in _item(stack)


def test_a_change_between_the_check_and_the_registration_releases_at_registration(stack: LocalStack) -> None:
    watches = _watches(stack)
    assert watches.record(EXECUTION, CHANGE, now=NOW + timedelta(seconds=2)) is None  # nobody waits yet
    found = watches.register(EXECUTION, "token-2", checked_at=NOW, now=NOW + timedelta(seconds=3), timeout_seconds=60)
    assert found == CHANGE
    assert "taskToken" not in _item(stack)  # taken: the gate cannot send it a second time


def test_a_change_the_check_already_saw_does_not_release(stack: LocalStack) -> None:
    watches = _watches(stack)
    watches.record(EXECUTION, CHANGE, now=NOW)
    assert watches.register(EXECUTION, "token-3", checked_at=NOW, now=NOW, timeout_seconds=60) is None
    assert _item(stack)["taskToken"] == {"S": "token-3"}


def test_items_expire_after_their_wait(stack: LocalStack) -> None:
    watches = _watches(stack)
    watches.register(EXECUTION, "token-4", checked_at=NOW, now=NOW, timeout_seconds=7200)
    expires = int(str(_item(stack)["expiresAt"]["N"]))  # type: ignore[index]
    assert expires == int((NOW + timedelta(seconds=7200, days=1)).timestamp())


def test_a_change_for_an_execution_that_handed_over_goes_to_the_one_watching_now(stack: LocalStack) -> None:
    """A training job Batch starts after a hand-over carries the payload's tags: the first name."""
    watches = _watches(stack)
    watches.register(f"{EXECUTION}-c2", "token-c2", checked_at=NOW, now=NOW, timeout_seconds=60)
    watches.continue_as(EXECUTION, f"{EXECUTION}-c1")
    watches.continue_as(f"{EXECUTION}-c1", f"{EXECUTION}-c2")
    assert watches.record(EXECUTION, CHANGE, now=NOW + timedelta(seconds=1)) == "token-c2"
