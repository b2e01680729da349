"""Fleet scenarios: many uploads in one stack, one queue with a capacity limit, one clock."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from ledger_checks import assert_reconciled

from builders import example_text
from spotline_dev.harness.local import stack as local_aws
from spotline_dev.harness.sandbox.fleet import uploads_of
from spotline_dev.harness.sandbox.fleet_figures import capacity_by_team, percentile, queue_wait_seconds, render_fleet
from spotline_dev.harness.sandbox.replay import ScenarioError, draw, load_scenario, public_summary, run_scenario

START = datetime(2026, 12, 1, tzinfo=UTC)
HOUR = 3600.0


def _manifest(folder: Path, name: str, *, team: str = "search-ranking", priority: int = 100, hours: int = 2) -> Path:
    """The example manifest as job `name` of `team`, `hours` long, without a deadline."""
    text = example_text(
        ("name: ranker-v2", f"name: {name}"),
        ("search-ranking", team),  # the team, its buckets
        ("role/spotline/ranker-training", f"role/spotline/{team}-training"),  # its own role
        ("expectedDuration: 8h", f"expectedDuration: {hours}h"),
        ("priority: 100", f"priority: {priority}"),
        ('deadline: "2026-12-02T06:00:00Z"', "# no deadline"),
        (f"{team}-checkpoints/ranker-v2/", f"{team}-checkpoints/{name}/"),
    )
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def _scenario(folder: Path, body: str) -> Path:
    path = folder / "fleet.yaml"
    path.write_text(f'name: fleet\nstart: "2026-12-01T00:00:00Z"\nspot: {{startDelay: 5m}}\n{body}')
    return path


def _rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _busy_at_every_change(summary: dict[str, Any]) -> list[int]:
    """Instances held by the whole queue at every moment any team's holding changed."""
    steps = capacity_by_team(summary["executions"], summary["jobs"], summary["virtualEnd"])
    moments = sorted({m for series in steps.values() for m, _ in series})
    held = []
    for moment in moments:
        held.append(sum(next((n for m, n in reversed(series) if m <= moment), 0) for series in steps.values()))
    return held


def test_jobs_beyond_the_queue_capacity_wait_their_turn_and_the_clock_is_shared(tmp_path: Path) -> None:
    first, second = _manifest(tmp_path, "first"), _manifest(tmp_path, "second")
    scenario = _scenario(
        tmp_path, f"manifests: [{first.name}, {second.name}]\nqueue: {{capacity: {{ml.g5.2xlarge: 1}}}}\n"
    )

    summary = run_scenario(load_scenario(scenario))

    runs = summary["executions"]
    assert [run["status"] for run in runs] == ["SUCCEEDED", "SUCCEEDED"]
    ended = [datetime.fromisoformat(run["trainingEndedAt"]) for run in runs]
    # One instance: the second trains after the first, on the same clock (not both from T+0).
    assert ended[1] - ended[0] >= timedelta(hours=2)
    fleet = summary["fleet"]
    assert fleet["jobs"] == 2 and fleet["succeeded"] == 2 and fleet["capacityInstances"] == 1
    assert fleet["queueWaitSeconds"]["max"] >= 2 * HOUR  # the second waited for the first
    assert 0.9 < fleet["capacityUtilization"] <= 1.0
    assert max(_busy_at_every_change(summary)) == 1
    assert fleet["teams"]["search-ranking"]["starvedSeconds"] == 0  # it waited for its own share's job
    assert summary["leftRunning"] == []
    picture = tmp_path / "fleet.png"
    assert draw(summary, picture) == [picture] and picture.read_bytes()[:4] == b"\x89PNG"


def test_a_replay_gives_the_same_json_apart_from_its_wall_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = [_manifest(tmp_path, f"job-{n}", team=team, hours=1) for n, team in enumerate(["team-a", "team-b"] * 2)]
    scenario = _scenario(
        tmp_path,
        "queue: {capacity: {ml.g5.2xlarge: 2}}\nsubmissions:\n"
        + "".join(f"  - {{manifest: {job.name}, at: {n * 10}m}}\n" for n, job in enumerate(jobs)),
    )

    replays = []
    for _ in range(2):  # each as in a fresh process: the stacks started so far seed moto's ids
        monkeypatch.setattr(local_aws, "_STACKS_STARTED", itertools.count())
        replays.append(public_summary(run_scenario(load_scenario(scenario))))

    assert json.dumps(replays[0], sort_keys=True) == json.dumps(replays[1], sort_keys=True)
    assert "wallSeconds" not in replays[0]  # only `main` adds it: the one figure replays do not share
    assert set(replays[0]["fleet"]["teams"]) == {"team-a", "team-b"}
    assert len({run["name"] for run in replays[0]["executions"]}) == 4


