"""Every section of every state a real execution passes through reads into its record and back,
unchanged; so does what each handler answers. A key a ResultSelector drops (or a handler no longer
writes) fails `from_state`; a key the state gains that no record knows fails the round trip; a
record field nobody fills fails both.

The executions are example scenarios run by the sandbox (the real state machines, handlers and
the Batch/SageMaker stand-in), chosen for what their states hold: a move to another region (a
checkpoint copy, the region choice, StopSpotJob's `$.fallback`), a fallback onto a training plan,
a scoring night. What `spotline.aws.capacity.checking.check` returns (the dict CheckTrainingStatus reads
into its record) is read and written back too, equal."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from conftest import ROOT
from spotline.aws.capacity import checking
from spotline.core.state import (
    ContinuedAs,
    Fallback,
    Outcome,
    RunStatus,
    Scoring,
    ScoringOutcome,
    StateRecord,
    Training,
    keys_of,
)
from spotline_dev.harness.sandbox.replay import load_scenario, run_scenario

SECTIONS: dict[str, type[StateRecord]] = {
    "training": Training,
    "status": RunStatus,
    "fallback": Fallback,
    "scoring": Scoring,
}
ANSWERS: dict[str, type[StateRecord]] = {
    "SubmitTrainingJob": Training,
    "CheckTrainingStatus": RunStatus,
    "StopSpotJob": Fallback,
    "RecordOutcome": Outcome,
    "PlanScoringRun": Scoring,
    "AdvanceScoringRun": Scoring,
}


def _documents(history: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    """(the state's name, `state` or `answer`, the document) for every state input and output and
    every Lambda answer (the Payload of a Task's TaskSucceeded) in the history."""
    found, task = [], ""
    for event in history:
        entered = event.get("stateEnteredEventDetails")
        if entered:
            task = entered["name"]
            found.append((task, "state", json.loads(entered["input"])))
        exited = event.get("stateExitedEventDetails")
        if exited and exited.get("output"):
            found.append((exited["name"], "state", json.loads(exited["output"])))
        succeeded = event.get("taskSucceededEventDetails")
        if succeeded and succeeded.get("output"):
            found.append((task, "answer", json.loads(succeeded["output"]).get("Payload")))
    return found


def _same(record: StateRecord, document: Any) -> None:
    assert json.dumps(record.to_state(), sort_keys=True) == json.dumps(document, sort_keys=True)


def _outcome(document: dict[str, Any]) -> StateRecord:
    return ScoringOutcome.from_state(document) if "windowMet" in document else Outcome.from_state(document)


@pytest.mark.parametrize("name", ["spot-in-another-region", "falls-back-onto-a-plan", "scores-a-night"])
def test_every_section_of_every_state_and_every_answer_reads_into_its_record_and_back(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[dict[str, Any]] = []  # what spotline.aws.capacity.checking.check returns, as it builds it

    def check(*args: Any, **kwargs: Any) -> dict[str, Any]:
        checked.append(real_check(*args, **kwargs))
        return checked[-1]

    real_check = checking.check
    monkeypatch.setattr(checking, "check", check)
    summary = run_scenario(load_scenario(ROOT / "examples" / "scenarios" / f"{name}.yaml"))
    read: Counter[str] = Counter()
    for answer in checked:
        assert RunStatus.from_state(answer).to_state() == answer
        read["checking.check"] += 1
    for run in summary["executions"]:
        for step, kind, document in _documents(run["history"]):
            if kind == "answer":
                if step in ANSWERS and document is not None:
                    _same(ANSWERS[step].from_state(document), document)
                    read[f"{step} answer"] += 1
                continue
            for key, record in SECTIONS.items():
                if document.get(key) is not None:
                    _same(record.from_state(document[key]), document[key])
                    read[f"$.{key}"] += 1
            if document.get("outcome") is not None:
                _same(_outcome(document["outcome"]), document["outcome"])
                read["$.outcome"] += 1
    expected = {
        "spot-in-another-region": [
            "$.training",
            "$.status",
            "$.fallback",
            "$.outcome",
            "CheckTrainingStatus answer",
            "checking.check",
        ],
        "falls-back-onto-a-plan": ["$.training", "$.status", "$.fallback", "SubmitTrainingJob answer"],
        "scores-a-night": ["$.scoring", "$.outcome", "PlanScoringRun answer", "AdvanceScoringRun answer"],
    }[name]
    assert all(read[section] for section in expected), read


SELECTED: dict[tuple[str, str], type[StateRecord]] = {
    ("training_lifecycle", "SubmitTrainingJob"): Training,
    ("training_lifecycle", "CheckTrainingStatus"): RunStatus,
    ("training_lifecycle", "StopSpotJob"): Fallback,
    ("training_lifecycle", "ContinueInNewExecution"): ContinuedAs,
    ("training_lifecycle", "RecordOutcome"): Outcome,
    ("scoring_run", "PlanScoringRun"): Scoring,
    ("scoring_run", "AdvanceScoringRun"): Scoring,
    ("scoring_run", "RecordScoringRun"): ScoringOutcome,
}


def _task(machine: str, name: str) -> dict[str, Any]:
    states: dict[str, Any] = json.loads((ROOT / "statemachines" / f"{machine}.asl.json").read_text())["States"]
    return dict(states[name])


@pytest.mark.parametrize(("machine", "task"), list(SELECTED))
def test_each_result_selector_keeps_its_record_s_keys_and_writes_its_section(machine: str, task: str) -> None:
    """The keys a record leaves out of the state (`answer_only`: the handler's answer only, such as
    CheckTrainingStatus' `jobId`) aside, a Task's ResultSelector keeps the record's keys, in its order."""
    record, state = SELECTED[(machine, task)], _task(machine, task)
    kept = [k.removesuffix(".$") for k in state["ResultSelector"]]
    assert kept == [k.name for _, k in keys_of(record) if not k.answer_only]
    assert state["ResultPath"] == record.SECTION
