"""Every alert the code sends has a runbook section that says what it means, what Spotline did, what
to check and what to do, and docs/runbook.md's index of them is a fresh generation
(spotline_dev.alert_index). A new alert without a section fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotline.core.billing.outcome import NEXT_STEPS
from spotline.core.capacity.capacity_moves import MOVES
from spotline_dev.alert_index import (
    BEGIN,
    END,
    RUNBOOK,
    AlertNameUnread,
    alert_names,
    anchor,
    main,
    problems,
    refreshed,
    sent_by_state_machines,
    sent_in_source,
)


def test_every_alert_the_code_sends_has_a_section_saying_what_it_means_did_check_and_do() -> None:
    names = alert_names()
    assert problems(RUNBOOK.read_text(), names) == []


def test_the_names_come_from_every_place_that_sends_one() -> None:
    names = set(alert_names())
    assert {move.kind for move in MOVES.values()} <= names
    assert set(NEXT_STEPS) <= names
    # Literals in the functions and the layer, and the state machine's own sns:publish task.
    assert {"DeadlineAtRisk", "PriorityRaised", "WindowAtRisk", "ScoringFailed"} <= names
    assert {"JobStoppedAtExecutionEnd", "OrphanedJobStopped", "ForeignJobStopped", "OutcomeNotRecorded"} <= names


def test_the_runbook_s_index_is_a_fresh_generation() -> None:
    assert main(["--check"]) == 0


def test_a_new_alert_in_the_source_is_found_and_without_a_section_it_fails(tmp_path: Path) -> None:
    source = tmp_path / "app.py"
    source.write_text(
        "def handler(topic):\n"
        "    try_publish_alert(topic, kind='QuotaNearlyUsed', team='t', job='j')\n"
        "    notify(spec, run_id, 'NightSkipped', 'why')\n"
        "    notify(spec, run_id, kind, 'why')\n"
    )
    found = sent_in_source([source])
    assert set(found) == {"QuotaNearlyUsed", "NightSkipped"}
    page = RUNBOOK.read_text()
    assert problems(page, ["QuotaNearlyUsed"]) == [
        "QuotaNearlyUsed: no section (a heading '## QuotaNearlyUsed' or one ending in '(`QuotaNearlyUsed`)')"
    ]
    with pytest.raises(ValueError, match="QuotaNearlyUsed: no section"):
        refreshed(page, [*alert_names(), "QuotaNearlyUsed"])


def test_a_name_the_scan_cannot_read_stops_it(tmp_path: Path) -> None:
    source = tmp_path / "app.py"
    source.write_text("def handler(topic, event):\n    publish_alert(topic, kind=event['kind'], team='t')\n")
    with pytest.raises(AlertNameUnread, match=r"app.py:2: kind=event\['kind'\]"):
        sent_in_source([source])


def test_a_state_machine_s_alert_is_read_from_its_subject(tmp_path: Path) -> None:
    (tmp_path / "m.asl.json").write_text(
        '{"States": {"Tell": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish",'
        ' "Parameters": {"Subject.$": "States.Format(\'[Spotline] NightLost: {}\', $.team)"}}}}'
    )
    assert sent_by_state_machines(tmp_path) == {"NightLost": {"m.asl.json"}}


def test_a_section_missing_a_part_is_named(tmp_path: Path) -> None:
    page = RUNBOOK.read_text()
    start = page.index("### Alert: priority raised (`PriorityRaised`)")
    cut = page[:start] + page[start:].replace("**Spotline did.**", "**Spotline.**", 1)
    assert problems(cut, ["PriorityRaised"]) == [
        "PriorityRaised: its section 'Alert: priority raised (`PriorityRaised`)' lacks **Spotline did.**"
    ]


def test_an_index_row_links_to_its_section_by_the_anchor_mkdocs_gives_it() -> None:
    page = RUNBOOK.read_text()
    index = page[page.index(BEGIN) : page.index(END)]
    assert anchor("Alert: training job stopped at an execution's end (`JobStoppedAtExecutionEnd`)") == (
        "alert-training-job-stopped-at-an-executions-end-jobstoppedatexecutionend"
    )
    assert "[`MovedToAnotherZone`](#alert-moved-to-another-zone-movedtoanotherzone)" in index
    assert "[`TrainingFailed`](#trainingfailed)" in index
