"""The stack commands for scoring runs (`kind: ScoringJob`), on the local stack as a deployed one:
`submit` starts (or registers) one, `runs` and `status` show its night, `explain --stack` finds it
on the scoring state machine and tells its story, and `cancel` stops it with its transform jobs."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from devtools.cli.operate.printed import printed_json, printed_lines
from spotline_dev.cli.entry import main
from spotline_dev.exit_codes import EXIT_INVALID, EXIT_OK
from spotline_dev.harness.local.handles import LocalStack
from spotline_dev.harness.local.stack import STACK
from spotline_dev.harness.local.template import PROJECT_ROOT

ON_STACK = ["--stack", STACK]
SCORING = PROJECT_ROOT / "examples" / "scoring"


def test_a_submitted_scoring_job_is_followed_to_its_night_and_shown_by_runs_status_and_explain(
    deployed_scoring: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = SCORING / "scores-on-upload.yaml"
    assert main(["submit", str(manifest), *ON_STACK, "--wait", "--output", "json"]) == EXIT_OK
    submitted = printed_json(capsys.readouterr().out)
    assert submitted["kind"] == "ScoringJob"  # type: ignore[index]
    assert ":execution:spotline-local-scoring-run:" in submitted["executionArn"]  # type: ignore[index]
    run = submitted["run"]  # type: ignore[index]
    assert (run["kind"], run["status"], run["state"]) == ("ScoringJob", "SUCCEEDED", "scored, window met")
    assert (run["team"], run["job"], run["deadline"]) == ("media-recs", "backfill-scores", "2026-12-05T03:00:00Z")
    night = run["scoring"]
    assert (night["instances"], night["records"], night["windowMet"]) == (5, 40_000_000, True)
    assert night["shardsScored"] == night["shards"] and night["measuredRecordsPerSecond"] == 1500
    # The window's end less the finish, as RecordScoringRun measured it (to the second).
    assert abs(night["marginSeconds"] - (time_of(run["deadline"]) - time_of(night["finishedAt"]))) <= 1
    name = submitted["executionName"]  # type: ignore[index]

    assert main(["runs", *ON_STACK, "--output", "json"]) == EXIT_OK
    (listed,) = printed_json(capsys.readouterr().out)  # type: ignore[misc]
    assert (listed["name"], listed["kind"], listed["capacity"]) == (name, "ScoringJob", "5 instance(s)")
    assert main(["runs", *ON_STACK]) == EXIT_OK
    row = printed_lines(capsys.readouterr().out)[1].split()
    assert row[:6] == [name, "media-recs", "backfill-scores", "scored,", "window", "met"]

    assert main(["status", name, *ON_STACK]) == EXIT_OK
    status = printed_lines(capsys.readouterr().out)
    assert status[0] == f"{name}  SUCCEEDED: scored, window met"
    assert status[2].startswith("  Window      2026-12-05T03:00:00Z: met (finished 2026-12-05T0")
    # 5 instances: each scores 6 shards in turn, 6 start-ups of 8 min (tests/layer/core/scoring/test_scoring_plan.py)
    sized = "  Sized       5 ml.c5.2xlarge instance(s) at 1,500 records/s each (probe), 30% headroom, each instance 6"
    assert any(line.startswith(sized) for line in status), status

    assert main(["explain", name, *ON_STACK]) == EXIT_OK
    story = printed_lines(capsys.readouterr().out)
    assert story[0].startswith(f"== {name}: SUCCEEDED: 40,000,000 records scored; window 2026-12-05T03:00:00Z: met")
    assert "Scoring" in story and "Training" not in story
    assert any(line.startswith("  PlanScoringRun") or "PlanScoringRun" in line for line in story)
    assert main(["explain", name, *ON_STACK, "--output", "json"]) == EXIT_OK
    explained = printed_json(capsys.readouterr().out)
    assert (explained["kind"], explained["deadlineMet"]) == ("ScoringJob", True)  # type: ignore[index]
    assert explained["scoring"]["instances"] == 5  # type: ignore[index]


def test_cancel_stops_a_scoring_run_and_its_transform_jobs(
    deployed_scoring: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = deployed_scoring
    assert main(["submit", str(SCORING / "scores-on-upload.yaml"), *ON_STACK, "--output", "json"]) == EXIT_OK
    name = str(printed_json(capsys.readouterr().out)["executionName"])  # type: ignore[index]
    stack.deliver_events()
    deadline = time.monotonic() + 60
    while stack.clock.participants < 1:  # the execution's thread has joined the clock
        assert time.monotonic() < deadline, "the execution never started"
        time.sleep(0.01)
    # On-call takes part in the clock after the execution: when on-call is awake, the execution
    # sleeps in a Wait state (the clock wakes them in turn), as a person would find it.
    with stack.clock.participating("on-call"):
        while sum(1 for j in stack.standin.transforms.jobs.values() if j.status(now(stack)) == "InProgress") < 4:
            assert time.monotonic() < deadline, "the fleet never started"
            stack.clock.sleep(60, key="on-call")
        assert main(["status", name, *ON_STACK, "--output", "json"]) == EXIT_OK
        running = printed_json(capsys.readouterr().out)
        assert running["status"] == "RUNNING" and running["state"].startswith("scoring: ")  # type: ignore[index]
        assert main(["status", name, *ON_STACK]) == EXIT_OK
        window = printed_lines(capsys.readouterr().out)[2]
        assert window.startswith("  Window      2026-12-05T03:00:00Z: projected to finish 2026-12-05T0"), window
        assert window.endswith("before it closes)")
        assert main(["cancel", name, *ON_STACK, "--yes"]) == EXIT_OK
    lines = printed_lines(capsys.readouterr().out)
    assert lines[0] == f"Stopped execution {name} (it was RUNNING; it ends ABORTED)"
    stopped = [line.removeprefix("Stopped transform job ") for line in lines[1:]]
    assert len(stopped) >= 4 and all(job.startswith("backfill-scores-") for job in stopped)
    assert not [j for j in stack.standin.transforms.jobs.values() if j.status(now(stack)) == "InProgress"]

    assert main(["cancel", name, *ON_STACK, "--output", "json"]) == EXIT_OK  # again: nothing left to stop
    again = printed_json(capsys.readouterr().out)
    assert (again["kind"], again["was"], again["stoppedTransformJobs"]) == ("ScoringJob", "ABORTED", [])  # type: ignore[index]


def test_a_scoring_job_with_depends_on_is_registered_and_submit_says_what_starts_it(
    deployed_scoring: LocalStack, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["submit", str(SCORING / "nightly-scores.yaml"), *ON_STACK, "--wait"]) == EXIT_OK
    out = printed_lines(capsys.readouterr().out)
    assert out[1] == "Registered scoring job: each Dataset Ready event of media-pairs-nightly starts a night"
    (registered,) = deployed_scoring.deliver_events()
    assert registered["status"] == "registered"


def test_submit_refuses_a_scoring_job_the_team_may_not_run_naming_the_field(
    deployed_scoring: LocalStack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = tmp_path / "too-big.yaml"
    text = (SCORING / "scores-on-upload.yaml").read_text()
    manifest.write_text(text.replace("maxInstances: 12", "maxInstances: 40"))
    assert main(["submit", str(manifest), *ON_STACK]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert f"{manifest}: spec.resources.maxInstances: 40 is more than team media-recs may use at once (12)" in err
    listed = deployed_scoring.client("s3").list_objects_v2(Bucket=deployed_scoring.bucket, Prefix="manifests/")
    assert listed.get("KeyCount") == 0  # nothing uploaded


def now(stack: LocalStack) -> float:
    return stack.clock.now().timestamp()


def time_of(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp())
