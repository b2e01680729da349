"""Reading the spot-availability logs into one trace per configuration.

Every log here is a small fixture the test writes itself, in the line forms of the real logs
(`../shared/data/spot-availability/`, never copied into the repository).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from spotline_dev.research.traces import (
    DEFAULT_TRACES_DIR,
    REPO_ROOT,
    Config,
    Trace,
    all_traces,
    detect_provider,
    normalize_gpu_type,
    parse_log,
    read_logs,
)

T0 = datetime(2020, 3, 15, 10, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def line(minutes: float, text: str) -> str:
    return f"[{at(minutes).strftime('%Y-%m-%dT%H:%M:%S.000Z')}] {text}"


def log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def by_label(traces: list[Trace]) -> dict[str, Trace]:
    return {t.label: t for t in traces}


# An AWS log in the logger's order: every 10 minutes, each configuration is checked and, when its
# instance is gone, re-requested. Failures name GPU count and type, never the zone.
AWS = log(
    line(0, "Created instance i-0aaa00000000000b1 with 1 GPU(s) of type v100 in zone us-east-1b"),
    line(1, "Created instance i-0aaa00000000000b8 with 8 GPU(s) of type k80 in zone us-east-1b"),
    line(2, "Created instance i-0aaa00000000000c1 with 1 GPU(s) of type v100 in zone us-east-1c"),
    line(3, "Instance with 8 GPU(s) of type k80 creation failed"),  # 1b's 8xk80 runs: it is 1c's
    line(10, "Instance i-0aaa00000000000b1 running in zone us-east-1b"),
    line(11, "Instance i-0aaa00000000000b8 running in zone us-east-1b"),
    line(12, "Instance i-0aaa00000000000c1 running in zone us-east-1c"),
    line(13, "Instance with 8 GPU(s) of type k80 creation failed"),
    line(20, "Instance i-0aaa00000000000b1 running in zone us-east-1b"),
    line(21, "Instance i-0aaa00000000000b8 not running in zone us-east-1b"),
    line(21.1, "Successfully deleted instance i-0aaa00000000000b8"),
    line(21.5, "Instance with 8 GPU(s) of type k80 creation failed"),  # both 8xk80 are down: ambiguous
    line(22, "Instance i-0aaa00000000000c1 running in zone us-east-1c"),
    line(23, "Instance with 8 GPU(s) of type k80 creation failed"),  # ambiguous again
    line(30, "Instance i-0aaa00000000000b1 running in zone us-east-1b"),
    line(31, "Created instance i-0aaa0000000000bb8 with 8 GPU(s) of type k80 in zone us-east-1b"),
    line(32, "Instance i-0aaa00000000000c1 running in zone us-east-1c"),
    line(33, "Created instance i-0aaa0000000000cc8 with 8 GPU(s) of type k80 in zone us-east-1c"),
    line(40, "Instance i-0aaa00000000000b1 running in zone us-east-1b"),
    line(41, "Instance with 1 GPU(s) of type v100 creation failed"),  # every 1xv100 runs: ambiguous
    line(60, "Instance i-0aaa00000000000b1 running in zone us-east-1b"),
)

# A GCP log: one fixed instance name per configuration, failures name the instance only, and the
# check right after a failed creation says "not running" (that is not a preemption).
GCP = log(
    line(0, "Created instance instance0 with 1 GPU(s) of type nvidia-tesla-v100 in zone us-west1-b"),
    line(0.1, "Instance instance0 running in zone us-west1-b"),
    line(1, "Instance instance1 creation failed"),
    line(1.1, "Instance instance1 not running in zone us-west1-b"),
    line(2, "Instance instance2 creation failed"),  # never created in the whole log
    line(2.1, "Instance instance2 not running in zone us-east1-c"),
    line(10, "Instance instance0 not running in zone us-west1-b"),  # preempted
    line(10.1, "Successfully deleted instance instance0"),
    line(11, "Created instance instance1 with 8 GPU(s) of type nvidia-tesla-k80 in zone us-west1-b"),
    line(11.1, "Instance instance1 running in zone us-west1-b"),
    line(12, "Instance instance2 creation failed"),
    line(12.1, "Instance instance2 not running in zone us-east1-c"),
    line(20, "Instance instance0 creation failed"),
    line(20.1, "Instance instance0 not running in zone us-west1-b"),
    line(21, "Instance instance1 running in zone us-west1-b"),
    line(30, "Created instance instance0 with 1 GPU(s) of type nvidia-tesla-v100 in zone us-west1-b"),
    line(30.1, "Instance instance0 running in zone us-west1-b"),
    line(40, "Instance instance1 running in zone us-west1-b"),
)


# --- line forms and providers ----------------------------------------------------------------


def test_every_aws_line_form_is_counted() -> None:
    result = parse_log(AWS, "aws-us-east-1-test.log")
    assert result.provider == "aws"
    assert dict(result.line_counts) == {"created": 5, "running": 9, "not-running": 1, "deleted": 1, "failed": 5}
    assert result.unparsed == []


def test_every_gcp_line_form_is_counted() -> None:
    result = parse_log(GCP, "gcp-test.log")
    assert result.provider == "gcp"
    assert dict(result.line_counts) == {"created": 3, "running": 5, "not-running": 5, "deleted": 1, "failed": 4}


def test_lines_of_no_known_form_are_kept_aside_not_guessed() -> None:
    text = log(
        line(0, "Created instance i-0aaa00000000000b1 with 1 GPU(s) of type v100 in zone us-east-1b"),
        "a line without a timestamp",
        "[yesterday] Instance i-0aaa00000000000b1 running in zone us-east-1b",
        line(5, "Instance i-0aaa00000000000b1 is on fire"),
        "",
    )
    result = parse_log(text, "aws.log")
    assert [(n.line_no, n.reason) for n in result.unparsed] == [
        (2, "no [timestamp] prefix"),
        (3, "bad timestamp 'yesterday'"),
        (4, "no known line form"),
    ]
    assert result.line_counts["unparsed"] == 3
    assert len(result.traces) == 1


@pytest.mark.parametrize(
    ("name", "text", "provider"),
    [
        ("aws-us-east-1-2020-03-15.log", "", "aws"),
        ("gcp-2020-03-01.log", "", "gcp"),
        ("run.log", line(0, "Instance i-0123456789abcdef0 running in zone us-east-1b"), "aws"),
        ("run.log", line(0, "Instance with 8 GPU(s) of type k80 creation failed"), "aws"),
        ("run.log", line(0, "Instance instance4 running in zone us-east1-c"), "gcp"),
    ],
)
def test_provider_from_the_file_name_else_from_the_lines(name: str, text: str, provider: str) -> None:
    assert detect_provider(name, text) == provider


def test_gpu_types_are_named_alike_across_providers() -> None:
    assert normalize_gpu_type("nvidia-tesla-v100") == normalize_gpu_type("V100") == "v100"
    assert normalize_gpu_type("nvidia-tesla-k80") == "k80"


# --- AWS: failures name no zone ---------------------------------------------------------------


def test_aws_failure_goes_to_the_only_zone_without_a_live_instance() -> None:
    traces = by_label(parse_log(AWS, "aws.log").traces)
    c8 = traces["aws/us-east-1c/8xk80"]
    # 1b's 8xk80 ran at 3 and 13 minutes, so those failures are 1c's; 1c's first line is a failure.
    assert c8.changes[0] == (at(3), "unavailable")
    assert c8.state_at(at(20)) == "unavailable"
    assert c8.changes[-1] == (at(33), "available")


def test_aws_failures_with_no_or_several_candidate_zones_are_ambiguous_and_left_out() -> None:
    result = parse_log(AWS, "aws.log")
    assert [(n.at, n.reason) for n in result.ambiguous] == [
        (at(21.5), "8xk80 had no live instance in several zones (us-east-1b, us-east-1c)"),
        (at(23), "8xk80 had no live instance in several zones (us-east-1b, us-east-1c)"),
        (at(41), "1xv100 had a live instance in every zone (us-east-1b, us-east-1c)"),
    ]
    b8 = by_label(result.traces)["aws/us-east-1b/8xk80"]
    # Preempted at 21, left "preempted" (not "unavailable": the failures might be 1c's) until 31.
    assert b8.changes == ((at(1), "available"), (at(21), "preempted"), (at(31), "available"))
    assert b8.preemptions == 1


def test_aws_running_lines_confirm_and_the_trace_ends_with_the_log() -> None:
    traces = by_label(parse_log(AWS, "aws.log").traces)
    b1 = traces["aws/us-east-1b/1xv100"]
    assert b1.changes == ((at(0), "available"),)
    assert b1.end == at(60)
    assert b1.available_fraction == 1.0
    assert set(traces) == {
        "aws/us-east-1b/1xv100",
        "aws/us-east-1b/8xk80",
        "aws/us-east-1c/1xv100",
        "aws/us-east-1c/8xk80",
    }


# --- GCP: failures name the instance only -------------------------------------------------------


def test_gcp_names_map_to_their_configuration_through_creations() -> None:
    traces = by_label(parse_log(GCP, "gcp.log").traces)
    w1 = traces["gcp/us-west1-b/1xv100"]
    assert w1.config == Config("gcp", "us-west1-b", "v100", 1)
    assert w1.changes == (
        (at(0), "available"),
        (at(10), "preempted"),
        (at(20), "unavailable"),  # "instance0 creation failed": its configuration is known
        (at(30), "available"),
    )
    assert w1.preemptions == 1
    # instance1 failed at 1 minute, before its first creation: its only configuration is 8xk80.
    assert traces["gcp/us-west1-b/8xk80"].changes == ((at(1), "unavailable"), (at(11), "available"))


def test_not_running_right_after_a_failed_creation_is_not_a_preemption() -> None:
    traces = by_label(parse_log(GCP, "gcp.log").traces)
    assert traces["gcp/us-west1-b/8xk80"].preemptions == 0
    assert traces["gcp/us-west1-b/1xv100"].state_at(at(20.5)) == "unavailable"


def test_a_gcp_name_never_created_is_unresolved_with_its_zone_and_yields_no_trace() -> None:
    result = parse_log(GCP, "gcp.log")
    (unresolved,) = result.unresolved.values()
    assert (unresolved.name, unresolved.zones, unresolved.failures) == ("instance2", {"us-east1-c"}, 2)
    assert (unresolved.first, unresolved.last) == (at(2), at(12.1))
    assert not any(t.config.zone == "us-east1-c" for t in result.traces)
    assert "instance2 (us-east1-c): never created, 2 failed attempts, GPU type unknown" in result.summary()


def test_a_gcp_name_reused_for_two_configurations_follows_its_latest_creation() -> None:
    text = log(
        line(0, "Instance instance7 creation failed"),  # before any creation, two candidates
        line(1, "Created instance instance7 with 1 GPU(s) of type nvidia-tesla-k80 in zone us-east1-c"),
        line(2, "Instance instance7 not running in zone us-east1-c"),
        line(3, "Instance instance7 creation failed"),  # its latest creation: 1xk80
        line(4, "Created instance instance7 with 2 GPU(s) of type nvidia-tesla-k80 in zone us-east1-c"),
        line(5, "Instance instance7 not running in zone us-east1-c"),
        line(6, "Instance instance7 creation failed"),  # now 2xk80
    )
    result = parse_log(text, "gcp.log")
    assert [n.reason for n in result.ambiguous] == ["instance7 stands for several configurations, none created yet"]
    traces = by_label(result.traces)
    assert traces["gcp/us-east1-c/1xk80"].changes == (
        (at(1), "available"),
        (at(2), "preempted"),
        (at(3), "unavailable"),
    )
    assert traces["gcp/us-east1-c/2xk80"].changes[-1] == (at(6), "unavailable")


def test_lines_that_contradict_the_tracked_state_are_anomalies() -> None:
    text = log(
        line(0, "Created instance instance0 with 1 GPU(s) of type nvidia-tesla-v100 in zone us-west1-b"),
        line(1, "Instance instance0 running in zone us-east1-c"),  # another zone
        line(2, "Instance instance9 running in zone us-west1-b"),  # never created
        line(3, "Instance instance0 not running in zone us-west1-b"),
        line(4, "Instance instance0 running in zone us-west1-b"),  # back without a creation
        line(5, "Successfully deleted instance instance0"),  # deleted without "not running"
    )
    result = parse_log(text, "gcp.log")
    assert [n.reason for n in result.anomalies] == [
        "zone differs from its creation (us-west1-b)",
        "running, but its creation is not in the log",
        "running after it was reported gone",
    ]
    (trace,) = result.traces
    assert trace.changes == (
        (at(0), "available"),
        (at(3), "preempted"),
        (at(4), "available"),
        (at(5), "preempted"),
    )


# --- traces as time series ----------------------------------------------------------------------


def test_availability_flags_steps_that_are_available_throughout() -> None:
    trace = Trace(
        Config("aws", "z", "v100", 1),
        "t.log",
        ((at(0), "available"), (at(25), "preempted"), (at(30), "unavailable"), (at(42), "available")),
        at(60),
    )
    assert trace.available_intervals() == [(0.0, 1500.0), (2520.0, 3600.0)]
    assert trace.available_fraction == pytest.approx((25 + 18) / 60)
    flags = trace.availability(600)  # 10-minute steps: [0,10) [10,20) yes, [20,30) cut at 25, [40,50) cut at 42
    assert flags.tolist() == [True, True, False, False, False, True]
    assert trace.availability(600, offset_seconds=300, steps=4).tolist() == [True, True, False, False]
    assert trace.availability(60, steps=200).sum() == 25 + 18  # past the end: unavailable
    assert trace.state_at(at(27)) == "preempted"
    assert trace.state_at(at(61)) is None


def test_a_trace_needs_ordered_changes() -> None:
    with pytest.raises(ValueError, match="time order"):
        Trace(Config("aws", "z", "v100", 1), "t.log", ((at(5), "available"), (at(1), "unavailable")), at(9))
    with pytest.raises(ValueError, match="at least one"):
        Trace(Config("aws", "z", "v100", 1), "t.log", (), at(9))
    with pytest.raises(ValueError, match="step_seconds"):
        Trace(Config("aws", "z", "v100", 1), "t.log", ((at(0), "available"),), at(9)).availability(0)


def test_read_logs_reads_every_log_of_a_folder_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "gcp-2020-03-01.log").write_text(GCP)
    (tmp_path / "aws-us-east-1-2020-03-15.log").write_text(AWS)
    (tmp_path / "README.md").write_text("not a log")
    results = read_logs(tmp_path)
    assert [r.source for r in results] == ["aws-us-east-1-2020-03-15.log", "gcp-2020-03-01.log"]
    traces = all_traces(results)
    assert len(traces) == 4 + 2
    assert {t.source for t in traces} == {"aws-us-east-1-2020-03-15.log", "gcp-2020-03-01.log"}
    assert np.all([t.duration_seconds > 0 for t in traces])


def test_a_folder_without_logs_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no \*\.log"):
        read_logs(tmp_path)


def test_the_real_logs_are_read_in_place_next_to_the_repository() -> None:
    assert REPO_ROOT.parent / "shared" / "data" / "spot-availability" == DEFAULT_TRACES_DIR
    folders = ("benchmarks", "devtools", "docs", "events", "examples", "layers", "tests")
    copies = [*REPO_ROOT.glob("*.log"), *(p for d in folders for p in (REPO_ROOT / d).rglob("*.log"))]
    assert not copies, "the real logs stay in ../shared, read in place"