def test_repeated_submissions_are_new_versions_with_their_own_deadline_and_checkpoints(tmp_path: Path) -> None:
    job = _manifest(tmp_path, "nightly", hours=1)
    scenario = load_scenario(
        _scenario(
            tmp_path, f"submissions:\n  - {{manifest: {job.name}, at: 1h, every: 6h, count: 3, deadlineAfter: 4h}}\n"
        )
    )
    uploads = uploads_of(scenario)
    assert [u.moment for u in uploads] == [HOUR, 7 * HOUR, 13 * HOUR]
    assert [u.spec.deadline for u in uploads] == [_rfc3339(START + timedelta(hours=h)) for h in (5, 11, 17)]
    assert len({u.spec.checkpoint_s3_uri for u in uploads}) == 3  # a rerun does not resume the last run

    summary = run_scenario(scenario)
    runs = summary["executions"]
    assert len({run["name"] for run in runs}) == 3
    assert [run["deadlineMet"] for run in runs] == [True, True, True]
    assert [run["uploadedAt"] for run in runs] == [_rfc3339(START + timedelta(hours=h)) for h in (1, 7, 13)]
    assert summary["fleet"]["deadlinesMet"] == 3 and summary["leftRunning"] == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("queue: {capacity: 4}\n", r"queue.capacity: must be a mapping, got 4"),
        ("queue: {capacity: {ml.g5.2xlarge: 0}}\n", r"queue.capacity.ml.g5.2xlarge: must be at least 1, got 0"),
        (
            "queue: {capacity: {g5.2xlarge: 1}}\n",
            r"queue.capacity.g5.2xlarge: must be a SageMaker training instance type",
        ),
        (
            "queue: {capacityInstances: 8}\n",
            r"queue.capacityInstances: is replaced by capacity, instances per instance type, as the service "
            r'environment counts them: write capacity: \{"<instance type>": <instances>\}',
        ),
        (
            "teamPolicy: {teams: {vision: {quotaInstances: 2}}}\n",
            r'teamPolicy.teams.vision.quotaInstances: is replaced by quotas, .* write "quotas": \{"<instance type>"',
        ),
        ("submissions: [{manifest: job.yaml, count: 3}]\n", r"submissions\[0\].every: required"),
        ("submissions: [{manifest: job.yaml, evry: 1h}]\n", r"submissions\[0\].evry: unknown field .did you"),
        ("submissions: [{manifest: nowhere.yaml}]\n", r"submissions\[0\].manifest: .*nowhere.yaml does not exist"),
        ("submissions: [{manifest: job.yaml, at: -1h}]\n", r"submissions\[0\].at"),
        ("submissions: []\n", r"submissions: needs at least 1 item"),
    ],
)
def test_bad_fleet_fields_are_named(tmp_path: Path, body: str, message: str) -> None:
    (tmp_path / "job.yaml").write_text(example_text())
    with pytest.raises(ScenarioError, match=message):
        load_scenario(_scenario(tmp_path, body))


def test_a_scenario_without_submissions_or_queue_runs_each_manifest_alone(tmp_path: Path) -> None:
    job = _manifest(tmp_path, "alone")
    assert not load_scenario(_scenario(tmp_path, f"manifests: [{job.name}]\n")).shares_a_queue
    assert load_scenario(
        _scenario(tmp_path, f"manifests: [{job.name}]\nqueue: {{capacity: {{ml.g5.2xlarge: 3}}}}\n")
    ).shares_a_queue


def test_nearest_rank_percentiles() -> None:
    assert percentile([], 95) == 0.0
    assert percentile([5.0], 50) == 5.0
    assert percentile([float(n) for n in range(1, 101)], 95) == 95.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0


def _policy_entry(team: str, *, quota: int, max_priority: int, shared_with: str = "") -> str:
    """`shared_with`: the team this entry shares its image with (an image belongs to one team)."""
    shares = f', shares: {{"{IMAGE}": [{shared_with}]}}' if shared_with else ""
    return (
        f"    {team}: {{instanceFamilies: [g5], maxInstances: 4, maxPriority: {max_priority}, "
        f"quotas: {{ml.g5.2xlarge: {quota}}}, "
        f'roles: ["arn:aws:iam::123456789012:role/spotline/{team}-training"], '
        f'images: ["{IMAGE}"]{shares}, '
        f's3Prefixes: ["s3://{team}-data/", "s3://{team}-models/", "s3://{team}-checkpoints/"]}}\n'
    )


IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:*"


def test_a_deadline_job_meeting_a_queue_full_of_borrowed_capacity_gets_its_share_back(tmp_path: Path) -> None:
    bulk = [_manifest(tmp_path, f"bulk-{n}", team="bulk", priority=10, hours=6) for n in range(2)]
    for path in bulk:
        path.write_text(path.read_text().replace("instanceCount: 1", "instanceCount: 2"))
    urgent = _manifest(tmp_path, "urgent", team="urgent", priority=300, hours=3)
    urgent.write_text(urgent.read_text().replace("instanceCount: 1", "instanceCount: 2"))
    scenario = _scenario(
        tmp_path,
        "queue: {capacity: {ml.g5.2xlarge: 4}}\nsubmissions:\n"
        + "".join(f"  - {{manifest: {path.name}, at: 0h}}\n" for path in bulk)
        + f"  - {{manifest: {urgent.name}, at: 1h, deadlineAfter: 4h}}\n"
        + "teamPolicy:\n  teams:\n"
        + _policy_entry("bulk", quota=1, max_priority=50, shared_with="urgent")
        + _policy_entry("urgent", quota=3, max_priority=500),
    )

    summary = run_scenario(load_scenario(scenario))

    assert [run["status"] for run in summary["executions"]] == ["SUCCEEDED"] * 3
    (deadline_run,) = [run for run in summary["executions"] if run["team"] == "urgent"]
    assert deadline_run["deadlineMet"] is True
    fleet = summary["fleet"]
    assert fleet["preemptions"] >= 1  # the borrowed capacity came back through preemption
    assert fleet["teams"]["urgent"]["queueWaitP95Seconds"] < 1800
    assert max(_busy_at_every_change(summary)) <= 4  # capacity is never exceeded
    assert {team: f["starvedSeconds"] for team, f in fleet["teams"].items()} == {"bulk": 0, "urgent": 0}
    assert summary["leftRunning"] == []
    for run in summary["executions"]:  # preempted attempts are billed, and their lost work counted
        assert_reconciled(run)


