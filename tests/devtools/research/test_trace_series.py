"""Traces in the paper's JSON format and the folder loader: small fixtures written here; the real
traces in ../shared are read by one test only, and only when they are there."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from devtools.research.simulate.fixture_traces import write_log
from spotline_dev.research.trace_series import (
    EPOCH,
    TraceFormatError,
    provider_of,
    read_series,
    read_trace_folder,
    series_changes,
    start_date,
)
from spotline_dev.research.traces import REPO_ROOT

REAL_ONE_NODE = REPO_ROOT.parent / "shared" / "data" / "spot-traces" / "availability" / "1-node"
DAY = datetime(2023, 2, 15, tzinfo=UTC)


def write_log_in(path: Path, configs: dict[tuple[str, str, int], str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_log(path, configs, "aws")


def write_series(path: Path, data: list[int], gap: int = 195) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"metadata": {"gap_seconds": gap}, "data": data}))
    return path


# --- states ---------------------------------------------------------------------------------------


def test_a_series_turns_into_merged_changes_with_preempted_where_capacity_ends() -> None:
    assert series_changes([1, 1, 0, 0, 1, 0, 1, 1], nodes=1) == [
        (0, "available"),
        (2, "preempted"),
        (3, "unavailable"),
        (4, "available"),
        (5, "preempted"),
        (6, "available"),
    ]
    assert series_changes([0, 0, 1], nodes=1) == [(0, "unavailable"), (2, "available")]
    assert series_changes([1, 1, 1], nodes=1) == [(0, "available")]


def test_a_file_becomes_a_trace_at_its_ticks(tmp_path: Path) -> None:
    path = write_series(tmp_path / "aws-02-15-2023" / "us-east-2a_v100_1.json", [0, 1, 1, 0, 0], gap=100)
    result = read_series(path, tmp_path)
    trace = result.trace
    assert (trace.config.provider, trace.config.zone, trace.config.gpu_type) == ("aws", "us-east-2a", "v100")
    assert trace.config.gpu_count == 1
    tick = timedelta(seconds=100)
    assert trace.changes == (
        (DAY, "unavailable"),
        (DAY + tick, "available"),
        (DAY + 3 * tick, "preempted"),
        (DAY + 4 * tick, "unavailable"),
    )
    assert trace.end == DAY + 5 * tick  # the last tick lasts one gap
    assert trace.available_intervals() == [(100.0, 300.0)]
    assert trace.preemptions == 1
    assert trace.source == trace.label == "aws-02-15-2023/us-east-2a_v100_1.json"
    line = result.summary()
    assert line.startswith("aws-02-15-2023/us-east-2a_v100_1.json: 0.0 days, 100 s ticks, spot available 40%")
    assert line.endswith("1 preemptions")


def test_a_16_node_series_is_available_only_when_every_node_can_be_had(tmp_path: Path) -> None:
    path = write_series(tmp_path / "aws-08-27-2023" / "us-west-2a_v100_1.json", [16, 15, 16, 3, 0, 16], gap=300)
    result = read_series(path, tmp_path)
    assert result.trace.config.gpu_count == result.nodes == 16
    assert [state for _, state in result.trace.changes] == [
        "available",
        "preempted",
        "available",
        "preempted",
        "unavailable",
        "available",
    ]
    assert "at least 16 of up to 16 nodes" in result.summary()
    fewer = read_series(path, tmp_path, nodes=3)
    assert [state for _, state in fewer.trace.changes] == ["available", "preempted", "available"]
    assert fewer.trace.config.gpu_count == 3


def test_the_start_comes_from_the_nearest_dated_folder_else_1970(tmp_path: Path) -> None:
    assert start_date(tmp_path / "aws-08-27-2023" / "zone" / "x.json") == datetime(2023, 8, 27, tzinfo=UTC)
    assert start_date(tmp_path / "aws-01-02-2020" / "aws-03-04-2021" / "x.json") == datetime(2021, 3, 4, tzinfo=UTC)
    assert start_date(tmp_path / "aws-13-40-2023" / "x.json") is None  # no such date
    undated = read_series(write_series(tmp_path / "plain" / "us-east-1a_v100_1.json", [1, 0]), tmp_path)
    assert undated.trace.config.provider == "aws"
    assert undated.trace.start == EPOCH
    assert "no MM-DD-YYYY folder name, starts 1970-01-01" in undated.summary()


@pytest.mark.parametrize(
    ("document", "why"),
    [
        ("{", "invalid JSON"),
        ("[0, 1]", "expected an object"),
        (json.dumps({"data": [0, 1]}), "missing metadata.gap_seconds"),
        (json.dumps({"metadata": {}, "data": [0, 1]}), "missing metadata.gap_seconds"),
        (json.dumps({"metadata": {"gap_seconds": 0}, "data": [0, 1]}), "must be a positive number"),
        (json.dumps({"metadata": {"gap_seconds": 60}}), "missing data"),
        (json.dumps({"metadata": {"gap_seconds": 60}, "data": []}), "data is empty"),
        (json.dumps({"metadata": {"gap_seconds": 60}, "data": [0, -1]}), "data[1] is -1"),
        (json.dumps({"metadata": {"gap_seconds": 60}, "data": [0, 0.5]}), "data[1] is 0.5"),
        (json.dumps({"metadata": {"gap_seconds": 60}, "data": [True]}), "data[0] is True"),
    ],
)
def test_a_malformed_file_is_named_in_the_error(tmp_path: Path, document: str, why: str) -> None:
    write_series(tmp_path / "aws-02-15-2023" / "us-east-1a_v100_1.json", [1, 1])
    bad = tmp_path / "aws-02-15-2023" / "broken.json"
    bad.write_text(document)
    with pytest.raises(TraceFormatError) as caught:
        read_trace_folder(tmp_path)
    message = str(caught.value)
    assert message.startswith("aws-02-15-2023/broken.json: not a spot trace in the paper's format")
    assert why in message


# --- folders --------------------------------------------------------------------------------------


def mixed_folder(root: Path) -> Path:
    """A 2020 log at the top, the paper's 1-node and 16-node sets below, the same zone in both."""
    write_log(
        root / "aws-fixture.log", {("us-east-1b", "v100", 1): "110111", ("us-east-2b", "v100", 1): "1" * 6}, "aws"
    )
    write_series(root / "1-node" / "aws-02-15-2023" / "us-east-2b_v100_1.json", [1, 1, 0, 1])
    write_series(root / "1-node" / "aws-02-15-2023" / "us-west-2a_v100_1.json", [0, 1, 1, 1])
    write_series(root / "16-node" / "aws-08-27-2023" / "us-east-2b_v100_1.json", [16, 4, 16], gap=300)
    (root / "README.md").write_text("not a trace")
    return root


