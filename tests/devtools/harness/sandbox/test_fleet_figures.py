"""The fleet figures computed from the stand-in's service jobs: queue wait and starvation."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from spotline_dev.harness.sandbox.fleet_figures import (
    SCHEDULING_GRACE_SECONDS,
    capacity_by_team,
    fleet_figures,
    peak_instances,
    plot_fleet,
    queue_wait_seconds,
    render_fleet,
    starved_seconds,
    total_cost,
)
from spotline_dev.harness.standin import ServiceJobView
from spotline_dev.harness.standin.sagemaker.training_jobs import TrainingJobView

START = datetime(2026, 12, 1, tzinfo=UTC)
END = START + timedelta(hours=24)


G5, P4D = "ml.g5.2xlarge", "ml.p4d.24xlarge"


def _starved(
    jobs: list[ServiceJobView], sizes: dict[str, int], quotas: dict[str, int], end: datetime, **options: float
) -> dict[str, float]:
    """starved_seconds with every job and quota on ml.g5.2xlarge."""
    return starved_seconds(
        jobs,
        {job: (G5, n) for job, n in sizes.items()},
        {share: {G5: n} for share, n in quotas.items()},
        end,
        **options,
    )


def _at(hours: float) -> datetime:
    return START + timedelta(hours=hours)


def _job(name: str, share: str, submitted: float, *attempts: tuple[float, float | None]) -> ServiceJobView:
    views = tuple(
        TrainingJobView(
            name=f"{name}-{n}",
            arn=f"arn:aws:sagemaker:us-east-1:123456789012:training-job/{name}-{n}",
            capacity="spot",
            created_at=_at(begin),
            status="Completed" if end is not None else "InProgress",
            secondary_status="Completed" if end is not None else "Training",
            ended_at=_at(end) if end is not None else None,
            failure_reason=None,
            training_seconds=0.0,
            billable_seconds=0.0,
            interrupted_at=(),
            lost_work_seconds=0.0,
            restored_from_step=None,
        )
        for n, (begin, end) in enumerate(attempts, start=1)
    )
    finished = bool(attempts) and attempts[-1][1] is not None
    return ServiceJobView(
        job_id=name,
        job_name=name,
        job_arn=f"arn:aws:batch:us-east-1:123456789012:service-job/{name}",
        queue="training",
        capacity="spot",
        submitted_at=_at(submitted),
        status="SUCCEEDED" if finished else ("RUNNING" if attempts else "RUNNABLE"),
        status_reason=None,
        attempts=views,
        quota_share=share,
    )


def test_a_job_started_as_soon_as_its_share_has_room_was_never_starved() -> None:
    jobs = [_job("a", "ads", 0, (0, 10)), _job("b", "search", 1, (1, 5))]

    assert _starved(jobs, {"a": 2, "b": 2}, {"ads": 2, "search": 2}, END) == {"ads": 0.0, "search": 0.0}


def test_waiting_while_its_share_had_room_counts_as_starved() -> None:
    jobs = [_job("a", "ads", 0, (0, 10)), _job("b", "search", 1, (3, 5))]

    starved = _starved(jobs, {"a": 4, "b": 2}, {"ads": 2, "search": 2}, END)

    assert starved == {"ads": 0.0, "search": 2 * 3600.0 - SCHEDULING_GRACE_SECONDS}


def test_a_wait_shorter_than_the_schedulers_pace_is_not_starvation() -> None:
    jobs = [_job("a", "ads", 0, (0, 10)), _job("b", "search", 1, (1 + 4 / 60, 5))]  # 4 minutes

    assert _starved(jobs, {"a": 4, "b": 2}, {"ads": 2, "search": 2}, END)["search"] == 0.0
    assert _starved(jobs, {"a": 4, "b": 2}, {"ads": 2, "search": 2}, END, grace_seconds=0)["search"] == 240.0


def test_a_job_larger_than_what_its_share_has_left_is_not_starved_by_waiting() -> None:
    held = _job("b1", "search", 0, (0, 6))
    waiting = _job("b2", "search", 1, (6, 8))
    too_big = _job("c", "ads", 0, (9, 10))

    starved = _starved([held, waiting, too_big], {"b1": 2, "b2": 1, "c": 3}, {"search": 2, "ads": 2}, END)

    assert starved == {"search": 0.0, "ads": 0.0}


def test_a_preempted_job_waiting_again_counts_from_its_attempts_end() -> None:
    preempted = _job("b", "search", 0, (0, 2), (5, 7))  # preempted at 2 h, back at 5 h
    other = _job("a", "ads", 0, (0, 12))

    assert queue_wait_seconds(preempted, END) == 3 * 3600.0
    starved = _starved([preempted, other], {"b": 1, "a": 1}, {"search": 1, "ads": 1}, END, grace_seconds=0)
    assert starved["search"] == 3 * 3600.0


def test_a_job_still_waiting_at_the_end_waits_until_then() -> None:
    waiting = _job("b", "search", 20)

    assert queue_wait_seconds(waiting, END) == 4 * 3600.0
    assert _starved([waiting], {"b": 1}, {"search": 1}, END, grace_seconds=0) == {"search": 4 * 3600.0}


def test_the_fleet_picture_stacks_each_teams_instances(tmp_path: Path) -> None:
    runs = [
        {"team": "ads", "instanceCount": 2, "jobIds": ["a"]},
        {"team": "search", "instanceCount": 1, "jobIds": ["b"]},
    ]
    jobs = [_job("a", "ads", 0, (0, 10)), _job("b", "search", 1, (1, 5))]

    assert capacity_by_team(runs, jobs, END) == {
        "ads": [(_at(0), 2), (_at(10), 0)],
        "search": [(_at(1), 1), (_at(5), 0)],
    }
    path = plot_fleet(
        runs, jobs, tmp_path / "fleet.png", capacity={"ml.g5.2xlarge": 4}, start=START, end=END, title="t"
    )
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_fleet_with_an_unpriced_run_has_an_unknown_cost_not_a_partial_one() -> None:
    fleet = {
        "jobs": 2,
        "succeeded": 2,
        "failed": 0,
        "deadlinesMet": 0,
        "deadlinesMissed": 0,
        "costUsd": None,
        "onDemandCostUsd": None,
        "capacityInstances": 0,
        "capacityUtilization": None,
        "queueWaitSeconds": {"p50": 0, "p95": 0, "max": 0},
        "preemptions": 0,
        "teams": {},
    }
    (line,) = [line for line in render_fleet(fleet) if "all on-demand" in line]
    assert line.startswith("  cost unknown vs unknown all on-demand on each job's primary type (saving unknown)")
    assert total_cost([1.5, None]) is None and total_cost([1.5, 2.25]) == 3.75


def test_a_run_stopped_before_its_deadline_missed_nothing_and_an_unfinished_one_has_no_baseline() -> None:
    base = {"team": "t", "instanceCount": 1, "jobIds": [], "costUsd": 1.0}
    stopped_early = base | {
        "status": "ABORTED",
        "deadline": "2026-12-02T06:00:00+00:00",
        "deadlineMet": None,
        "executionEndedAt": "2026-12-01T03:00:00Z",
        "onDemandCostUsd": None,
        "onDemandSeconds": None,
    }
    stopped_late = stopped_early | {"executionEndedAt": "2026-12-02T07:00:00Z"}
    finished = base | {
        "status": "SUCCEEDED",
        "deadline": None,
        "deadlineMet": None,
        "onDemandCostUsd": 3.0,
        "onDemandSeconds": 7200,
    }
    fleet = fleet_figures(
        [stopped_early, stopped_late, finished], [], capacity={"ml.g5.2xlarge": 8}, start=_at(0), end=_at(48), quotas={}
    )

    assert fleet["deadlinesMissed"] == 1  # only the run still unfinished when its deadline came
    assert fleet["onDemandCostUsd"] == 3.0  # the work finished, on-demand; not unknown for the stopped runs
    assert fleet["costUsd"] == 3.0


def test_a_job_terminated_while_queued_waited_until_it_was_terminated() -> None:
    queued = replace(_job("cancelled", "t", 0.0), status="FAILED", ended_at=_at(0.4))
    assert queue_wait_seconds(queued, _at(5)) == 0.4 * 3600  # 24 minutes, not 0, and not until the end
    finished = replace(_job("done", "t", 0.0, (0.5, 2.0)), ended_at=_at(2.0))
    assert queue_wait_seconds(finished, _at(5)) == 0.5 * 3600


def test_starvation_is_reported_only_for_a_team_with_a_quota_share() -> None:
    run = {"team": "no-share", "status": "SUCCEEDED", "deadline": None, "deadlineMet": None, "costUsd": 0.0}
    run |= {"onDemandCostUsd": None, "onDemandSeconds": None, "instanceCount": 1, "jobIds": ["j"]}
    fleet = fleet_figures(
        [run], [_job("j", "", 0.0, (3.0, 4.0))], capacity={"ml.g5.2xlarge": 4}, start=_at(0), end=_at(5), quotas={}
    )

    assert fleet["teams"]["no-share"]["starvedSeconds"] is None  # no quota declared: nothing to be starved of
    (line,) = [line for line in render_fleet(fleet) if line.strip().startswith("no-share")]
    assert line.rstrip().endswith("-")


def test_starvation_and_peaks_are_per_instance_type() -> None:
    """A job waits within its share's quota only if the quota of its own type had room: search's
    p4d job waiting while search holds nothing of p4d but has no p4d quota is not starved, and
    g5 room does not make a p4d wait count."""
    held = _job("g", "search", 0, (0, 10))
    waiting_p4d = _job("p", "search", 1, (5, 7))
    sizes = {"g": (G5, 1), "p": (P4D, 1)}
    assert starved_seconds([held, waiting_p4d], sizes, {"search": {G5: 2}}, END, grace_seconds=0) == {"search": 0.0}
    starved = starved_seconds([held, waiting_p4d], sizes, {"search": {G5: 2, P4D: 1}}, END, grace_seconds=0)
    assert starved == {"search": 4 * 3600.0}  # a p4d of its own was free from hour 1 to hour 5
    assert peak_instances([held, waiting_p4d], {"g": (G5, 2), "p": (P4D, 1)}, END) == {G5: 2, P4D: 1}
