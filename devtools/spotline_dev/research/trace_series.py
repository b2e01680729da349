"""Spot availability traces in the format of Wu et al., "Can't Be Late" (NSDI 2024), and the
folder loader `spotline simulate --traces` uses for both trace formats.

The paper's traces (`../shared/data/spot-traces/`, see its README; read in place, never copied)
are one JSON file per zone and instance shape:

    {"metadata": {"gap_seconds": 195}, "data": [0, 1, 1, 0, ...]}

`data[i]` is how many spot instances could be had at tick i, ticks `gap_seconds` apart.

**As a `Trace`** (the same step function the 2020 logs give, `spotline_dev.research.traces`):

- A tick is *available* when `data[i] >= nodes`: all the nodes the job wants could be had.
  `nodes` defaults to the series' maximum (at least 1): 1 for the 1-node traces, 16 for the
  16-node traces (a series that never reached its set's node count then counts its best tick
  as "all"; pass `nodes` to be explicit). The config's gpu_count is that node count.
- The tick where an available run ends is *preempted* (a job running there is preempted),
  the ticks after it *unavailable* while the count stays below `nodes`; a series that starts
  below is *unavailable* from the start. Equal consecutive states are merged.
- Tick i covers [start + i x gap, start + (i + 1) x gap): the trace ends one gap after the
  last tick.
- The start is 00:00 UTC of the date in the nearest enclosing folder named like the paper's
  (`aws-02-15-2023`: MM-DD-YYYY, 2023-02-15); without such a folder 1970-01-01 (the summary
  says so). The zone and GPU type come from the file name (`us-east-2a_v100_1.json`), the
  provider from that folder's prefix (`gcp-04-30-2023`: gcp; AWS otherwise).
- The trace is named by its path relative to the folder read (`SeriesTrace.label`), so the
  traces of different sets and zones never share a name in the simulator's rows.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from spotline_dev.research.traces import Config, ParseResult, SpotState, Trace, normalize_gpu_type, read_log

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""The start of a series whose folders carry no date."""
_PROVIDERS = ("aws", "gcp", "azure")
"""The providers a dated folder's prefix may name (the paper's sets: `aws-...`, `gcp-...`)."""
_FOLDER_DATE = re.compile(r"(?<!\d)(?P<month>\d{2})-(?P<day>\d{2})-(?P<year>\d{4})(?!\d)")


class TraceFormatError(ValueError):
    """A JSON file that is not in the paper's format: the message names the file and what is wrong."""


@dataclass(frozen=True, slots=True)
class SeriesTrace(Trace):
    """A trace read from one JSON file: named by its path, since the config alone (zone, GPU,
    node count) may repeat across the paper's trace sets."""

    @property
    def label(self) -> str:
        return self.source


@dataclass(frozen=True, slots=True)
class SeriesResult:
    """One JSON file read: its trace and what the command's header says about it."""

    source: str
    gap_seconds: float
    ticks: int
    nodes: int
    """A tick is available when at least this many instances could be had."""
    max_count: int
    dated: bool
    """Whether the start came from a folder name (else 1970-01-01)."""
    trace: SeriesTrace

    def summary(self) -> str:
        trace = self.trace
        text = (
            f"{self.source}: {trace.duration_seconds / 86400:.1f} days, {self.gap_seconds:g} s ticks, "
            f"spot available {100 * trace.available_fraction:.0f}% of the time, {trace.preemptions} preemptions"
        )
        if self.nodes > 1 or self.max_count > 1:
            text += f" (available = at least {self.nodes} of up to {self.max_count} nodes)"
        if not self.dated:
            text += f"; no MM-DD-YYYY folder name, starts {EPOCH:%Y-%m-%d}"
        return text


def parse_series(text: str, source: str = "<json>") -> tuple[float, list[int]]:
    """`(gap_seconds, data)` of a file in the paper's format; TraceFormatError otherwise."""

    def bad(why: str) -> TraceFormatError:
        return TraceFormatError(f"{source}: not a spot trace in the paper's format: {why}")

    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(f"invalid JSON ({exc})") from exc
    if not isinstance(document, dict):
        raise bad('expected an object {"metadata": {"gap_seconds": ...}, "data": [...]}')
    metadata = document.get("metadata")
    gap = metadata.get("gap_seconds") if isinstance(metadata, dict) else None
    if gap is None:
        raise bad("missing metadata.gap_seconds")
    if isinstance(gap, bool) or not isinstance(gap, int | float) or not math.isfinite(gap) or gap <= 0:
        raise bad(f"metadata.gap_seconds must be a positive number, not {gap!r}")
    data = document.get("data")
    if not isinstance(data, list):
        raise bad("missing data (a list of non-negative integers)")
    if not data:
        raise bad("data is empty")
    for index, value in enumerate(data):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise bad(f"data must be a list of non-negative integers: data[{index}] is {value!r}")
    return float(gap), data


