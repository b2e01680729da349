"""Preemption in a quota management queue: a share's own job reclaims the capacity another share
borrowed (cross-share), a higher-priority job displaces a lower one of its share (in-share, when
enabled); the preempted job goes back to RUNNABLE, is counted in preemptionSummary, keeps its
retryStrategy attempts and resumes from its checkpoint in a new training job. Capacity is never
exceeded, at any change moment of a busy run. Each capacity limit (instance type) of a share is
its own line: a job waiting to borrow one type does not hold back its share's job of another."""

from __future__ import annotations

import json
from typing import Any

from devtools.harness.standin.fixture_rig import T0, Rig, RigFactory, at, check_shapes, ms, run_to_end
from devtools.harness.standin.quota_rig import (
    CROSS_SHARE,
    G5,
    HOUR,
    IN_PROGRESS,
    IN_SHARE,
    QUEUE,
    START,
    STOPPING,
    TRAINING,
    payload,
    quota_rig,
    submit,
    training_names,
)

ARRIVES = 600.0  # the owner's job is submitted then: its attempt would start at ARRIVES + START
PREEMPTED = ARRIVES + START
RETRY_ON_SERVER_ERRORS = {
    "attempts": 2,
    "evaluateOnExit": [
        {"action": "RETRY", "onStatusReason": "Received status from SageMaker: InternalServerError*"},
        {"action": "EXIT", "onStatusReason": "*"},
    ],
}


def _borrowing_rig(make_rig: RigFactory, **borrowed_extra: Any) -> tuple[Rig, str, str, str]:
    """team-a runs two jobs, one on capacity borrowed from idle team-b; team-b's own job arrives
    at ARRIVES. Returns (rig, team-a's own job, team-a's borrowing job, team-b's job)."""
    rig = quota_rig(make_rig, capacity=2)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1})
    rig.standin.register_quota_share(QUEUE, "team-b", {G5: 1})
    own = submit(rig, "a-own", "team-a")
    borrowing = submit(rig, "a-borrowing", "team-a", **borrowed_extra)
    rig.clock.at(ARRIVES)
    assert [rig.batch_job(j)["status"] for j in (own, borrowing)] == ["RUNNING", "RUNNING"]  # team-b is idle
    return rig, own, borrowing, submit(rig, "b-own", "team-b")


def test_the_owners_job_reclaims_borrowed_capacity_by_preempting_the_borrowing_job(make_rig: RigFactory) -> None:
    rig, own, borrowing, owner = _borrowing_rig(make_rig, retryStrategy=RETRY_ON_SERVER_ERRORS)

    rig.clock.at(PREEMPTED + 10)  # Batch stops the borrowed attempt; it holds its instance while it stops
    job = rig.batch_job(borrowing)
    assert (job["status"], job["statusReason"]) == ("RUNNING", IN_PROGRESS + CROSS_SHARE)
    first_attempt = training_names(rig, borrowing)[0]
    assert rig.training(first_attempt)["TrainingJobStatus"] == "Stopping"
    assert rig.batch_job(owner)["status"] == "RUNNABLE"

    stopped = PREEMPTED + STOPPING
    rig.clock.at(stopped + 10)
    job = rig.batch_job(borrowing)
    assert (job["status"], job["statusReason"]) == ("RUNNABLE", CROSS_SHARE)
    assert job["attempts"][0]["statusReason"] == CROSS_SHARE
    assert job["preemptionSummary"] == {
        "preemptedAttemptCount": 1,
        "recentPreemptedAttempts": [
            {
                "serviceResourceId": {
                    "name": "TrainingJobArn",
                    "value": job["attempts"][0]["serviceResourceId"]["value"],
                },
                "startedAt": ms(START),
                "stoppedAt": ms(stopped),
                "statusReason": CROSS_SHARE,
            }
        ],
    }
    training = rig.training(first_attempt)  # stopped as TerminateServiceJob stops one: no failure
    assert (training["TrainingJobStatus"], training["SecondaryStatus"]) == ("Stopped", "Stopped")
    assert "FailureReason" not in training
    assert rig.batch_job(owner)["scheduledAt"] == ms(stopped)  # the reclaimed instance, at once
    assert rig.batch_job(own)["status"] == "RUNNING"  # within team-a's own limit: untouched

    # It restarts when capacity allows: team-a's own job ends. The restart fails once with a retryable
    # error: with attempts=2 it is retried, so the preemption used up none of its attempts.
    rig.standin.fail_next_attempt("InternalServerError: We encountered an internal error. Please try again.")
    own_end = run_to_end(rig, own)
    run_to_end(rig, borrowing)
    job = rig.batch_job(borrowing)
    assert job["status"] == "SUCCEEDED"
    assert len(job["attempts"]) == 3 and job["attempts"][1]["startedAt"] == ms(own_end)
    assert job["preemptionSummary"]["preemptedAttemptCount"] == 1
    assert "statusReason" not in job
    view = rig.view(borrowing)
    assert view.preemptions == 1 and view.quota_share == "team-a"
    saved = (PREEMPTED - TRAINING) / HOUR * 60  # steps done when SIGTERM saved the last checkpoint
    assert [a.restored_from_step for a in view.attempts] == [None, int(saved), int(saved)]
    assert rig.status_at(own_end * 3, owner)[0] == "SUCCEEDED"
    check_shapes(rig)


