"""Region moves that learn (issue 48), as `assess` decides them: one interruption is no reason to
move, a region the run left is blocked, the moves per run are bounded, and a move's reason says
what was seen and which move it is (spotline.core.capacity.assess.look_elsewhere)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from spotline.core.capacity.assess import assess, region_moves
from spotline.core.capacity.observation import Attempt, FleetRecord, History, Observation, QueueLimits
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.regions.regions import Departure, Sighting
from spotline.core.spec.model import JobSpec
from spotline.core.training.status import TrainingStatus

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "manifests" / "ranker-v2.yaml"
NOW = datetime(2026, 12, 1, 9, tzinfo=UTC)
HOME, PEER = "us-east-1", "us-west-2"
TYPE = "ml.g5.2xlarge"


def _spec() -> JobSpec:
    spec = validate_bytes(EXAMPLE.read_bytes(), now=datetime(2026, 11, 29, tzinfo=UTC)).spec
    assert spec is not None
    return spec


def _status(state: str, since: datetime) -> TrainingStatus:
    return TrainingStatus(
        state=state,  # type: ignore[arg-type]
        reason_class=None,
        reason=state,
        batch_status="RUNNING",
        secondary_status=None,
        training_job_name=None,
        training_seconds=0,
        billable_seconds=0,
        interruptions=int(state == "interrupted"),
        capacity_short=state == "starting",
        started_at=None,
        ended_at=None,
        state_since=since,
    )


def _run(
    *attempts: tuple[str, float], state: str = "starting", since_minutes: float = 120
) -> tuple[Observation, History]:
    """Spot attempts (region, submitted hours ago), the last one current, stuck since `since_minutes`."""
    made = [Attempt("spot", submitted_at=NOW - timedelta(hours=h), region=r) for r, h in attempts]
    where = attempts[-1][0]
    status = _status(state, NOW - timedelta(minutes=since_minutes))
    observation = Observation(status, region=where, regions=(HOME, PEER), copy_seconds=60.0)
    return observation, History(current=made[-1], previous=tuple(made[:-1]), seed="arn:execution:1")


def test_the_runs_moves_are_its_spot_attempts_that_changed_region_each_after_its_wait() -> None:
    _, history = _run((HOME, 5), (PEER, 3), (HOME, 1))
    on_demand = replace(history, current=Attempt("on-demand", submitted_at=NOW, region=None))
    assert region_moves(history, HOME) == [
        Departure(HOME, NOW - timedelta(hours=3), 2 * 3600),
        Departure(PEER, NOW - timedelta(hours=1), 2 * 3600),
    ]
    assert len(region_moves(on_demand, HOME)) == 1  # an on-demand attempt is no move for want of spot


def test_one_interruption_where_spot_ran_is_no_reason_to_move_unless_spot_is_seen_elsewhere_now() -> None:
    observation, history = _run((HOME, 5), (PEER, 4), state="interrupted", since_minutes=10)
    fleet = FleetRecord.of([Sighting(PEER, NOW - timedelta(minutes=10), False, TYPE, interruption=True)], NOW)
    assessed = assess(_spec(), replace(observation, fleet=fleet), history, QueueLimits(), NOW)
    assert assessed.next_region is None
    explanation = assessed.step.explanation
    assert f"spot interrupted in {PEER} 10m ago, where it ran until then: it waits there up to" in explanation
    assert "no spot capacity" not in explanation
    home = assessed.region_choice.estimates[0] if assessed.region_choice else None
    assert home is not None and home.note == "no spot seen there lately"  # not a prior's 20 min wait
    # Spot seen at home now, long after the run left it: worth the move at once.
    seen = FleetRecord.of([*fleet.latest.values(), Sighting(HOME, NOW - timedelta(minutes=2), True, TYPE)], NOW)
    moved = assess(_spec(), replace(observation, fleet=seen), history, QueueLimits(), NOW)
    assert moved.next_region == HOME


def test_a_region_the_run_left_is_no_candidate_until_spot_is_seen_there() -> None:
    # Left home 40 min ago after 2h20m without spot; stuck in us-west-2 since.
    observation, history = _run((HOME, 3), (PEER, 40 / 60), since_minutes=40)
    fleet = FleetRecord.of([Sighting(PEER, NOW - timedelta(minutes=5), False, TYPE)], NOW)
    stays = assess(_spec(), replace(observation, fleet=fleet), history, QueueLimits(), NOW)
    assert stays.next_region is None and stays.region_choice is not None
    home = stays.region_choice.estimates[0]
    assert home.note == "left at 08:20 after 2h20m without spot; blocked until spot is seen there or 10:40"
    seen = FleetRecord.of([*fleet.latest.values(), Sighting(HOME, NOW - timedelta(minutes=5), True, TYPE)], NOW)
    back = assess(_spec(), replace(observation, fleet=seen), history, QueueLimits(), NOW)
    assert back.next_region == HOME and back.region_choice is not None
    assert back.region_choice.to_dict()["regionMoves"] == 1 and back.region_choice.to_dict()["regionMovesAllowed"] == 4
    assert back.step.explanation.startswith(f"waited 40m without spot in {PEER}: ")
    assert back.step.explanation.endswith("before any on-demand is spent (region move 2 of 4)")


def test_the_moves_of_a_run_are_bounded_and_said() -> None:
    observation, history = _run((HOME, 9), (PEER, 8), (HOME, 7), (PEER, 6), (HOME, 5))
    assessed = assess(_spec(), observation, history, QueueLimits(), NOW)
    assert not assessed.needs and assessed.next_region is None
    assert assessed.step.explanation.endswith(f"region moves: 4 of 4 made, the spot attempt stays in {HOME}")