def start_date(path: Path) -> datetime | None:
    """00:00 UTC of the MM-DD-YYYY date in the nearest enclosing folder name that has a valid one."""
    for folder in path.parents:
        for match in _FOLDER_DATE.finditer(folder.name):
            try:
                return datetime(int(match["year"]), int(match["month"]), int(match["day"]), tzinfo=UTC)
            except ValueError:
                continue
    return None


def series_changes(counts: Sequence[int], nodes: int) -> list[tuple[int, SpotState]]:
    """`(tick, state)` at every change: available at >= nodes, preempted where an available
    run ends, unavailable after it (and from the start if the series starts below)."""
    changes: list[tuple[int, SpotState]] = []
    previous: SpotState | None = None
    for tick, count in enumerate(counts):
        state: SpotState
        if count >= nodes:
            state = "available"
        elif previous == "available":
            state = "preempted"
        else:
            state = "unavailable"
        if state != previous:
            changes.append((tick, state))
        previous = state
    return changes


def series_trace(
    counts: Sequence[int], gap_seconds: float, start: datetime, config: Config, source: str
) -> SeriesTrace:
    """The step function of a series at `config.gpu_count` nodes (see the module docstring)."""
    if not counts:
        raise ValueError("a series needs at least one tick")
    gap = timedelta(seconds=gap_seconds)
    changes = tuple((start + tick * gap, state) for tick, state in series_changes(counts, config.gpu_count))
    return SeriesTrace(config, source, changes, start + len(counts) * gap)


def provider_of(path: Path) -> str:
    """The provider a dated folder's name begins with (`gcp-04-30-2023`: gcp), nearest first; aws
    without one (the 2022-2023 sets are mostly AWS)."""
    for folder in path.parents:
        prefix = folder.name.partition("-")[0].lower()
        if prefix in _PROVIDERS and _FOLDER_DATE.search(folder.name):
            return prefix
    return "aws"


def config_of(path: Path, nodes: int) -> Config:
    """The provider (`provider_of`), the zone and GPU type from the file name
    (`us-east-2a_v100_1.json`), `nodes` GPUs' worth."""
    zone, _, rest = path.stem.partition("_")
    gpu = rest.partition("_")[0]
    return Config(provider_of(path), zone, normalize_gpu_type(gpu) if gpu else "unknown", nodes)


def read_series(path: Path, root: Path | None = None, nodes: int | None = None) -> SeriesResult:
    """One JSON file of the paper's format; `source` is its path relative to `root` (default: its folder)."""
    source = path.relative_to(root).as_posix() if root is not None else path.name
    gap, counts = parse_series(path.read_text(encoding="utf-8"), source)
    highest = max(counts)
    needed = max(highest, 1) if nodes is None else nodes
    if needed < 1:
        raise ValueError(f"{source}: nodes must be at least 1")
    start = start_date(path.resolve())
    trace = series_trace(counts, gap, start or EPOCH, config_of(path.resolve(), needed), source)
    return SeriesResult(source, gap, len(counts), needed, highest, start is not None, trace)


@dataclass(frozen=True, slots=True)
class TraceSet:
    """Every trace of a folder: the 2020 logs' and the paper's, each file under its relative path."""

    folder: Path
    logs: tuple[ParseResult, ...]
    series: tuple[SeriesResult, ...]

    @property
    def traces(self) -> list[Trace]:
        return [*(t for result in self.logs for t in result.traces), *(s.trace for s in self.series)]

    def summaries(self) -> list[str]:
        """One line per file, logs first (as `ParseResult.summary()`), in path order."""
        return [*(result.summary() for result in self.logs), *(s.summary() for s in self.series)]


def _read_log(path: Path, root: Path) -> ParseResult:
    """A log under its path relative to `root` (read_log names it by its file name only)."""
    result = read_log(path)
    source = path.relative_to(root).as_posix()
    result.source = source
    result.traces = [replace(trace, source=source) for trace in result.traces]
    return result


def read_trace_folder(folder: Path) -> TraceSet:
    """Every `*.log` (2020 logs) and `*.json` (the paper's format) under `folder`, recursively,
    in path order. A JSON file in another format is an error (TraceFormatError), and so are two
    traces with one name (their rows would mix)."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder of spot traces")
    files = sorted((p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.relative_to(folder).as_posix())
    logs = tuple(_read_log(p, folder) for p in files if p.suffix == ".log")
    series = tuple(read_series(p, folder) for p in files if p.suffix == ".json")
    if not logs and not series:
        raise FileNotFoundError(
            f"no spot traces in {folder} (searched recursively): no *.log spot-availability logs "
            "and no *.json traces in the paper's format"
        )
    found = TraceSet(folder, logs, series)
    twice = sorted(label for label, n in Counter(t.label for t in found.traces).items() if n > 1)
    if twice:
        raise ValueError(f"{folder}: several traces named {', '.join(twice)}")
    return found