def test_a_mixed_folder_is_read_recursively_with_distinct_trace_names(tmp_path: Path) -> None:
    found = read_trace_folder(mixed_folder(tmp_path))
    assert [result.source for result in found.logs] == ["aws-fixture.log"]
    assert [s.source for s in found.series] == [
        "1-node/aws-02-15-2023/us-east-2b_v100_1.json",
        "1-node/aws-02-15-2023/us-west-2a_v100_1.json",
        "16-node/aws-08-27-2023/us-east-2b_v100_1.json",
    ]
    labels = [trace.label for trace in found.traces]
    assert labels == [
        "aws/us-east-1b/1xv100",
        "aws/us-east-2b/1xv100",
        *(s.source for s in found.series),
    ]
    assert len(set(labels)) == len(labels)
    summaries = found.summaries()
    assert summaries[0].startswith("aws-fixture.log (aws): 2 traces")
    assert summaries[1].startswith("1-node/aws-02-15-2023/us-east-2b_v100_1.json: ")
    assert len(summaries) == 4
    assert found.series[2].trace.start == datetime(2023, 8, 27, tzinfo=UTC)


def test_logs_in_subfolders_are_named_by_their_relative_path(tmp_path: Path) -> None:
    write_log_in(tmp_path / "2020" / "aws-fixture.log", {("us-east-1b", "v100", 1): "1101"})
    found = read_trace_folder(tmp_path)
    assert [r.source for r in found.logs] == ["2020/aws-fixture.log"]
    assert {t.source for t in found.traces} == {"2020/aws-fixture.log"}


def test_two_traces_of_one_name_are_refused(tmp_path: Path) -> None:
    write_log_in(tmp_path / "a" / "aws-1.log", {("us-east-1b", "v100", 1): "1101"})
    write_log_in(tmp_path / "b" / "aws-2.log", {("us-east-1b", "v100", 1): "0111"})
    with pytest.raises(ValueError, match="several traces named aws/us-east-1b/1xv100"):
        read_trace_folder(tmp_path)


def test_a_folder_without_traces_names_both_formats(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(FileNotFoundError) as caught:
        read_trace_folder(tmp_path)
    message = str(caught.value)
    assert str(tmp_path) in message
    assert "*.log spot-availability logs" in message
    assert "*.json traces in the paper's format" in message
    with pytest.raises(FileNotFoundError, match="no such folder"):
        read_trace_folder(tmp_path / "missing")


@pytest.mark.skipif(not REAL_ONE_NODE.is_dir(), reason="the real traces are not in ../shared")
def test_the_real_1_node_set_is_nine_zones_of_about_45_days() -> None:
    found = read_trace_folder(REAL_ONE_NODE)
    assert not found.logs
    assert len(found.traces) == 9
    assert len({t.config.zone for t in found.traces}) == 9
    for trace in found.traces:
        assert 44 <= trace.duration_seconds / 86400 <= 46
        assert trace.start == DAY
        assert trace.config.gpu_count == 1


def test_the_provider_comes_from_the_dated_folder_else_aws(tmp_path: Path) -> None:
    gcp = read_series(write_series(tmp_path / "gcp-04-30-2023" / "us-central1-a_c3-88.json", [1, 0]), tmp_path)
    assert (gcp.trace.config.provider, gcp.trace.config.zone) == ("gcp", "us-central1-a")
    aws = read_series(write_series(tmp_path / "aws-04-22-2023" / "us-east-1c_v100_1.json", [1, 0]), tmp_path)
    assert aws.trace.config.provider == "aws"
    assert provider_of(tmp_path / "gcp-notes" / "x.json") == "aws"  # a prefix without a date names no set
