"""`spotline sandbox --explain` in text: each execution's timeline is printed once."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import EXAMPLE_MANIFEST, ROOT
from spotline_dev.cli.entry import main as cli_main
from spotline_dev.exit_codes import EXIT_NOT_SUCCEEDED, EXIT_OK

STOPPED = ROOT / "examples" / "scenarios" / "stopped-by-on-call.yaml"
SUBMITTED = "SubmitTrainingJob    attempt 1 on spot:"  # a timeline line of every run of the example


def test_explain_after_the_runs_leaves_out_the_timeline_they_just_printed(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["sandbox", "--scenario", str(STOPPED), "--explain"]) == EXIT_NOT_SUCCEEDED
    out = capsys.readouterr().out
    runs, story = out.split("\nExplain (", 1)
    assert runs.count(SUBMITTED) == 1  # the timeline, next to the run's result
    assert SUBMITTED not in story and "\nTimeline (" not in story
    assert "the timelines are the ones above" in story
    for section in ("What failed", "Next step", "Training", "Links"):  # what the runs' output does not tell
        assert f"\n{section}\n" in story, section


def test_a_fleet_prints_one_line_per_run_so_its_stories_keep_their_timelines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(EXAMPLE_MANIFEST.read_text().replace("expectedDuration: 8h", "expectedDuration: 1h"))
    scenario = tmp_path / "fleet.yaml"
    scenario.write_text(
        'name: fleet\nstart: "2026-12-01T00:00:00Z"\nmanifests: [job.yaml]\nqueue: {capacity: {ml.g5.2xlarge: 1}}\n'
    )
    assert cli_main(["sandbox", "--scenario", str(scenario), "--explain"]) == EXIT_OK
    runs, story = capsys.readouterr().out.split("\nExplain (", 1)
    assert SUBMITTED not in runs
    assert story.count(SUBMITTED) == 1 and "\nTimeline (" in story