def test_quotas_admit_borrow_and_preempt_per_instance_type(tmp_path: Path) -> None:
    """Two instance types, two teams: nlp's quota names ml.p4d.24xlarge only, so its ml.g5.2xlarge
    job is refused by name (it would wait forever) while vision's g5 jobs run; nlp's second p4d job
    borrows vision's idle p4d and gives it back by preemption when vision's p4d job comes, without
    touching a g5 job; no type's capacity is ever exceeded."""
    p4d = "instanceType: ml.p4d.24xlarge"
    jobs = {
        "nlp-a": _manifest(tmp_path, "nlp-a", team="nlp", priority=10, hours=4),
        "nlp-b": _manifest(tmp_path, "nlp-b", team="nlp", priority=10, hours=4),
        "nlp-g5": _manifest(tmp_path, "nlp-g5", team="nlp", priority=10, hours=1),
        "vision-g5": _manifest(tmp_path, "vision-g5", team="vision", priority=100, hours=3),
        "vision-p4d": _manifest(tmp_path, "vision-p4d", team="vision", priority=100, hours=2),
    }
    for name in ("nlp-a", "nlp-b", "vision-p4d"):
        jobs[name].write_text(jobs[name].read_text().replace("instanceType: ml.g5.2xlarge", p4d))
    jobs["vision-g5"].write_text(jobs["vision-g5"].read_text().replace("instanceCount: 1", "instanceCount: 2"))
    entry = (
        "    {team}: {{instanceFamilies: [g5, p4d], maxInstances: 4, maxPriority: 500, quotas: {quotas}, "
        'roles: ["arn:aws:iam::123456789012:role/spotline/{team}-training"], '
        'images: ["123456789012.dkr.ecr.us-east-1.amazonaws.com/ranker:*"]{shares}, '
        's3Prefixes: ["s3://{team}-data/", "s3://{team}-models/", "s3://{team}-checkpoints/"]}}\n'
    )
    scenario = _scenario(
        tmp_path,
        "queue: {capacity: {ml.g5.2xlarge: 2, ml.p4d.24xlarge: 2}}\nsubmissions:\n"
        + "".join(f"  - {{manifest: {jobs[n].name}, at: 0h}}\n" for n in ("nlp-a", "nlp-b", "vision-g5"))
        + "".join(f"  - {{manifest: {jobs[n].name}, at: 1h}}\n" for n in ("nlp-g5", "vision-p4d"))
        + "teamPolicy:\n  teams:\n"
        + entry.format(team="nlp", quotas="{ml.p4d.24xlarge: 1}", shares=f', shares: {{"{IMAGE}": [vision]}}')
        + entry.format(team="vision", quotas="{ml.g5.2xlarge: 2, ml.p4d.24xlarge: 1}", shares=""),
    )

    summary = run_scenario(load_scenario(scenario))

    runs = {run["job"]: run for run in summary["executions"]}
    assert {name: run["status"] for name, run in runs.items()} == {
        "nlp-a": "SUCCEEDED",
        "nlp-b": "SUCCEEDED",
        "nlp-g5": "FAILED",
        "vision-g5": "SUCCEEDED",
        "vision-p4d": "SUCCEEDED",
    }
    refused = runs["nlp-g5"]
    assert refused["jobIds"] == []  # never queued
    assert refused["error"] == "ResourceValidationFailed"
    assert "team nlp's quota share has no capacity limit for ml.g5.2xlarge" in json.dumps(refused, default=str)
    (preempted,) = [job for job in summary["jobs"] if job.preemptions]
    (owner,) = [name for name, run in runs.items() if preempted.job_id in run["jobIds"]]
    assert owner in ("nlp-a", "nlp-b")  # an nlp p4d job beyond nlp's quota, never a g5 job
    fleet = summary["fleet"]
    assert fleet["preemptions"] == 1
    assert fleet["capacityInstances"] == 4
    kinds = fleet["instanceTypes"]
    assert set(kinds) == {"ml.g5.2xlarge", "ml.p4d.24xlarge"}
    assert all(k["peakInstances"] <= k["capacityInstances"] for k in kinds.values()), kinds
    assert kinds["ml.p4d.24xlarge"]["peakInstances"] == 2 and kinds["ml.g5.2xlarge"]["peakInstances"] == 2
    assert set(fleet["teams"]["nlp"]["instanceSecondsByType"]) == {"ml.p4d.24xlarge"}
    assert set(fleet["teams"]["vision"]["instanceSecondsByType"]) == {"ml.g5.2xlarge", "ml.p4d.24xlarge"}
    assert {team: f["starvedSeconds"] for team, f in fleet["teams"].items()} == {"nlp": 0, "vision": 0}
    assert summary["leftRunning"] == []