P4D = "ml.p4d.24xlarge"


def test_a_share_under_its_limit_for_a_type_reclaims_it_although_its_job_of_another_type_waits(
    make_rig: RigFactory,
) -> None:
    """team-a: 2 g5 and 1 p4d; team-b: 1 g5 and 1 p4d; the environment 3 g5 and 2 p4d. team-b runs
    its own p4d job and three g5 jobs, two of them on team-a's idle g5. team-a's 2-instance p4d job
    must borrow team-b's p4d, which team-b uses: it waits. team-a's g5 job, behind it in team-a's
    share, is within team-a's g5 limit: it gets team-a's g5 back by cross-share preemption of
    team-b's borrowing job started last, as "Preemption" promises ("restore borrowed capacity back
    to a quota share when jobs arrive"), instead of waiting 4 hours behind a job of another type."""
    rig = quota_rig(make_rig, capacity={G5: 3, P4D: 2}, duration=4 * HOUR)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 2, P4D: 1})
    rig.standin.register_quota_share(QUEUE, "team-b", {G5: 1, P4D: 1})

    def job(name: str, share: str, instance_type: str, instances: int = 1) -> str:
        return rig.submit(payload(name, instances, instance_type), name=name, quotaShareName=share)

    b_p4d = job("b-p4d", "team-b", P4D)
    b_g5 = [job(f"b-g5-{n}", "team-b", G5) for n in range(3)]
    rig.clock.at(ARRIVES)
    assert [rig.batch_job(j)["status"] for j in (b_p4d, *b_g5)] == ["RUNNING"] * 4  # team-a is idle
    a_p4d = job("a-p4d", "team-a", P4D, 2)
    rig.clock.at(2 * ARRIVES)
    a_g5 = job("a-g5", "team-a", G5)

    # Submitted at 2 * ARRIVES, its attempt would start START later; the borrowed attempt stops then
    # and holds its instance STOPPING more: a-g5 starts at 2 * 600 + 30 + 30 = 1260 s.
    stopped = 2 * ARRIVES + START + STOPPING
    rig.clock.at(stopped + 10)
    assert rig.batch_job(a_g5)["scheduledAt"] == ms(stopped)
    assert rig.batch_job(a_p4d)["status"] == "RUNNABLE"  # still waiting to borrow team-b's p4d
    preempted = rig.batch_job(b_g5[2])  # team-b's borrowing jobs started together: the last submitted
    assert (preempted["status"], preempted["statusReason"]) == ("RUNNABLE", CROSS_SHARE)
    assert [rig.batch_job(j)["status"] for j in (b_p4d, b_g5[0], b_g5[1])] == ["RUNNING"] * 3


def test_borrowed_capacity_is_kept_while_the_owner_has_no_waiting_job(make_rig: RigFactory) -> None:
    rig = quota_rig(make_rig, capacity=2)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1})
    rig.standin.register_quota_share(QUEUE, "team-b", {G5: 1})
    jobs = [submit(rig, f"a-{n}", "team-a") for n in range(2)]
    ends = [run_to_end(rig, j) for j in jobs]
    assert all("preemptionSummary" not in rig.batch_job(j) for j in jobs)
    assert ends[0] == ends[1]  # both ran from start to end


