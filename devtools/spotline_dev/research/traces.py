"""Spot availability traces from the real spot-availability logs (AWS EC2 spot, GCP preemptible).

The logs in `../shared/data/spot-availability/` (see its README) come from a logger that kept one
spot instance of each configuration alive, checked it every ~10 minutes and re-requested it
when it was gone. They are read in place, never copied into this repository.

**Lines** (each starts with `[<RFC 3339 time>] `):

| form | example (shortened) | meaning here |
| --- | --- | --- |
| created | `Created instance X with 8 GPU(s) of type k80 in zone Z` | capacity **available** from now |
| running | `Instance X running in zone Z` | still available (a confirmation, no change) |
| not running | `Instance X not running in zone Z` | a live instance is gone: **preempted** now |
| deleted | `Successfully deleted instance X` | clean-up after "not running" (no change) |
| failed (AWS) | `Instance with 8 GPU(s) of type k80 creation failed` | no capacity: **unavailable** |
| failed (GCP) | `Instance X creation failed` | no capacity: **unavailable** |

**One trace per configuration** (provider, zone, GPU type, GPU count), as a step function of
three states: *available* while an instance of the configuration runs, *preempted* from the
line that found it gone until the next creation attempt, *unavailable* while creations fail.
A trace starts at the first line that concerns its configuration and ends at the last line of
the log (the logger watched every configuration until then). Times are the lines' times: a
preemption happened somewhere in the ~10 minutes before the line that reports it.

**Ambiguity, handled explicitly** (never guessed silently; `ParseResult` lists every case):

- AWS failure lines name GPU count and type but no zone. A failure can only belong to a
  configuration that has no live instance at that moment (the logger only re-requests a
  configuration whose instance is gone), among the zones the log names. With exactly one such
  zone the failure is attributed to it; with none or several the line is recorded in
  `ambiguous` and left out of every trace.
- GCP lines name the instance only; the logger reuses one name per configuration, so names
  map to configurations through the `Created instance ... with N GPU(s) of type T in zone Z`
  lines. A name created with more than one configuration maps, at each line, to its most
  recent creation (lines before its first creation are then ambiguous). A name that is never
  created (every attempt failed) has a zone (from its "not running" lines) but no GPU type or
  count: it is reported in `unresolved` and yields no trace.
- A "not running" line right after a GCP creation failure is part of that failure, not a
  preemption. Lines that contradict the tracked state (a "running" instance nobody created,
  a zone that differs from the creation's) are kept in `anomalies`; lines of no known form
  in `unparsed`.

GPU types are normalized across providers (`nvidia-tesla-v100` -> `v100`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

Provider = Literal["aws", "gcp"]
SpotState = Literal["available", "preempted", "unavailable"]
LineForm = Literal["created", "running", "not-running", "deleted", "failed", "unparsed"]

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_TRACES_DIR = REPO_ROOT.parent / "shared" / "data" / "spot-availability"
"""`../shared/data/spot-availability/` next to the repository (read in place, never copied)."""

_STAMP = re.compile(r"^\[(?P<at>[^\]]+)\]\s+(?P<body>.*?)\s*$")
_CREATED = re.compile(
    r"^Created instance (?P<name>\S+) with (?P<count>\d+) GPU\(s\) of type (?P<type>\S+) in zone (?P<zone>\S+)$"
)
_RUNNING = re.compile(r"^Instance (?P<name>\S+) running in zone (?P<zone>\S+)$")
_NOT_RUNNING = re.compile(r"^Instance (?P<name>\S+) not running in zone (?P<zone>\S+)$")
_DELETED = re.compile(r"^Successfully deleted instance (?P<name>\S+)$")
_FAILED_BY_SHAPE = re.compile(r"^Instance with (?P<count>\d+) GPU\(s\) of type (?P<type>\S+) creation failed$")
_FAILED_BY_NAME = re.compile(r"^Instance (?P<name>\S+) creation failed$")
_AWS_INSTANCE_ID = re.compile(r"\bi-[0-9a-f]{8,}\b")


def normalize_gpu_type(raw: str) -> str:
    """`nvidia-tesla-v100` (GCP) and `v100` (AWS) name the same GPU."""
    return raw.lower().removeprefix("nvidia-").removeprefix("tesla-")


@dataclass(frozen=True, slots=True, order=True)
class Config:
    """One spot configuration: where and what."""

    provider: str
    zone: str
    gpu_type: str
    gpu_count: int

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.zone}/{self.gpu_count}x{self.gpu_type}"


@dataclass(frozen=True, slots=True)
class Trace:
    """Spot capacity of one configuration over time: `changes[i]` holds from its time until the
    next change (the last one until `end`); the first change is at the trace's start."""

    config: Config
    source: str
    changes: tuple[tuple[datetime, SpotState], ...]
    end: datetime

    def __post_init__(self) -> None:
        if not self.changes:
            raise ValueError("a trace needs at least one state")
        times = [at for at, _ in self.changes]
        if times != sorted(times) or self.end < times[-1]:
            raise ValueError("trace changes must be in time order and end after the last one")

    @property
    def label(self) -> str:
        return self.config.label

    @property
    def start(self) -> datetime:
        return self.changes[0][0]

    @property
    def duration_seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    @property
    def preemptions(self) -> int:
        return sum(1 for _, state in self.changes if state == "preempted")

    def state_at(self, moment: datetime) -> SpotState | None:
        """The state at `moment`, None outside the trace."""
        if moment < self.start or moment > self.end:
            return None
        index = bisect_right([at for at, _ in self.changes], moment) - 1
        return self.changes[index][1]

    def available_intervals(self) -> list[tuple[float, float]]:
        """Seconds since the start, [from, to) while spot capacity is available."""
        intervals: list[tuple[float, float]] = []
        bounds = [*(at for at, _ in self.changes[1:]), self.end]
        for (at, state), until in zip(self.changes, bounds, strict=True):
            if state != "available" or until <= at:
                continue
            a, b = (at - self.start).total_seconds(), (until - self.start).total_seconds()
            if intervals and intervals[-1][1] >= a:
                intervals[-1] = (intervals[-1][0], b)
            else:
                intervals.append((a, b))
        return intervals

    @property
    def available_fraction(self) -> float:
        total = self.duration_seconds
        return sum(b - a for a, b in self.available_intervals()) / total if total > 0 else 0.0

    def availability(
        self, step_seconds: float, offset_seconds: float = 0.0, steps: int | None = None
    ) -> npt.NDArray[np.bool_]:
        """One flag per step of `step_seconds` from `offset_seconds` after the start: True when
        spot capacity is available for the whole step (a step that sees a preemption or the
        end of the trace is not)."""
        if step_seconds <= 0:
            raise ValueError("step_seconds must be positive")
        if steps is None:
            steps = max(0, int((self.duration_seconds - offset_seconds) // step_seconds))
        flags = np.zeros(steps, dtype=np.bool_)
        for a, b in self.available_intervals():
            first = int(np.ceil((a - offset_seconds) / step_seconds - 1e-9))
            last = int(np.floor((b - offset_seconds) / step_seconds + 1e-9))  # exclusive
            first, last = max(first, 0), min(last, steps)
            if last > first:
                flags[first:last] = True
        return flags


@dataclass(frozen=True, slots=True)
class LineNote:
    """A line the reader could not use as it stands, and why."""

    line_no: int
    at: datetime | None
    text: str
    reason: str


@dataclass(slots=True)
class UnresolvedInstance:
    """A GCP instance name never created in the log: its GPU type and count are unknown."""

    name: str
    zones: set[str] = field(default_factory=set)
    failures: int = 0
    first: datetime | None = None
    last: datetime | None = None


@dataclass(slots=True)
class ParseResult:
    source: str
    provider: Provider
    traces: list[Trace]
    line_counts: Counter[str]
    ambiguous: list[LineNote]
    anomalies: list[LineNote]
    unparsed: list[LineNote]
    unresolved: dict[str, UnresolvedInstance]

    def summary(self) -> str:
        counts = ", ".join(f"{form} {n}" for form, n in sorted(self.line_counts.items()))
        parts = [f"{self.source} ({self.provider}): {len(self.traces)} traces; lines: {counts}"]
        if self.ambiguous:
            parts.append(f"{len(self.ambiguous)} ambiguous failure lines left out")
        for item in sorted(self.unresolved.values(), key=lambda u: u.name):
            zones = "/".join(sorted(item.zones)) or "unknown zone"
            parts.append(f"{item.name} ({zones}): never created, {item.failures} failed attempts, GPU type unknown")
        if self.anomalies:
            parts.append(f"{len(self.anomalies)} anomalous lines")
        if self.unparsed:
            parts.append(f"{len(self.unparsed)} unparsed lines")
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class _Line:
    no: int
    at: datetime
    form: LineForm
    text: str
    name: str | None = None
    zone: str | None = None
    gpu_type: str | None = None
    gpu_count: int | None = None


def _parse_line(no: int, raw: str) -> _Line | LineNote | None:
    if not raw.strip():
        return None
    stamp = _STAMP.match(raw)
    if stamp is None:
        return LineNote(no, None, raw.rstrip("\n"), "no [timestamp] prefix")
    try:
        at = datetime.fromisoformat(stamp["at"])
    except ValueError:
        return LineNote(no, None, raw.rstrip("\n"), f"bad timestamp {stamp['at']!r}")
    body = stamp["body"]
    if m := _CREATED.match(body):
        return _Line(no, at, "created", body, m["name"], m["zone"], normalize_gpu_type(m["type"]), int(m["count"]))
    if m := _NOT_RUNNING.match(body):
        return _Line(no, at, "not-running", body, m["name"], m["zone"])
    if m := _RUNNING.match(body):
        return _Line(no, at, "running", body, m["name"], m["zone"])
    if m := _DELETED.match(body):
        return _Line(no, at, "deleted", body, m["name"])
    if m := _FAILED_BY_SHAPE.match(body):
        return _Line(no, at, "failed", body, gpu_type=normalize_gpu_type(m["type"]), gpu_count=int(m["count"]))
    if m := _FAILED_BY_NAME.match(body):
        return _Line(no, at, "failed", body, m["name"])
    return LineNote(no, at, body, "no known line form")


def detect_provider(source: str, text: str) -> Provider:
    """From the file name (`aws-...`, `gcp-...`), else from the lines (AWS ids look like i-0abc...)."""
    name = Path(source).name.lower()
    if name.startswith("aws"):
        return "aws"
    if name.startswith("gcp"):
        return "gcp"
    return "aws" if _AWS_INSTANCE_ID.search(text) or "Instance with " in text else "gcp"


class _Builder:
    """Walks the lines in order, tracking which instance is live for which configuration."""

    def __init__(self, source: str, provider: Provider, lines: list[_Line]) -> None:
        self.source, self.provider, self.lines = source, provider, lines
        self.zones = sorted({line.zone for line in lines if line.zone})
        self.creations: dict[str, list[tuple[int, Config]]] = {}
        for line in lines:
            if line.form == "created":
                self.creations.setdefault(str(line.name), []).append((line.no, self._config_of(line)))
        self.live: dict[str, Config] = {}  # instance name/id -> its configuration, while it runs
        self.events: dict[Config, list[tuple[datetime, SpotState]]] = {}
        self.ambiguous: list[LineNote] = []
        self.anomalies: list[LineNote] = []
        self.unresolved: dict[str, UnresolvedInstance] = {}

    def _config_of(self, line: _Line) -> Config:
        assert line.zone and line.gpu_type and line.gpu_count is not None
        return Config(self.provider, line.zone, line.gpu_type, line.gpu_count)

    def _emit(self, config: Config, at: datetime, state: SpotState) -> None:
        events = self.events.setdefault(config, [])
        if events and events[-1][1] == state:
            return
        events.append((at, state))

    def _note(self, bucket: list[LineNote], line: _Line, reason: str) -> None:
        bucket.append(LineNote(line.no, line.at, line.text, reason))

    def _named_config(self, name: str, line_no: int) -> Config | None:
        """The configuration an instance name stands for at a line (GCP reuses one name per configuration)."""
        created = self.creations.get(name)
        if not created:
            return None
        distinct = {config for _, config in created}
        if len(distinct) == 1:
            return next(iter(distinct))
        before = [config for no, config in created if no < line_no]
        return before[-1] if before else None

    def _unresolved(self, line: _Line) -> UnresolvedInstance:
        name = str(line.name)
        item = self.unresolved.setdefault(name, UnresolvedInstance(name))
        item.first = item.first or line.at
        item.last = line.at
        if line.zone:
            item.zones.add(line.zone)
        return item

    def run(self) -> None:
        for line in self.lines:
            getattr(self, "_on_" + line.form.replace("-", "_"))(line)

    def _on_created(self, line: _Line) -> None:
        name, config = str(line.name), self._config_of(line)
        previous = next((n for n, c in self.live.items() if c == config and n != name), None)
        if previous is not None:
            self._note(self.anomalies, line, f"{config.label} created while {previous} still ran")
            del self.live[previous]
        self.live[name] = config
        self._emit(config, line.at, "available")

    def _on_running(self, line: _Line) -> None:
        name = str(line.name)
        config = self.live.get(name) or self._named_config(name, line.no)
        if config is None:
            if self.provider == "gcp" and name not in self.creations:
                self._unresolved(line)
            self._note(self.anomalies, line, "running, but its creation is not in the log")
            return
        if line.zone != config.zone:
            self._note(self.anomalies, line, f"zone differs from its creation ({config.zone})")
            return
        if name not in self.live:
            self._note(self.anomalies, line, "running after it was reported gone")
            self.live[name] = config
        self._emit(config, line.at, "available")

    def _on_not_running(self, line: _Line) -> None:
        name = str(line.name)
        config = self.live.pop(name, None)
        if config is not None:
            self._emit(config, line.at, "preempted")
        elif self.provider == "gcp" and name not in self.creations:
            self._unresolved(line)  # the check after a failed creation: tells the zone, nothing else

    def _on_deleted(self, line: _Line) -> None:
        config = self.live.pop(str(line.name), None)
        if config is not None:  # deleted without a "not running" line first: it is gone all the same
            self._emit(config, line.at, "preempted")

    def _on_failed(self, line: _Line) -> None:
        if line.name is None:  # AWS: count and type, no zone
            self._on_failed_by_shape(line)
            return
        name = line.name
        config = self._named_config(name, line.no)
        if config is None:
            if name in self.creations:
                self._note(self.ambiguous, line, f"{name} stands for several configurations, none created yet")
            else:
                self._unresolved(line).failures += 1
            return
        if self.live.pop(name, None) is not None:
            self._note(self.anomalies, line, "creation failed while the instance was running")
        self._emit(config, line.at, "unavailable")

    def _on_failed_by_shape(self, line: _Line) -> None:
        assert line.gpu_type is not None and line.gpu_count is not None
        running = set(self.live.values())
        candidates = [
            config
            for zone in self.zones
            if (config := Config(self.provider, zone, line.gpu_type, line.gpu_count)) not in running
        ]
        if len(candidates) == 1:
            self._emit(candidates[0], line.at, "unavailable")
            return
        shape = f"{line.gpu_count}x{line.gpu_type}"
        if candidates:
            zones = ", ".join(c.zone for c in candidates)
            self._note(self.ambiguous, line, f"{shape} had no live instance in several zones ({zones})")
        else:
            self._note(self.ambiguous, line, f"{shape} had a live instance in every zone ({', '.join(self.zones)})")


def parse_log(text: str, source: str = "<log>", provider: Provider | None = None) -> ParseResult:
    """Read one log: a trace per configuration, plus everything that could not be attributed."""
    kind = provider or detect_provider(source, text)
    lines: list[_Line] = []
    unparsed: list[LineNote] = []
    counts: Counter[str] = Counter()
    for no, raw in enumerate(text.splitlines(), start=1):
        parsed = _parse_line(no, raw)
        if parsed is None:
            continue
        if isinstance(parsed, LineNote):
            unparsed.append(parsed)
            counts["unparsed"] += 1
            continue
        lines.append(parsed)
        counts[parsed.form] += 1
    lines.sort(key=lambda line: (line.at, line.no))  # stable: same-second lines keep file order
    builder = _Builder(source, kind, lines)
    builder.run()
    traces: list[Trace] = []
    if lines:
        end = lines[-1].at
        for config, events in sorted(builder.events.items()):
            traces.append(Trace(config, Path(source).name, tuple(events), end))
    return ParseResult(
        source=Path(source).name,
        provider=kind,
        traces=traces,
        line_counts=counts,
        ambiguous=builder.ambiguous,
        anomalies=builder.anomalies,
        unparsed=unparsed,
        unresolved=builder.unresolved,
    )


def read_log(path: Path, provider: Provider | None = None) -> ParseResult:
    return parse_log(path.read_text(encoding="utf-8"), source=str(path), provider=provider)


def log_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.log") if p.is_file())


def read_logs(directory: Path | None = None) -> list[ParseResult]:
    """Every `*.log` in `directory` (default: ../shared/data/spot-availability/), in name order."""
    folder = directory or DEFAULT_TRACES_DIR
    files = log_files(folder)
    if not files:
        raise FileNotFoundError(f"no *.log spot-availability logs in {folder}")
    return [read_log(path) for path in files]


def all_traces(results: Iterable[ParseResult]) -> list[Trace]:
    return [trace for result in results for trace in result.traces]
