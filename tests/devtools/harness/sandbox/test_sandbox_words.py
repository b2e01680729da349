"""The words of a run come from its facts (issue 46): each move told as what it was (another
instance type, a training plan, another region, on-demand) with its time, in the sandbox's output,
the explain story and the picture. The expected figures are worked out by hand from each
scenario's inputs in the comments, never by calling Spotline's code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from spotline_dev.explain import render_text as render_story
from spotline_dev.explain.plot import run_picture
from spotline_dev.harness.sandbox.replay import load_scenario, render_text, run_scenario

SCENARIOS = ROOT / "examples" / "scenarios"


def _replayed(name: str) -> tuple[dict[str, Any], str, str]:
    """(the run, the sandbox's text, the explain story's text) of a one-manifest example scenario."""
    summary = run_scenario(load_scenario(SCENARIOS / f"{name}.yaml"))
    (run,) = summary["executions"]
    return run, render_text(summary, 0.0), render_story(run["story"])


@pytest.fixture(scope="module")
def onto_a_plan() -> tuple[dict[str, Any], str, str]:
    return _replayed("falls-back-onto-a-plan")


@pytest.fixture(scope="module")
def plan_ends() -> tuple[dict[str, Any], str, str]:
    return _replayed("plan-ends-mid-run")


@pytest.fixture(scope="module")
def on_an_alternative() -> tuple[dict[str, Any], str, str]:
    return _replayed("spot-on-an-alternative")


@pytest.fixture(scope="module")
def across_regions() -> tuple[dict[str, Any], str, str]:
    return _replayed("spot-in-another-region")


# The deadline policy of deadline-with-a-plan.yaml (deadline 16:00Z, expectedDuration 6h): on-demand
# needs 6h of work + 20m restart + 18m margin (5 % of 6h) = 6h38m, so the last safe moment is
# 16:00 - 6h38m = 09:22Z (T+03:22 from the 06:00Z start): the job moves onto the plan then.
PLAN_MOVE_AT = "2026-12-01T09:22:00Z"


def test_a_finished_run_on_a_training_plan_says_it_moved_to_the_plan_and_claims_no_saving_for_prepaid_time(
    onto_a_plan: tuple[dict[str, Any], str, str],
) -> None:
    run, text, story = onto_a_plan
    moved = "training plan search-p4d-december (ml.p4d.24xlarge)"
    assert f"          moved T+03:22 to {moved} (after attempt 1)" in text
    assert f"stopped by Spotline to move to {moved} at {PLAN_MOVE_AT}" in story
    assert "move to on-demand" not in story and "stayed on spot" not in story
    assert f"  On-demand fallback  no: moved to {moved} at {PLAN_MOVE_AT}, never to on-demand" in story
    # The plan's job bills 60 s of download + 6h of work (expectedDuration) + 60 s of upload = 6h2m,
    # all of it on the plan. On-demand the same 21,720 s at ml.p4d.24xlarge's $25.2512883/h (us-east-1)
    # = $152.35. The run finished: it claims no saving because the plan's fee was paid up front.
    claimed = "$152.35 all on-demand on ml.p4d.24xlarge; no saving claimed: 6h2m ran on a training plan, paid up front"
    assert f"cost $0.00 vs {claimed}" in text
    assert claimed in story
    assert "did not finish" not in text + story
    picture = run_picture(run["history"])
    assert ("switch", "move to a training plan: deadline at risk") in [(d.kind, d.label) for d in picture.decisions]
    # never spot, never on-demand
    assert {s.kind for s in picture.segments} == {"waiting for capacity", "training plan"}


def test_a_run_that_moved_onto_a_plan_then_to_on_demand_gives_each_move_its_own_time(
    plan_ends: tuple[dict[str, Any], str, str],
) -> None:
    run, text, story = plan_ends
    moved = "training plan search-p4d-morning (ml.p4d.24xlarge)"
    # The plan runs 06:00Z to 16:30Z; SageMaker ends its instances 30 minutes before, at 16:00Z.
    # The job's checks come every 15 minutes from 09:53Z: the first after 16:00Z is 16:08Z (T+10:08).
    assert f"          moved T+03:22 to {moved} (after attempt 1)" in text
    assert "          moved T+10:08 to on-demand (after attempt 2)" in text
    attempts = [a.ending for a in run["story"].attempts]
    assert attempts[:2] == [
        f"stopped by Spotline to move to {moved} at {PLAN_MOVE_AT}",
        "stopped by Spotline to move to on-demand at 2026-12-01T16:08:00Z",
    ]
    # The fallback to on-demand is the second move, not the first (the plan's)
    assert "  On-demand fallback  yes, at 2026-12-01T16:08:00Z: the training plan's reserved capacity ended" in story
    assert "no saving: the job did not finish" not in text + story  # it finished, late
    labels = [d.label for d in run_picture(run["history"]).decisions]
    assert labels[1] == "move to a training plan: deadline at risk"
    assert labels[3].startswith("switch to on-demand: the training plan")


def test_a_move_to_another_instance_type_is_told_as_one(on_an_alternative: tuple[dict[str, Any], str, str]) -> None:
    run, text, story = on_an_alternative
    # No spot ml.g5.2xlarge all day; the job moves after 36m without capacity. Its checks come every
    # 15 minutes from 06:01Z: the first after 06:36Z is 06:46Z (T+00:46).
    moved = "another instance type (spot on ml.g6.2xlarge)"
    assert f"          moved T+00:46 to {moved} (after attempt 1)" in text
    assert f"stopped by Spotline to move to {moved} at 2026-12-01T06:46:00Z" in story
    assert "to move to on-demand" not in story
    decisions = [d.label for d in run_picture(run["history"]).decisions]
    assert decisions[1].startswith("move to another instance type: no spot capacity")


def test_a_move_to_another_region_is_told_as_one(across_regions: tuple[dict[str, Any], str, str]) -> None:
    run, text, story = across_regions
    # us-east-1's spot is interrupted at 1h30m (07:30Z) and has none after: the job waits there a
    # restart plus the copy (one interruption is no reason to move) and moves at the next check.
    moved = "another region (spot in us-west-2)"
    assert f"          moved T+01:45 to {moved} (after attempt 1)" in text
    assert f"stopped by Spotline to move to {moved} at 2026-12-01T07:45" in story
    assert "to move to on-demand" not in story
    assert [d.label for d in run_picture(run["history"]).decisions][1].startswith("move to another region:")


# --- "billed": per instance, a training plan's prepaid time apart ------------------------------

BILLED = "billed = the time SageMaker charges at the hourly rate, per instance (BillableTimeInSeconds"


@pytest.fixture(scope="module")
def two_instances() -> tuple[dict[str, Any], str, str]:
    return _replayed("framework-code-and-warm-pool")


def test_billed_leaves_out_the_prepaid_plan_time_and_shows_it_apart(plan_ends: tuple[dict[str, Any], str, str]) -> None:
    _, text, story = plan_ends
    # The plan's job is created 30 s after its submission at 09:22Z (Batch's dispatch), starts after
    # the 8m start delay and is billed from its download (the delay's last 60 s): from 09:29:30Z. The
    # plan's instances end at 16:00Z: 6h30m30s on the plan, prepaid. It trained from 09:30:30Z to
    # 16:00Z; its last checkpoint (every 15 minutes) came 6h15m in, so 8h - 6h15m = 1h45m is left for
    # on-demand, billed 60 s of download + 1h45m + 60 s of upload = 1h47m (6,420 s), the run's only
    # billed time: at ml.p4d.24xlarge's $25.2512883/h, 6,420 s cost $45.03.
    figures = "billed 1h47m per instance, plus 6h30m30s on a training plan (prepaid)"
    assert f"trained 8h17m30s, {figures}, lost work 14m30s; cost $45.03 vs " in text
    assert f"  Cost                $45.03: 8h17m30s of training, {figures}; " in story
    assert "billed 8h17m30s" not in text and "billed as 8h17m30s" not in story
    assert BILLED in text and BILLED in story  # "billed" is explained where it is printed


def test_billed_is_per_instance_and_says_what_all_instances_were_charged(
    two_instances: tuple[dict[str, Any], str, str],
) -> None:
    _, text, story = two_instances
    # ml.g5.2xlarge x2 on on-demand, 40m of work (expectedDuration): each instance bills 60 s of
    # download + 40m + 60 s of upload = 42m; the two are charged 84m = 1h24m, at $1.515/h each:
    # 2 x 0.7 h x $1.515 = $2.12.
    figures = "billed 42m per instance x2 = 1h24m"
    assert f"trained 42m, {figures}, lost work 0s; cost $2.12 vs $2.12 all on-demand" in text
    assert f"42m of training, {figures}; $2.12 all on-demand" in story
    assert BILLED in text


# --- a region move's reason cites what was observed ---------------------------------------------


def test_a_region_move_waits_out_one_interruption_cites_what_it_saw_and_calls_the_other_regions_figures_priors(
    across_regions: tuple[dict[str, Any], str, str],
) -> None:
    run, text, story = across_regions
    (move,) = run["story"].moves
    # us-east-1's spot attempt trains from 06:16Z and is checked every 15 minutes until the
    # interruption at 07:30Z: sightings at 06:16, 06:31, 06:46, 07:01, 07:16 (spot) and 07:30 (the
    # interruption). One interruption is no reason to move: the attempt waits a restart plus the
    # copy there, and the check at 07:45 finds it still without spot (a 7th sighting): 1
    # interruption in 1h29m, 5 of 7 checks with spot. Spot hours: 5/7 x 89 min = 1.06 h, so
    # (1 + 1) / (1.06 + 4) = 0.40 interruptions per spot hour (shrunk toward the 0.25/h prior
    # weighted as 4 spot hours); the mean outage is 3600 s x (2/7) / (0.40 x 5/7) = 61 min.
    # us-west-2 was never observed: its wait (20 min) and rate (0.25 per spot hour) are the
    # defaults, said to be priors. Its estimate: a 20 min restart + the 20 min wait + the next hour
    # of work x 0.25 x (20 + 7.5) min = 47 min, with the copy of a checkpoint of a few bytes.
    assert move.reason.startswith(
        "waited 13m45s without spot in us-east-1; spot last seen there at 07:16: waits here for spot capacity "
        "(about 61 min more), seen: 1 interruption in 1h29m, 5 of 7 checks with spot, so 0.40 interruptions per "
        "spot hour (with a 4 h prior); the spot attempt moves to us-west-2: about 47 min lost to restarts and "
        "waits (not yet observed: a 20 min wait assumed (prior), no record: 0.25 interruptions per spot hour "
        "assumed (prior); checkpoint copy from us-east-1)"
    )
    assert "no spot capacity in us-east-1" not in text + story  # nothing observed that


# --- scoring: what the night was sized with, and no `None` where a fact is missing ---------------


def test_a_scoring_night_that_was_not_planned_says_so_and_where_its_data_came_from_never_none(tmp_path: Path) -> None:
    manifest = ROOT / "examples" / "scoring" / "scores-with-its-own-model.yaml"
    # The same night with the team out of the registry: PlanScoringRun rejects it, no window is planned.
    rejected = tmp_path / "rejected.yaml"
    rejected.write_text(
        f'name: rejected\nstart: "2026-12-04T23:55:00Z"\nmanifests: [{manifest}]\nteamPolicy: {{teams: {{}}}}\n'
        "transform: {recordsPerSecond: 1500}\n"
    )
    summary = run_scenario(load_scenario(rejected))
    text, story = render_text(summary, 0.0), render_story(summary["executions"][0]["story"])
    # Its deadline is the manifest's, said as such: never "no window" for a job that has a deadline.
    assert (
        "  result: FAILED (ScoringManifestRejected); deadline 2026-12-05T03:00:00Z not reached: the run was not planned"
        in text
    )
    assert "  Window      not planned" in story
    # Uploaded without dependsOn: its data was ready when the upload arrived (the scenario's start).
    assert "  Data ready  2026-12-04T23:55:00Z (the upload: no dataset event)" in story
    assert "None" not in text + story