def test_a_preempted_job_fails_once_its_preemption_retries_are_used_up(make_rig: RigFactory) -> None:
    rig, _, borrowing, _ = _borrowing_rig(make_rig, preemptionConfiguration={"preemptionRetriesBeforeTermination": 0})
    rig.clock.at(PREEMPTED + STOPPING + 10)
    job = rig.batch_job(borrowing)
    assert job["status"] == "FAILED"
    assert job["statusReason"] == f"Preemption retries exhausted (preemptionRetriesBeforeTermination 0): {CROSS_SHARE}"
    assert job["preemptionSummary"]["preemptedAttemptCount"] == 1


def test_terminating_a_job_while_it_is_being_preempted_ends_it(make_rig: RigFactory) -> None:
    rig, _, borrowing, _ = _borrowing_rig(make_rig)
    rig.clock.at(PREEMPTED + 10)
    rig.batch.terminate_service_job(jobId=borrowing, reason="on-call: not needed")
    rig.clock.at(PREEMPTED + STOPPING + 10)
    job = rig.batch_job(borrowing)
    assert (job["status"], job["statusReason"]) == ("FAILED", "Terminated: on-call: not needed")


def test_the_service_job_state_change_events_show_the_return_to_runnable(make_rig: RigFactory) -> None:
    """Read as the local stack reads them: at every change moment, what changed since the last."""
    rig, _, borrowing, _ = _borrowing_rig(make_rig)
    emitted = rig.standin.state_change_events()
    while (moment := rig.standin.next_change_after(rig.clock.now)) is not None:
        rig.clock.now = moment
        emitted += rig.standin.state_change_events()
    arn = rig.batch_job(borrowing)["jobArn"]
    assert rig.batch_job(borrowing)["status"] == "SUCCEEDED"
    events = [e for e in emitted if e["Source"] == "aws.batch" and e["Resources"] == [arn]]

    def seconds(event: dict[str, Any]) -> float:
        return (event["Time"] - T0).total_seconds()

    changes = [
        (seconds(e), json.loads(e["Detail"])["status"])
        for e in events
        if e["DetailType"] == "Batch Service Job State Change"
    ]
    stopped = PREEMPTED + STOPPING
    assert [status for _, status in changes] == [
        "RUNNABLE",
        "SCHEDULED",
        "STARTING",
        "RUNNING",
        "RUNNABLE",  # preempted
        "SCHEDULED",
        "STARTING",
        "RUNNING",
        "SUCCEEDED",
    ]
    assert changes[4][0] == stopped
    runnable = json.loads(next(e["Detail"] for e in events if seconds(e) == stopped))
    assert runnable["statusReason"] == CROSS_SHARE and runnable["preemptionSummary"]["preemptedAttemptCount"] == 1
    preemption = [
        (seconds(e), e["DetailType"], json.loads(e["Detail"])) for e in events if "Preemption" in e["DetailType"]
    ]
    assert [(t, kind) for t, kind, _ in preemption] == [
        (PREEMPTED, "Batch Service Job Preemption Started"),
        (stopped, "Batch Service Job Preemption Completed"),
    ]
    assert preemption[0][2] == {"statusReason": IN_PROGRESS + CROSS_SHARE, "preemptedJobArn": arn, "status": "RUNNING"}
    assert preemption[1][2]["status"] == "RUNNABLE"
    assert preemption[1][2]["preemptionSummary"]["recentPreemptedAttempts"][0]["statusReason"] == CROSS_SHARE


# --- in-share preemption -----------------------------------------------------------------


def _one_share(make_rig: RigFactory, *, in_share: bool) -> tuple[Rig, str]:
    rig = quota_rig(make_rig, capacity=1)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 1}, in_share_preemption=in_share)
    return rig, submit(rig, "low", "team-a", schedulingPriority=1)


def test_a_higher_priority_job_preempts_a_lower_one_of_its_share(make_rig: RigFactory) -> None:
    rig, low = _one_share(make_rig, in_share=True)
    rig.clock.at(ARRIVES)
    high = submit(rig, "high", "team-a", schedulingPriority=500)

    stopped = PREEMPTED + STOPPING
    rig.clock.at(stopped + 10)
    job = rig.batch_job(low)
    assert (job["status"], job["statusReason"]) == ("RUNNABLE", IN_SHARE)
    assert rig.batch_job(high)["scheduledAt"] == ms(stopped)
    high_end = run_to_end(rig, high)
    run_to_end(rig, low)
    assert rig.batch_job(low)["attempts"][1]["startedAt"] == ms(high_end)
    assert rig.batch_job(low)["status"] == "SUCCEEDED"


