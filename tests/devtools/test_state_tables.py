"""docs/runbook.md's tables of the state's sections are the records' (spotline_dev.state_tables)."""

from __future__ import annotations

from pathlib import Path

from spotline_dev.state_tables import BEGIN, END, RUNBOOK, generate, main


def test_the_runbook_s_state_tables_are_a_fresh_generation() -> None:
    page = RUNBOOK.read_text()
    assert page[page.index(BEGIN) : page.index(END) + len(END)] == generate()
    assert main(["--check"]) == 0


def test_every_key_of_a_record_is_a_row_and_a_stale_page_is_caught_and_rewritten(tmp_path: Path) -> None:
    fresh = generate()
    assert "| `nextInstanceType` | string or null |" in fresh
    assert "| `previousAttempts` | list of `$.training.previousAttempts[]` |" in fresh
    stale = tmp_path / "runbook.md"
    stale.write_text("before\n\n" + fresh.replace("| `nextInstanceType`", "| `nextType`") + "\n\nafter\n")
    assert main(["--check", "--page", str(stale)]) == 1
    assert main(["--page", str(stale)]) == 0
    assert stale.read_text() == "before\n\n" + fresh + "\n\nafter\n"
