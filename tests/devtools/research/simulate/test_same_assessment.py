"""One observation, one assessment: the simulator's Spotline policy and the CheckTrainingStatus
adapter (`spotline.aws.capacity.checking.check`, AWS answered by this test's stubs) hand the same
observation of a stuck spot attempt to `assess` and get the same answer: move to another region."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from state_samples import regions_state, resources_state, status_state, training_state

from spotline.aws.capacity import checking
from spotline.aws.capacity.queue_state import QueueSettings
from spotline.core.capacity.assess import Assessment, assess
from spotline.core.capacity.observation import FleetRecord, History, Observation, QueueLimits
from spotline.core.regions.regions import GIB, Sighting
from spotline.core.spec.model import to_rfc3339
from spotline_dev.research.simulate.model import Job, View, simulate
from spotline_dev.research.simulate.regions import SpotlineAcrossRegions

START = datetime(2023, 2, 15, tzinfo=UTC)
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:TrainingLifecycle:simulate-job"
REGIONS = ("us-east-1", "us-west-2")


class _Recording(SpotlineAcrossRegions):
    """The simulator's policy, keeping what each check observed and the fleet's record it read."""

    def __init__(self, job: Job) -> None:
        super().__init__(job, START, REGIONS, 10 * GIB)
        self.seed = f"{EXECUTION}:1"  # the Lambda's jitter seed: the execution and the attempt
        self.observed: list[tuple[Observation, History]] = []
        self.fleets: list[FleetRecord] = []

    def observe(self, view: View) -> tuple[Observation, History]:
        self.observed.append(seen := super().observe(view))
        return seen

    def fleet(self, view: View) -> FleetRecord:
        self.fleets.append(record := super().fleet(view))
        return record


def _the_move() -> tuple[_Recording, Observation, History, FleetRecord, Assessment]:
    """Spot at home for 100 steps, in us-west-2 from step 90: the check that moves the attempt."""
    job = Job(work=240, deadline=480, overhead=20, checkpoint=15, step_seconds=60, copy=3, copy_cost=0.05)
    home = np.r_[np.ones(100, bool), np.zeros(job.deadline - 100, bool)]
    away = np.r_[np.zeros(90, bool), np.ones(job.deadline - 90, bool)]
    policy = _Recording(job)
    assert simulate(job, np.stack([home, away]), policy).regions == (0, 1)
    index = next(i for i, a in enumerate(policy.assessments) if a.next_region is not None)
    observation, history = policy.observed[index]
    fleet = next(f for f in policy.fleets if f.latest.get("us-east-1") == policy.assessments[index].sighting)
    return policy, observation, history, fleet, policy.assessments[index]


def _state(observation: Observation, history: History) -> dict[str, Any]:
    """The execution state the Lambda would be handed at that check."""
    assert history.current.submitted_at is not None and not history.previous
    return {
        "training": training_state(
            jobId="job-1",
            capacity=history.current.capacity,
            instanceType=None,
            trainingPlan=None,
            submittedAt=to_rfc3339(history.current.submitted_at),
            attempt=1,
            region=observation.region,
            previousAttempts=[],
        ),
        # the last check before this one (its checks count, no DeadlineAtRisk sent); none before the first
        "status": status_state(checks=history.checks, deadlineAtRisk=None) if history.checks else {},
        "resources": resources_state(regions=regions_state(list(observation.regions))),
    }


def test_the_adapter_and_the_simulator_assess_one_observation_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    policy, observation, history, fleet, simulated = _the_move()
    assert simulated.step.action == "move-to-another-region" and simulated.next_region == "us-west-2"

    # AWS, as it would answer for that observation.
    batch = SimpleNamespace(describe_service_job=lambda jobId: {"jobId": jobId})
    monkeypatch.setattr(checking, "client", lambda service, *args: batch)
    monkeypatch.setattr(checking, "describe_training_job", lambda name: None)
    monkeypatch.setattr(checking, "normalize", lambda batch_job, described, now, earlier: observation.status)
    monkeypatch.setattr(checking, "spec_of", lambda state: policy.spec)
    monkeypatch.setattr(checking, "spec_at", lambda spec, region: spec)
    monkeypatch.setattr(checking, "waiting_jobs", lambda queue, share: [])
    monkeypatch.setattr(checking, "read_progress", lambda uri, region: observation.progress)
    monkeypatch.setattr(
        checking, "copy_seconds", lambda regions, spec, where: (observation.copy_seconds, observation.checkpoint_bytes)
    )
    monkeypatch.setattr(QueueSettings, "max_priority", lambda self, team: None)
    monkeypatch.delenv("JOB_QUEUE", raising=False)
    monkeypatch.delenv("ALERT_TOPIC_ARN", raising=False)
    noted: list[Sighting] = []
    monkeypatch.setattr(checking, "note_sighting", lambda seen, execution: noted.append(seen))
    monkeypatch.setattr(checking, "fleet_record", lambda regions, instance_type, now, instances: fleet)
    asked: list[tuple[Observation, History, QueueLimits, Assessment]] = []

    def recording(spec: Any, seen: Observation, run: History, limits: QueueLimits, now: datetime) -> Assessment:
        asked.append((seen, run, limits, assessed := assess(spec, seen, run, limits, now)))
        return assessed

    monkeypatch.setattr(checking, "assess", recording)

    status = checking.check(
        _state(observation, history), execution_arn=EXECUTION, now=simulated.clock.now, region="us-east-1"
    )

    (first, run, limits, _), (second, _, _, assessed) = asked
    assert (first, run, limits) == (observation, history, QueueLimits())  # the one observation, gathered
    assert second == replace(first, fleet=fleet)  # and the fleet's record it asked for
    assert assessed == simulated
    assert noted == [simulated.sighting] and simulated.sighting in policy.own  # the fleet's record, written
    assert (status["action"], status["nextRegion"], status["nextCapacity"]) == (
        "move-to-another-region",
        "us-west-2",
        "spot",
    )
    assert status["decision"]["restartOverheadSeconds"] == int(simulated.restart_overhead_seconds)