def test_without_in_share_preemption_the_higher_priority_job_waits(make_rig: RigFactory) -> None:
    rig, low = _one_share(make_rig, in_share=False)
    rig.clock.at(ARRIVES)
    high = submit(rig, "high", "team-a", schedulingPriority=500)
    low_end = run_to_end(rig, low)
    assert "preemptionSummary" not in rig.batch_job(low)
    assert rig.batch_job(high)["scheduledAt"] == ms(low_end)


def test_raising_a_waiting_jobs_priority_makes_it_preempt(make_rig: RigFactory) -> None:
    """ "Preemption selection algorithm": raise the priority of a RUNNABLE job in a share with
    in-share preemption, "making it possible for the job to preempt an already-running job"."""
    rig, low = _one_share(make_rig, in_share=True)
    rig.clock.at(ARRIVES)
    waiting = submit(rig, "waiting", "team-a", schedulingPriority=1)  # equal priority: it waits
    rig.clock.at(2 * ARRIVES)
    assert rig.batch_job(waiting)["status"] == "RUNNABLE" and rig.batch_job(low)["status"] == "RUNNING"

    rig.batch.update_service_job(jobId=waiting, schedulingPriority=50)
    rig.clock.at(2 * ARRIVES + STOPPING)
    assert (rig.batch_job(low)["status"], rig.batch_job(low)["statusReason"]) == ("RUNNABLE", IN_SHARE)
    assert rig.batch_job(waiting)["scheduledAt"] == ms(2 * ARRIVES + STOPPING)


# --- capacity at every moment ------------------------------------------------------------


def test_capacity_is_never_exceeded_and_nothing_is_left_running(make_rig: RigFactory) -> None:
    capacity = 4
    rig = quota_rig(make_rig, capacity=capacity, duration=HOUR / 2)
    rig.standin.register_quota_share(QUEUE, "team-a", {G5: 2}, in_share_preemption=True)
    rig.standin.register_quota_share(QUEUE, "team-b", {G5: 1}, borrow_limit=200)
    rig.standin.register_quota_share(QUEUE, "team-c", {G5: 1}, strategy="LEND")
    plan = [  # (submitted at, name, share, instances, priority)
        (0, "a-1", "team-a", 1, 1),
        (0, "b-1", "team-b", 1, 1),
        (0, "b-2", "team-b", 2, 1),
        (300, "a-2", "team-a", 1, 1),
        (900, "c-1", "team-c", 1, 1),
        (900, "a-3", "team-a", 1, 9),
        (1200, "b-3", "team-b", 1, 5),
        (1500, "a-4", "team-a", 2, 1),
        (2400, "c-2", "team-c", 1, 1),
        (2400, "b-4", "team-b", 3, 1),
    ]
    instances = {name: n for _, name, _, n, _ in plan}
    pending = sorted(plan)
    jobs: list[str] = []
    t, checked = 0.0, 0
    while True:
        while pending and pending[0][0] <= t:
            _, name, share, n, priority = pending.pop(0)
            jobs.append(submit(rig, name, share, n, schedulingPriority=priority))
        busy = sum(
            instances[view.job_name]
            for view in rig.standin.jobs
            for attempt in view.attempts
            if attempt.status in ("InProgress", "Stopping")
        )
        assert busy <= capacity, f"{busy} instances busy at +{t}s"
        checked += 1
        after = rig.standin.next_change_after(at(t))
        moments = [m for m in ([(after - T0).total_seconds()] if after else []) + [p[0] for p in pending[:1]]]
        if not moments:
            break
        t = min(moments)
        rig.clock.at(t)

    assert checked > 40
    described = [rig.batch_job(j) for j in jobs]
    assert {d["status"] for d in described} == {"SUCCEEDED"}
    assert sum(d.get("preemptionSummary", {}).get("preemptedAttemptCount", 0) for d in described) >= 2
    assert {a.status for view in rig.standin.jobs for a in view.attempts} <= {"Completed", "Stopped"}
