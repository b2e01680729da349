"""One check decided from records (pure): `assess` returns the raise, the move, the plan and the
page as data, and says what it still needs to read."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from spotline.core.capacity.assess import STARTUP_AFTER_ACQUIRE_SECONDS, assess, restart_overhead
from spotline.core.capacity.observation import Attempt, FleetRecord, History, Observation, QueueLimits
from spotline.core.capacity.policy import DEFAULT_RESTART_OVERHEAD_SECONDS
from spotline.core.capacity.training_plans import PlanView
from spotline.core.manifest.manifest import validate_bytes
from spotline.core.regions.regions import Sighting
from spotline.core.spec.model import JobSpec
from spotline.core.state import ExcludedRegion
from spotline.core.training.status import TrainingStatus, normalize

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "manifests" / "ranker-v2.yaml"
NOW = datetime(2026, 12, 1, 9, tzinfo=UTC)
PEER = "us-west-2"


def _spec(**changes: object) -> JobSpec:
    spec = validate_bytes(EXAMPLE.read_bytes(), now=datetime(2026, 11, 29, tzinfo=UTC)).spec
    assert spec is not None
    return replace(spec, **changes)  # type: ignore[arg-type]


def _status(state: str = "queued", **changes: object) -> TrainingStatus:
    base = TrainingStatus(
        state="queued",
        reason_class=None,
        reason="queued",
        batch_status="RUNNABLE",
        secondary_status=None,
        training_job_name=None,
        training_seconds=0,
        billable_seconds=0,
        interruptions=0,
        capacity_short=False,
        started_at=None,
        ended_at=None,
    )
    return replace(base, state=state, **changes)  # type: ignore[arg-type]


def _history(submitted: datetime, capacity: str = "spot", **changes: object) -> History:
    current = Attempt(capacity=capacity, submitted_at=submitted)  # type: ignore[arg-type]
    return replace(History(current=current, seed="arn:execution:1"), **changes)  # type: ignore[arg-type]


def test_the_restart_estimate_uses_on_demand_waits_only() -> None:
    previous = (Attempt("spot", queue_wait_seconds=7200.0), Attempt("on-demand", queue_wait_seconds=300.0))
    assert restart_overhead(previous, None, "spot") == 300.0 + STARTUP_AFTER_ACQUIRE_SECONDS
    assert restart_overhead(previous, 900.0, "on-demand") == 900.0 + STARTUP_AFTER_ACQUIRE_SECONDS
    assert restart_overhead(previous[:1], None, "spot") == DEFAULT_RESTART_OVERHEAD_SECONDS


def test_a_job_queued_for_room_past_its_slack_gets_its_raise_as_data() -> None:
    # 8 h of work, due in 9 h: about 20 minutes of slack, queued for room for an hour.
    spec = _spec(deadline=(NOW + timedelta(hours=9)).isoformat())
    observation = Observation(_status(), region="us-east-1", priority=100)
    history = _history(NOW - timedelta(hours=1))
    assessed = assess(spec, observation, history, QueueLimits(max_priority=900), NOW)
    assert assessed.decision.verdict == "continue"
    assert assessed.escalation is not None and (assessed.escalation.current, assessed.escalation.raised) == (100, 900)
    assert assessed.priority == 900 and assessed.checks == 1 and not assessed.needs
    # Without a maximum for the team, nothing is raised.
    unraised = assess(spec, observation, history, QueueLimits(), NOW)
    assert unraised.escalation is None and unraised.priority == 100


def _stuck() -> tuple[JobSpec, Observation, History]:
    """A spot attempt with no spot capacity in us-east-1 for 2 h, in a run that may use us-west-2."""
    spec = _spec()
    status = _status(
        "starting", capacity_short=True, reason="Insufficient capacity", state_since=NOW - timedelta(hours=2)
    )
    observation = Observation(status, region="us-east-1", regions=("us-east-1", PEER), copy_seconds=60.0)
    return spec, observation, _history(NOW - timedelta(hours=2))


def test_a_stuck_spot_attempt_asks_for_the_fleets_record_then_moves_where_spot_was_seen() -> None:
    spec, observation, history = _stuck()
    first = assess(spec, observation, history, QueueLimits(), NOW)
    assert first.needs == {"fleet"} and first.next_region is None
    assert first.sighting == Sighting("us-east-1", NOW, False, "ml.g5.2xlarge")
    seen = [Sighting(PEER, NOW - timedelta(minutes=5), True, "ml.g5.2xlarge"), first.sighting]
    moved = assess(spec, replace(observation, fleet=FleetRecord.of(seen, NOW)), history, QueueLimits(), NOW)
    assert not moved.needs
    assert (moved.step.action, moved.next_region, moved.step.next_capacity) == ("move-to-another-region", PEER, "spot")
    assert moved.region_choice is not None and moved.region_choice.moves
    assert moved.sighting == first.sighting


def test_a_stuck_spot_attempt_in_one_region_never_asks_for_the_fleets_record() -> None:
    spec, observation, history = _stuck()
    excluded = (ExcludedRegion(region=PEER, field="spec.image", reason="no replica"),)
    alone = assess(spec, replace(observation, regions=("us-east-1",), excluded=excluded), history, QueueLimits(), NOW)
    assert not alone.needs and alone.next_region is None
    assert alone.step.explanation.endswith(f"; spot waits in us-east-1: {PEER} left out (spec.image: no replica)")


def test_an_on_demand_fallback_asks_for_the_plans_then_takes_one() -> None:
    # Due in 8h30m with 8 h of work: the deadline forces the move off spot.
    spec = _spec(deadline=(NOW + timedelta(hours=8, minutes=30)).isoformat(), training_plan="any")
    observation = Observation(_status("starting", capacity_short=True), region="us-east-1")
    history = _history(NOW - timedelta(minutes=30))
    first = assess(spec, observation, history, QueueLimits(), NOW)
    assert first.step.next_capacity == "on-demand" and first.needs == {"plans"} and first.plan is None
    assert first.max_pending_seconds is not None
    plan = PlanView(
        arn="arn:aws:sagemaker:us-east-1:123456789012:training-plan/g5",
        name="g5",
        status="Active",
        instance_type="ml.g5.2xlarge",
        total_instances=1,
        available_instances=1,
        start=NOW - timedelta(hours=1),
        end=NOW + timedelta(days=1),
    )
    planned = assess(spec, replace(observation, plans=(plan,)), history, QueueLimits(), NOW)
    assert (planned.step.action, planned.step.next_capacity, planned.plan) == (
        "switch-to-training-plan",
        "training-plan",
        plan,
    )
    assert planned.max_pending_seconds is None
    # No usable plan: paid on-demand, as before.
    none_usable = assess(spec, replace(observation, plans=()), history, QueueLimits(), NOW)
    assert none_usable.step.next_capacity == "on-demand" and none_usable.plan is None and not none_usable.needs


def test_deadline_at_risk_is_due_once_per_run() -> None:
    # 8 h of work, 2 h left: no capacity can make it.
    spec = _spec(deadline=(NOW + timedelta(hours=2)).isoformat())
    observation = Observation(_status(), region="us-east-1")
    history = _history(NOW - timedelta(minutes=10), capacity="on-demand")
    due = assess(spec, observation, history, QueueLimits(), NOW).at_risk
    assert due is not None and due.at == NOW and not due.estimated
    assert due.cause.startswith("2h left before the deadline; ") and due.cause.endswith(
        "(tried: on-demand on ml.g5.2xlarge)"
    )
    assert due.record(notified=True)["workLeftSeconds"] == round(due.work_left_seconds)
    sent = replace(history, at_risk=due.record(notified=True))
    assert assess(spec, observation, sent, QueueLimits(), NOW).at_risk is None


def _on_demand(*capacities: str, strategy: str = "spot-first") -> tuple[JobSpec, Observation, History]:
    """An on-demand attempt training for an hour, 8 h of declared work due in 12 h (3h16m of slack),
    after earlier attempts of `capacities` (the run's first, 3 h ago)."""
    spec = _spec(deadline=(NOW + timedelta(hours=12)).isoformat(), strategy=strategy)
    status = _status("training", started_at=NOW - timedelta(minutes=50), state_since=NOW - timedelta(minutes=50))
    previous = tuple(Attempt(c, submitted_at=NOW - timedelta(hours=3)) for c in capacities)  # type: ignore[arg-type]
    history = _history(NOW - timedelta(hours=1), "on-demand", previous=previous)
    return spec, Observation(status, region="us-east-1", regions=("us-east-1",)), history


def test_an_on_demand_job_with_slack_asks_for_the_fleets_record_then_returns_to_spot_it_sees() -> None:
    spec, observation, history = _on_demand("spot")
    first = assess(spec, observation, history, QueueLimits(), NOW)
    assert first.needs == {"fleet"} and first.step.action == "keep-waiting"
    seen = FleetRecord.of([Sighting("us-east-1", NOW - timedelta(minutes=5), True, "ml.g5.2xlarge")], NOW)
    back = assess(spec, replace(observation, fleet=seen), history, QueueLimits(), NOW)
    assert (back.step.action, back.step.next_capacity) == ("return-to-spot", "spot")
    assert back.step.explanation.endswith("(return 1 of 2; spot attempt 2 of 3)")
    missing = FleetRecord.of([Sighting("us-east-1", NOW - timedelta(minutes=5), False, "ml.g5.2xlarge")], NOW)
    stays = assess(spec, replace(observation, fleet=missing), history, QueueLimits(), NOW)
    assert stays.step.action == "keep-waiting"
    assert stays.step.explanation == "on on-demand capacity; no spot capacity seen here just now"


def test_no_return_to_spot_is_asked_about_once_the_run_may_not_make_one() -> None:
    cases = [
        _on_demand("spot", strategy="on-demand"),  # the strategy says on-demand
        _on_demand("on-demand", "spot", "on-demand", "spot"),  # two returns made already (2 of 3 spot attempts)
        _on_demand("spot", "spot"),  # two spot attempts so far: a third is still allowed
        _on_demand("spot", "spot", "spot"),  # the manifest's 3 spot attempts used up
    ]
    for spec, observation, history in cases[:2] + cases[3:]:
        assessed = assess(spec, observation, history, QueueLimits(), NOW)
        assert not assessed.needs and assessed.step.action == "keep-waiting"
        assert assessed.decision.reason == "on on-demand capacity"
    spec, observation, history = cases[2]
    assert assess(spec, observation, history, QueueLimits(), NOW).needs == {"fleet"}


def test_a_return_to_spot_goes_to_the_type_seen_at_the_manifests_priority_and_leaves_room_for_a_copy() -> None:
    spec, observation, history = _on_demand("spot")
    seen = FleetRecord.of([Sighting("us-east-1", NOW - timedelta(minutes=5), True, "ml.g5.4xlarge")], NOW)
    # The on-demand fallback got an alternative type and the team's top priority.
    on_alternative = replace(observation, status=replace(observation.status, instance_type="ml.g5.4xlarge"))
    back = assess(spec, replace(on_alternative, fleet=seen, priority=900), history, QueueLimits(max_priority=900), NOW)
    assert (back.step.action, back.step.next_instance_type) == ("return-to-spot", "ml.g5.4xlarge")
    assert back.priority == spec.priority
    # Across regions a spot attempt's restart counts the checkpoint copy: 3h of copy leaves no room.
    far = replace(on_alternative, fleet=seen, copy_seconds=3 * 3600.0, regions=("us-east-1", PEER))
    stays = assess(spec, far, history, QueueLimits(), NOW)
    assert stays.step.action == "keep-waiting"
    assert stays.decision.reason == "on on-demand capacity; too little slack or work left for a return to spot"
    assert not assess(spec, replace(far, fleet=None), history, QueueLimits(), NOW).needs


def test_a_cluster_repair_is_seen_as_capacity_held_not_as_spot_reclaimed() -> None:
    """A check that lands while SageMaker repairs the cluster after a GPU failure ("Repairing training
    cluster due to hardware failure"): the attempt keeps its spot instances, so the fleet's record
    sees spot there and the attempt goes on, with no move and no switch however little slack is left."""
    began = NOW - timedelta(hours=3)
    described = {
        "TrainingJobName": "ranker-v2-1a2b3c4d-a1-spot",
        "TrainingJobStatus": "InProgress",
        "SecondaryStatus": "Restarting",
        "SecondaryStatusTransitions": [
            {"Status": "Starting", "StartTime": began, "EndTime": began + timedelta(minutes=5)},
            {"Status": "Training", "StartTime": began + timedelta(minutes=5), "EndTime": NOW - timedelta(minutes=5)},
            {
                "Status": "Restarting",
                "StartTime": NOW - timedelta(minutes=5),
                "StatusMessage": "Repairing training cluster due to hardware failure",
            },
        ],
    }
    batch = {"status": "RUNNING", "attempts": [], "jobId": "j"}
    status = normalize(batch, described, NOW)
    spec = _spec(deadline=(NOW + timedelta(hours=6)).isoformat())  # 8 h declared, ~3 h done: little slack
    observation = Observation(status, region="us-east-1", regions=("us-east-1", PEER), copy_seconds=60.0)
    assessed = assess(spec, observation, _history(began), QueueLimits(), NOW)
    assert assessed.sighting == Sighting("us-east-1", NOW, True, "ml.g5.2xlarge")
    assert assessed.next_region is None and not assessed.needs
    assert assessed.step.action not in ("move-to-another-region", "switch-to-on-demand")
