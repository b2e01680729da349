"""Each Task's ResultSelector is built from its section's keys, declared once in
spotline_dev.asl.sections."""

from __future__ import annotations

from spotline_dev.asl import sections
from spotline_dev.asl.build import MACHINES
from spotline_dev.asl.builder import lambda_task, result_selector

DECLARED = {name: keys for name, keys in vars(sections).items() if name.endswith("_KEYS")}


def test_a_result_selector_keeps_each_key_of_the_payload_in_order() -> None:
    assert result_selector(("valid", "errorCount")) == {
        "valid.$": "$.Payload.valid",
        "errorCount.$": "$.Payload.errorCount",
    }


def test_a_task_that_keeps_nothing_declared_keeps_the_answer_whole() -> None:
    task = lambda_task("T", function="F", comment="c", result_path="$.t", next="N", retry=(), catch=()).to_asl()
    assert "ResultSelector" not in task


def test_each_section_lists_a_key_once() -> None:
    for name, keys in DECLARED.items():
        assert len(set(keys)) == len(keys), name


def test_every_result_selector_is_a_declared_section() -> None:
    used = set()
    for machine, build in MACHINES.items():
        for name, state in build().to_asl()["States"].items():
            if "ResultSelector" not in state:
                continue
            matches = [key for key, keys in DECLARED.items() if state["ResultSelector"] == result_selector(keys)]
            assert matches, f"{machine}.{name} keeps keys no section declares"
            used.update(matches)
    assert used == set(DECLARED), "a section no Task keeps"


def test_the_status_section_keeps_the_decision_and_the_next_step() -> None:
    # What the next attempt reads from $.status (a key dropped here, the next attempt would quietly
    # take the previous one's type, region or plan).
    assert {"action", "explanation", "nextCapacity", "nextInstanceType", "nextRegion", "nextTrainingPlan"} <= set(
        sections.STATUS_KEYS
    )