def test_a_team_under_its_quota_for_a_type_gets_it_back_while_its_job_of_another_type_waits(tmp_path: Path) -> None:
    """Issue 46: two teams with g5 and p4d quotas, one borrowing. nlp fills the queue's g5 (its own
    one and two of vision's idle ones) and holds its own p4d. Vision's 2-instance p4d job must borrow
    nlp's p4d: it waits. Vision's g5 job, uploaded after it, is within vision's g5 quota (vision
    holds 0 of its 2): it gets the next g5, by preempting one of nlp's borrowing jobs, rather than
    waiting behind vision's p4d job until nlp's p4d job ends 4 h in (starved about 3 h before)."""
    p4d = "instanceType: ml.p4d.24xlarge"
    jobs = {
        "nlp-p4d": _manifest(tmp_path, "nlp-p4d", team="nlp", priority=10, hours=4),
        **{f"nlp-g5-{n}": _manifest(tmp_path, f"nlp-g5-{n}", team="nlp", priority=10, hours=4) for n in range(3)},
        "vision-p4d": _manifest(tmp_path, "vision-p4d", team="vision", priority=100, hours=1),
        "vision-g5": _manifest(tmp_path, "vision-g5", team="vision", priority=100, hours=1),
    }
    for name in ("nlp-p4d", "vision-p4d"):
        jobs[name].write_text(jobs[name].read_text().replace("instanceType: ml.g5.2xlarge", p4d))
    jobs["vision-p4d"].write_text(jobs["vision-p4d"].read_text().replace("instanceCount: 1", "instanceCount: 2"))
    entry = (
        "    {team}: {{instanceFamilies: [g5, p4d], maxInstances: 4, maxPriority: 500, quotas: {quotas}, "
        'roles: ["arn:aws:iam::123456789012:role/spotline/{team}-training"], '
        f'images: ["{IMAGE}"]{{shares}}, '
        's3Prefixes: ["s3://{team}-data/", "s3://{team}-models/", "s3://{team}-checkpoints/"]}}\n'
    )
    scenario = _scenario(
        tmp_path,
        "queue: {capacity: {ml.g5.2xlarge: 3, ml.p4d.24xlarge: 2}}\nsubmissions:\n"
        + "".join(f"  - {{manifest: {jobs[n].name}, at: 0h}}\n" for n in jobs if n.startswith("nlp-"))
        + f"  - {{manifest: {jobs['vision-p4d'].name}, at: 30m}}\n"
        + f"  - {{manifest: {jobs['vision-g5'].name}, at: 1h}}\n"
        + "teamPolicy:\n  teams:\n"
        + entry.format(
            team="nlp", quotas="{ml.g5.2xlarge: 1, ml.p4d.24xlarge: 1}", shares=f', shares: {{"{IMAGE}": [vision]}}'
        )
        + entry.format(team="vision", quotas="{ml.g5.2xlarge: 2, ml.p4d.24xlarge: 1}", shares=""),
    )

    summary = run_scenario(load_scenario(scenario))

    runs = {run["job"]: run for run in summary["executions"]}
    assert {name: run["status"] for name, run in runs.items()} == dict.fromkeys(jobs, "SUCCEEDED")
    fleet = summary["fleet"]
    assert {team: f["starvedSeconds"] for team, f in fleet["teams"].items()} == {"nlp": 0, "vision": 0}
    by_id = {job.job_id: job for job in summary["jobs"]}
    (vision_g5,) = [by_id[j] for j in runs["vision-g5"]["jobIds"]]
    # Uploaded at 1h: the scheduler takes it up 30 s after submission and the preempted nlp attempt
    # holds its instance 30 s more while it stops, so it waits 60 s (by hand: 30 + 30), not ~3 h.
    assert queue_wait_seconds(vision_g5, summary["virtualEnd"]) == 60
    preempted = [job for job in summary["jobs"] if job.preemptions]
    assert len(preempted) == 1 and preempted[0].job_id in {
        j for n in ("nlp-g5-0", "nlp-g5-1", "nlp-g5-2") for j in runs[n]["jobIds"]
    }  # a borrowing nlp g5 job, never nlp's p4d job on its own quota
    kinds = fleet["instanceTypes"]
    assert all(k["peakInstances"] <= k["capacityInstances"] for k in kinds.values()), kinds
    assert summary["leftRunning"] == []


def test_instance_hours_held_while_sagemaker_waits_for_spot_are_shown_apart_from_running_ones(tmp_path: Path) -> None:
    """Issue 46: Batch holds a job's capacity from SCHEDULED while SageMaker waits for spot with no
    instance running; the fleet table showed that as the team's "instance-hours", undefined. Now
    held and running instance-hours are two figures, each defined under the table."""
    wide = _manifest(tmp_path, "wide", hours=2)
    wide.write_text(wide.read_text().replace("instanceCount: 1", "instanceCount: 2"))
    scenario = _scenario(tmp_path, f"manifests: [{wide.name}]\nqueue: {{capacity: {{ml.g5.2xlarge: 2}}}}\n")
    scenario.write_text(scenario.read_text().replace("spot: {startDelay: 5m}", GAP_FIRST_HOUR))

    summary = run_scenario(load_scenario(scenario))

    (team,) = summary["fleet"]["teams"].values()
    # By hand: uploaded at 0, Batch schedules it 30 s later (00:00:30) and holds 2 instances from
    # then; no spot until 01:00, then the 5 min start (its last 60 s downloading), 2 h of training
    # and 60 s of upload: it ends at 03:06:00. Held: 2 x (03:06:00 - 00:00:30) = 2 x 11,130 s.
    assert team["instanceSeconds"] == 22_260
    # Running: 2 x (60 s downloading + 7,200 s training + 60 s uploading) = 2 x 7,320 s.
    assert team["runningInstanceSeconds"] == 14_640
    text = render_fleet(summary["fleet"])
    (row,) = [line for line in text if line.strip().startswith("search-ranking")]
    assert row.split()[2:4] == ["6.2", "4.1"]  # 22,260 s and 14,640 s in hours
    assert any(line.strip().startswith("held inst-h: instance-hours of queue capacity Batch held") for line in text)
    assert any(line.strip().startswith("running inst-h: instance-hours the instances ran") for line in text)


GAP_FIRST_HOUR = "spot: {startDelay: 5m, capacityGaps: [{from: 0h, to: 1h}]}"
