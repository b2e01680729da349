"""One zone per attempt of a job of many instances: where the last one ran, unless that zone
interrupted it or had no capacity for it; the reason quotes what was seen."""

from __future__ import annotations

from typing import Any

from state_samples import status_state

from spotline.core.capacity.zones import by_zone, choose_zone, next_zone
from spotline.core.state import RunStatus

ZONES = {"us-east-1a": ["subnet-a1", "subnet-a2"], "us-east-1b": ["subnet-b"], "us-east-1c": ["subnet-c"]}


def _status(**changes: Any) -> RunStatus:
    return RunStatus.from_state(status_state(**changes))


def test_subnets_group_by_zone_in_the_stacks_order_and_unknown_ones_drop_out() -> None:
    zones = {"subnet-b": "us-east-1b", "subnet-a1": "us-east-1a", "subnet-a2": "us-east-1a"}
    grouped = by_zone(zones, ["subnet-b", "subnet-a1", "subnet-x", "subnet-a2"])
    assert grouped == {"us-east-1b": ["subnet-b"], "us-east-1a": ["subnet-a1", "subnet-a2"]}
    assert list(grouped) == ["us-east-1b", "us-east-1a"]


def test_the_first_attempt_takes_the_first_zone_with_all_its_subnets() -> None:
    choice = choose_zone(ZONES, None, None)
    assert (choice.zone, choice.subnets) == ("us-east-1a", ("subnet-a1", "subnet-a2"))
    assert choice.reason == "us-east-1a: the first of the stack's zones"


def test_an_attempt_after_an_interruption_takes_the_next_zone_and_says_why() -> None:
    choice = choose_zone(ZONES, "us-east-1a", _status(state="interrupted"))
    assert (choice.zone, choice.reason) == ("us-east-1b", "us-east-1b: us-east-1a interrupted the last attempt")
    assert choose_zone(ZONES, "us-east-1c", _status(state="interrupted")).zone == "us-east-1a", "round the zones"


def test_no_capacity_moves_on_and_a_failure_of_the_code_stays() -> None:
    short = choose_zone(ZONES, "us-east-1b", _status(state="queued", interruptions=0, capacityShort=True))
    assert short.zone == "us-east-1c" and "had no capacity for the last attempt" in short.reason
    waited = choose_zone(ZONES, "us-east-1b", _status(state="queued", interruptions=0, capacityWaitSeconds=1800))
    assert waited.reason == "us-east-1c: us-east-1b kept the last attempt waiting 30 min for capacity"
    failed = choose_zone(ZONES, "us-east-1b", _status(state="failed", interruptions=0, capacityWaitSeconds=0))
    assert (failed.zone, failed.reason) == ("us-east-1b", "us-east-1b: where the last attempt ran")


def test_one_zone_is_kept_and_the_reason_still_quotes_what_was_seen() -> None:
    only = {"us-east-1a": ["subnet-a1"]}
    choice = choose_zone(only, "us-east-1a", _status(state="interrupted"))
    assert choice.zone == "us-east-1a"
    assert choice.reason == "us-east-1a: the only zone of the stack's subnets, though it interrupted the last attempt"


def test_a_zone_no_longer_usable_is_not_chosen_again() -> None:
    assert choose_zone({"us-east-1b": ["subnet-b"]}, "us-east-1a", _status(state="interrupted")).zone == "us-east-1b"


def test_a_move_goes_round_the_zones_but_never_back_to_one_the_run_left() -> None:
    order = list(ZONES)
    assert next_zone(order, "us-east-1a") == "us-east-1b"
    assert next_zone(order, "us-east-1c") == "us-east-1a", "round the list"
    assert next_zone(order, "us-east-1b", left={"us-east-1a"}) == "us-east-1c"
    assert next_zone(order, "us-east-1c", left={"us-east-1a", "us-east-1b"}) is None, "every zone tried: no flapping"
    assert next_zone(["us-east-1a"], "us-east-1a") is None
    assert next_zone(order, None) is None
