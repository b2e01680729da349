"""`spotline simulate` through the CLI: the printed table, the CSV files, the PNG, the errors."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from devtools.simulate.fixture_traces import fixture_logs
from spotline_dev.cli import main as cli_main
from spotline_dev.simulate import CSV_FIELDS, POLICIES

# --- the command ----------------------------------------------------------------------------------


def test_spotline_simulate_prints_the_table_and_writes_csv_and_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["simulate", "--traces", str(fixture_logs(tmp_path / "logs")), "--out", str(out)]
    args += ["--work-hours", "4", "--slack", "25", "100", "--start-every-hours", "12", "--jobs", "1"]
    assert cli_main(args) == 0
    printed = capsys.readouterr().out
    assert "aws-fixture.log (aws): 2 traces" in printed
    header = next(line for line in printed.splitlines() if line.startswith("policy"))
    assert header.split()[:5] == ["policy", "runs", "mean/OD", "worst/OD", "mean/opt"]
    for name in [*POLICIES, "optimum"]:
        assert any(line.startswith(f"{name} ") for line in printed.splitlines()), name
    with (out / "runs.csv").open() as f:
        records = list(csv.DictReader(f))
    assert list(records[0]) == list(CSV_FIELDS)
    assert len(records) == 5 * 3 * 2 * len(POLICIES)  # traces x starts x slacks x policies
    assert (out / "summary.csv").read_text().startswith("policy,runs,feasible,")
    assert (out / "cost_vs_slack.png").read_bytes()[:4] == b"\x89PNG"


def test_spotline_simulate_reports_a_folder_without_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["simulate", "--traces", str(tmp_path), "--no-plot"]) == 2
    assert "no *.log spot-availability logs" in capsys.readouterr().err
