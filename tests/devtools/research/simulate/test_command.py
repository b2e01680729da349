"""`spotline simulate` through the CLI: the printed table, the CSV files, the PNG, the errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from devtools.research.simulate.fixture_traces import fixture_logs
from spotline_dev.cli.entry import main as cli_main
from spotline_dev.research.simulate import CSV_FIELDS, POLICIES, GridSpec
from spotline_dev.research.simulate.policies import RANDOMIZED
from spotline_dev.research.simulate.report import summary_json

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
    runs = len(POLICIES) + (GridSpec().seeds - 1) * len(RANDOMIZED)  # a row per seed of a randomized policy
    assert len(records) == 5 * 3 * 2 * runs  # traces x starts x slacks x runs
    assert (out / "summary.csv").read_text().startswith("policy,runs,feasible,")
    assert (out / "cost_vs_slack.png").read_bytes()[:4] == b"\x89PNG"


def test_spotline_simulate_reports_a_folder_without_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["simulate", "--traces", str(tmp_path), "--no-plot"]) == 2
    assert "no *.log spot-availability logs" in capsys.readouterr().err


def test_spotline_simulate_without_the_shared_traces_says_where_it_looked_and_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "shared" / "data" / "spot-availability"
    monkeypatch.setattr("spotline_dev.research.simulate.command.DEFAULT_TRACES_DIR", missing)
    assert cli_main(["simulate", "--out", str(tmp_path / "out"), "--no-plot"]) == 2  # a usage error
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.startswith(f"spotline simulate: usage error: no spot traces at {missing} (the default")
    assert "--traces DIR reads them from another folder" in printed.err
    assert not (tmp_path / "out").exists()


def test_spotline_simulate_names_a_traces_folder_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["simulate", "--traces", str(tmp_path / "nowhere"), "--no-plot"]) == 2
    assert f"--traces {tmp_path / 'nowhere'}: no such folder" in capsys.readouterr().err


# --- --json and the paper's traces ----------------------------------------------------------------

SMALL_GRID = ["--work-hours", "4", "--slack", "25", "100", "--start-every-hours", "12", "--jobs", "1"]


def test_spotline_simulate_json_prints_one_document_and_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["simulate", "--traces", str(fixture_logs(tmp_path / "logs")), "--out", str(out), "--no-plot"]
    assert cli_main([*args, *SMALL_GRID, "--work-error", "10", "--json"]) == 0
    printed = capsys.readouterr()
    document = json.loads(printed.out)  # the whole of stdout: any other line would not parse
    assert printed.out.lstrip().startswith("{")
    assert document["grid"] == {
        "workHours": [4.0],
        "slacks": [25.0, 100.0],
        "startEveryHours": 12.0,
        "overheadMinutes": 20.0,
        "checkpointMinutes": 15.0,
        "stepSeconds": 60,
        "spotPriceRatio": 0.3,
        "overheadBilled": False,
        "workErrorPercent": 10.0,
        "traces": 5,
        "jobs": 5 * 3 * 2,
    }
    keys = {
        "runs",
        "meanOverOptimum",
        "meanOverSafeOptimum",
        "worstOverOptimum",
        "meanOverOnDemand",
        "missed",
        "missedFeasible",
    }
    assert list(document["policies"]) == list(POLICIES)
    for name, numbers in document["policies"].items():
        assert set(numbers) == keys, name
        assert numbers["runs"] == 5 * 3 * 2 * len(GridSpec().seeds_of(name))
    assert document["policies"]["on-demand"]["meanOverOnDemand"] == 1.0
    safe = document["safeOptimum"]
    assert 1.0 <= safe["meanOverOptimum"] <= safe["worstOverOptimum"]
    # On-demand never risks a deadline: it costs at least the safe optimum. Spotline is not held to
    # it here: with jobs 10 % longer than declared it plans with a work that is not the true one
    # (test_safe_optimum checks the bound for it at exact work).
    on_demand = document["policies"]["on-demand"]
    assert on_demand["meanOverSafeOptimum"] >= 1.0 - 1e-4
    for name in ("on-demand", "spotline"):
        numbers = document["policies"][name]
        assert numbers["meanOverSafeOptimum"] <= numbers["meanOverOptimum"], name
    assert "aws-fixture.log (aws): 2 traces" in printed.err
    assert "grid: 5 traces" in printed.err
    assert (out / "runs.csv").is_file() and (out / "summary.csv").is_file()
    assert not (out / "cost_vs_slack.png").exists()


def test_summary_json_rounds_and_turns_nan_into_null() -> None:
    document = json.loads(json.dumps(summary_json(GridSpec(slacks=(0.1, 1 / 3)), traces=0, rows=[]), allow_nan=False))
    assert document["grid"]["slacks"] == [10.0, 33.3333]
    assert document["grid"]["jobs"] == 0
    assert document["policies"]["spotline"] == {
        "runs": 0,
        "meanOverOptimum": None,
        "meanOverSafeOptimum": None,
        "worstOverOptimum": None,
        "meanOverOnDemand": None,
        "missed": 0,
        "missedFeasible": 0,
    }
    assert document["safeOptimum"] == {
        "feasible": 0,
        "meanOverOptimum": None,
        "worstOverOptimum": None,
        "meanOverOnDemand": None,
    }


def test_spotline_simulate_reads_logs_and_the_papers_json_traces_in_one_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = fixture_logs(tmp_path / "traces" / "2020")
    series = tmp_path / "traces" / "1-node" / "aws-02-15-2023" / "us-east-2a_v100_1.json"
    series.parent.mkdir(parents=True)
    ticks = 40 * 3600 // 200  # 40 hours of 200 s ticks: up 2 hours, down 20 minutes
    series.write_text(json.dumps({"metadata": {"gap_seconds": 200}, "data": [int(k % 42 < 36) for k in range(ticks)]}))
    out = tmp_path / "out"
    assert cli_main(["simulate", "--traces", str(folder.parent), "--out", str(out), "--no-plot", *SMALL_GRID]) == 0
    printed = capsys.readouterr().out
    assert "2020/aws-fixture.log (aws): 2 traces" in printed
    assert "1-node/aws-02-15-2023/us-east-2a_v100_1.json: 1.7 days, 200 s ticks, spot available 86%" in printed
    with (out / "runs.csv").open() as f:
        traces = {record["trace"] for record in csv.DictReader(f)}
    assert len(traces) == 6
    assert "1-node/aws-02-15-2023/us-east-2a_v100_1.json" in traces


def test_spotline_simulate_names_a_malformed_json_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "us-east-1a_v100_1.json").write_text(json.dumps({"data": [0, 1]}))
    assert cli_main(["simulate", "--traces", str(tmp_path), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert "us-east-1a_v100_1.json: not a spot trace in the paper's format: missing metadata.gap_seconds" in err
