"""A picture of one run: where it ran (spot, waiting for capacity, interrupted, on-demand, a training
plan), how far its checkpoints got against the policy's switch line (the moment each check would
move the job to on-demand if no more work were saved), the deadline, and each decision Spotline
took (each move as what it was: another instance type, another region, a training plan, on-demand).

`run_picture(history)` is pure: it reads what the states stored under their own keys
($.training, $.status, $.fallback, $.manifest, $.outcome) on the handlers' clock (the virtual one
in the sandbox; the events' own timestamps are the replay's wall clock there), over one execution
or several concatenated (a run that continued in fresh executions). `plot_run` draws it as a PNG
with matplotlib, imported only when drawing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from spotline.core.capacity.capacity_moves import WHAT, move_of
from spotline.core.common.durations import format_duration
from spotline.core.state import AttemptRecord as PreviousAttempt
from spotline.core.state import ContinuedAs, ContinuedFrom, Fallback, JobSummary, Outcome, RunStatus, Training
from spotline_dev.explain.history import (
    END_EVENTS,
    HistoryEvent,
    as_dict,
    job_in,
    load_document,
    parse_time,
    read_section,
)
from spotline_dev.explain.story import MOVE_ACTIONS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Kind = Literal["spot", "waiting for capacity", "interrupted", "on-demand", "training plan"]
KINDS: tuple[Kind, ...] = ("spot", "on-demand", "training plan", "waiting for capacity", "interrupted")
DecisionKind = Literal["submit", "switch", "resubmit", "end"]
COLOURS: dict[str, str] = {
    "spot": "#2ca02c",
    "on-demand": "#1f5fbf",
    "training plan": "#7b4fa6",
    "waiting for capacity": "#f0b429",
    "interrupted": "#d62728",
}
DECISION_COLOURS: dict[str, str] = {"submit": "#444444", "switch": "#1f5fbf", "resubmit": "#b35900", "end": "#000000"}
HOUR_STEPS = (0.25, 0.5, 1.0, 2.0, 3.0, 6.0, 12.0, 24.0)
"""Hour tick spacings: the first that gives at most 16 ticks."""
SAME_CLOCK = timedelta(minutes=5)
"""How close the first event's timestamp and the run's `receivedAt` must be for the events'
timestamps to be on the handlers' clock (a deployed stack; not the sandbox's replay)."""


@dataclass(frozen=True)
class Segment:
    start: datetime
    end: datetime
    kind: Kind
    attempt: int


@dataclass(frozen=True)
class ProgressPoint:
    at: datetime
    fraction: float  # checkpointed (or restored) progress, 0..1


@dataclass(frozen=True)
class Decision:
    at: datetime
    label: str
    kind: DecisionKind


@dataclass(frozen=True)
class RunPicture:
    """What the picture shows; every time in UTC, on the handlers' clock."""

    name: str | None
    job: str | None  # team/name
    status: str  # SUCCEEDED, FAILED, TIMED_OUT, ABORTED or RUNNING
    outcome: str  # the outcome's name, the Fail state, or the status
    start: datetime | None
    end: datetime | None
    deadline: datetime | None
    deadline_met: bool | None
    segments: tuple[Segment, ...] = ()
    progress: tuple[ProgressPoint, ...] = ()
    decisions: tuple[Decision, ...] = ()
    attempts: tuple[tuple[int, str], ...] = ()  # (number, capacity), in order
    switch_line: tuple[ProgressPoint, ...] = ()
    """The policy's own line: at each spot check, the moment it would switch to on-demand if no
    more work were checkpointed (the check's time plus its slack), at the progress it measured."""


# --- extraction -------------------------------------------------------------------------------


@dataclass
class _Reading:
    """What one pass over the events collects (mutable while reading)."""

    start: datetime | None = None
    first_event_at: datetime | None = None
    end_event_at: datetime | None = None
    status: str = "RUNNING"
    fail_state: str | None = None
    name: str | None = None
    job: JobSummary | None = None
    outcome: Outcome | None = None
    continued_as: str | None = None
    marks: list[tuple[datetime, Kind | None, int]] = field(default_factory=list)
    progress: list[ProgressPoint] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    switch_line: list[ProgressPoint] = field(default_factory=list)
    attempts: dict[int, str] = field(default_factory=dict)
    checks: set[tuple[int, datetime]] = field(default_factory=set)
    stops: set[datetime] = field(default_factory=set)
    times: list[datetime] = field(default_factory=list)
    ended: bool = False  # a check said finish

    def saw(self, moment: datetime | None) -> datetime | None:
        if moment is not None:
            moment = moment.astimezone(UTC)
            self.times.append(moment)
        return moment


def _utc(value: Any) -> datetime | None:
    moment = parse_time(value)
    return moment.astimezone(UTC) if moment else None


def _kind(status: RunStatus, capacity: str) -> Kind | None:
    """The lane a check puts its attempt in until the next mark (None: no job running)."""
    state = status.state
    if state in ("queued", "starting"):
        return "waiting for capacity"
    if state == "training":
        return "on-demand" if capacity == "on-demand" else ("training plan" if capacity == "training-plan" else "spot")
    if state == "interrupted":
        return "interrupted"
    if state == "failed" and status.action == "resubmit-on-spot":
        return "waiting for capacity"  # the back-off before the next spot attempt
    return None


def _first_words(text: Any, limit: int = 28) -> str:
    """`deadline at risk` from `deadline at risk: 3h14m left, ...`."""
    head = str(text or "").split(":", 1)[0].strip()
    return head if len(head) <= limit else head[: limit - 1] + "…"


def _submission(reading: _Reading, training: Training | PreviousAttempt) -> None:
    attempt, capacity = training.attempt, str(training.capacity or "spot")
    if not isinstance(attempt, int) or attempt in reading.attempts:
        return
    reading.attempts[attempt] = capacity
    at = reading.saw(_utc(training.submitted_at))
    if at is None:
        return
    reading.marks.append((at, "waiting for capacity", attempt))
    reading.decisions.append(Decision(at, f"attempt {attempt} on {capacity}", "submit"))


def _attempt_of(training: Training | None) -> int:
    attempt = training.attempt if training is not None else None
    return attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else 0


def _check(reading: _Reading, status: RunStatus, training: Training | None) -> None:
    attempt = _attempt_of(training)
    at = _utc(status.checked_at)
    if at is None or (attempt, at) in reading.checks:
        return  # a continuation's input carries the check its predecessor made last
    reading.checks.add((attempt, at))
    reading.saw(at)
    capacity = str((training.capacity if training is not None else None) or reading.attempts.get(attempt) or "spot")
    reading.marks.append((at, _kind(status, capacity), attempt))
    fraction = status.progress.fraction
    if isinstance(fraction, int | float) and not isinstance(fraction, bool):
        reading.progress.append(ProgressPoint(at, min(max(float(fraction), 0.0), 1.0)))
        slack = status.decision.slack_seconds
        if capacity == "spot" and isinstance(slack, int) and not isinstance(slack, bool):
            reading.switch_line.append(
                ProgressPoint(at + timedelta(seconds=slack), min(max(float(fraction), 0.0), 1.0))
            )
    action = status.action
    if action in MOVE_ACTIONS:  # each move as what it was: another type, a region, a plan, on-demand
        reason = _first_words(status.explanation)
        kind, _, _ = move_of(status)
        what = "switch to on-demand" if kind == "on-demand" else f"move to {WHAT[kind]}"
        reading.decisions.append(Decision(at, what + (f": {reason}" if reason else ""), "switch"))
    elif action == "resubmit-on-spot":
        backoff = status.backoff_seconds
        wait = f" after {format_duration(backoff)} back-off" if isinstance(backoff, int) and backoff > 0 else ""
        reading.decisions.append(Decision(at, f"resubmit on spot{wait}", "resubmit"))
    elif action == "finish":
        reason = str(status.finish_reason or status.state or "finished")
        reading.decisions.append(Decision(at, reason.replace("spot-exhausted", "failed: spot exhausted"), "end"))
        reading.ended = True


def _stop(reading: _Reading, fallback: Fallback, training: Training | None) -> None:
    at = _utc(fallback.at)
    if at is None or at in reading.stops:
        return
    reading.stops.add(at)
    reading.saw(at)
    reading.marks.append((at, None, _attempt_of(training)))


def _read_state(reading: _Reading, name: str | None, state: dict[str, Any]) -> None:
    """What a state's document adds; `name` None for an execution's input."""
    reading.job = job_in(state) or reading.job
    reading.outcome = read_section(Outcome, state) or reading.outcome  # None: a scoring run's, or another shape
    came_from = read_section(ContinuedFrom, state)  # None: a run's first execution, or another shape
    first = came_from.first if came_from is not None else None
    training = read_section(Training, state)  # None: not submitted yet, or of another shape (no marks then)
    reading.name = reading.name or (str(first) if first else None) or _execution_name(state, training)
    continued = read_section(ContinuedAs, state)
    reading.continued_as = continued.execution_name if continued is not None else reading.continued_as
    if training is not None and name in (None, "SubmitTrainingJob"):
        for earlier in training.previous_attempts:
            _submission(reading, earlier)
        _submission(reading, training)
    status = read_section(RunStatus, state) if name in (None, "CheckTrainingStatus") else None
    if status is not None:
        _check(reading, status, training)
    fallback = read_section(Fallback, state) if name == "StopSpotJob" else None
    if fallback is not None:
        _stop(reading, fallback, training)


def _execution_name(state: dict[str, Any], training: Training | None) -> str | None:
    """The execution's name from an ARN a state kept (its console link ends with the ARN)."""
    arn = state.get("executionArn") or (as_dict(training.links).get("execution") if training is not None else None)
    if not isinstance(arn, str) or ":execution:" not in arn:
        return None
    return arn.rsplit(":", 1)[-1] or None


def _segments(marks: list[tuple[datetime, Kind | None, int]], end: datetime | None) -> list[Segment]:
    """Each mark's lane lasts until the next mark (or the end); touching equal lanes merge."""
    ordered = sorted(marks, key=lambda mark: mark[0])  # stable: a stop and a submission at one time keep their order
    found: list[Segment] = []
    for i, (at, kind, attempt) in enumerate(ordered):
        until = ordered[i + 1][0] if i + 1 < len(ordered) else end
        if kind is None or until is None or until <= at:
            continue
        if found and (found[-1].kind, found[-1].attempt, found[-1].end) == (kind, attempt, at):
            found[-1] = Segment(found[-1].start, until, kind, attempt)
        else:
            found.append(Segment(at, until, kind, attempt))
    return found


def run_picture(history: Iterable[HistoryEvent]) -> RunPicture:
    """The picture of a run from its history (oldest first; continuations concatenated)."""
    reading = _Reading()
    for event in history:
        kind = str(event.get("type", ""))
        if kind == "ExecutionStarted":
            state = load_document(as_dict(event.get("executionStartedEventDetails")).get("input")) or {}
            if reading.first_event_at is None:
                reading.first_event_at = _utc(event.get("timestamp"))
                reading.start = reading.saw(_utc(state.get("receivedAt")))
            _read_state(reading, None, state)
            reading.status, reading.end_event_at = "RUNNING", None
        elif kind in END_EVENTS:
            reading.status, reading.end_event_at = END_EVENTS[kind], _utc(event.get("timestamp"))
        entered = as_dict(event.get("stateEnteredEventDetails"))
        if kind == "FailStateEntered":
            reading.fail_state = str(entered.get("name") or "") or None
        exited = as_dict(event.get("stateExitedEventDetails"))
        output = load_document(exited.get("output")) if exited else None
        if output is not None:
            _read_state(reading, str(exited.get("name", "")), output)
    return _picture(reading)


def _picture(reading: _Reading) -> RunPicture:
    start = reading.start or (min(reading.times) if reading.times else reading.first_event_at)
    end = max(reading.times) if reading.times else start
    same_clock = bool(start and reading.first_event_at and abs(reading.first_event_at - start) <= SAME_CLOCK)
    if same_clock and reading.end_event_at and end and reading.end_event_at > end:
        end = reading.end_event_at  # e.g. an execution stopped between two checks
    job, outcome = reading.job, reading.outcome
    figures = as_dict(outcome.figures if outcome is not None else None)
    deadline = _utc(job.deadline if job is not None else None) or _utc(figures.get("deadline"))
    met = figures.get("deadline_met")
    decisions = list(reading.decisions)
    if not reading.ended and reading.status != "RUNNING" and end is not None:
        decisions.append(Decision(end, _ending(reading), "end"))
    team, job_name = (job.team, job.name) if job is not None else (None, None)
    return RunPicture(
        name=reading.name,
        job=f"{team}/{job_name}" if team and job_name else None,
        status=reading.status,
        outcome=str((outcome.name if outcome is not None else None) or reading.fail_state or reading.status),
        start=start,
        end=end,
        deadline=deadline,
        deadline_met=met if isinstance(met, bool) else None,
        segments=tuple(_segments(reading.marks, end)),
        progress=tuple(sorted(reading.progress, key=lambda point: point.at)),
        decisions=tuple(sorted(decisions, key=lambda decision: decision.at)),
        attempts=tuple(sorted(reading.attempts.items())),
        switch_line=tuple(sorted(reading.switch_line, key=lambda point: point.at)),
    )


def _ending(reading: _Reading) -> str:
    if reading.status in ("ABORTED", "TIMED_OUT"):
        return "stopped" + (" (timed out)" if reading.status == "TIMED_OUT" else "")
    if reading.status == "FAILED":
        return f"failed ({reading.fail_state})" if reading.fail_state else "failed"
    return f"continues in {reading.continued_as}" if reading.continued_as else "succeeded"


# --- drawing ----------------------------------------------------------------------------------


def _hours(moment: datetime, start: datetime) -> float:
    return (moment - start).total_seconds() / 3600


def _clock(moment: datetime) -> str:
    return moment.strftime("%H:%M") + "Z" if moment.second == 0 else moment.strftime("%H:%M:%S") + "Z"


def heading(picture: RunPicture, title: str | None = None) -> str:
    """`name: outcome, deadline met` (the first line), the job and the times (the second)."""
    name = title or picture.name or picture.job or "Spotline run"
    if picture.deadline is None:
        verdict = "no deadline"
    elif picture.deadline_met is True:
        verdict = "deadline met"
    elif picture.deadline_met is False:
        verdict = "deadline MISSED"
    else:
        verdict = "deadline not reached" + (" yet" if picture.status == "RUNNING" else "")
    details = [picture.job or "", f"started {picture.start:%Y-%m-%d %H:%M}Z" if picture.start else ""]
    if picture.end and picture.start:
        details.append(f"ended T+{format_duration((picture.end - picture.start).total_seconds())}")
    if picture.deadline and picture.start:
        details.append(f"deadline T+{format_duration((picture.deadline - picture.start).total_seconds())}")
    return f"{name}: {picture.outcome}, {verdict}\n" + ", ".join(d for d in details if d)


def _grouped(picture: RunPicture, start: datetime, span: float) -> list[tuple[float, str, str]]:
    """Decisions close in time (under 1.5 % of the axis) share one label, one line each."""
    groups: list[tuple[float, list[str], str]] = []
    for decision in picture.decisions:
        x = _hours(decision.at, start)
        if groups and x - groups[-1][0] <= 0.015 * span:
            groups[-1][1].append(decision.label)
            if decision.kind in ("switch", "end"):
                groups[-1] = (groups[-1][0], groups[-1][1], decision.kind)
        else:
            groups.append((x, [decision.label], decision.kind))
    return [(x, "\n".join(labels), kind) for x, labels, kind in groups]


def _lanes(axis: Axes, picture: RunPicture, start: datetime, span: float) -> None:
    numbers = [number for number, _ in picture.attempts] or [1]
    row = {number: i for i, number in enumerate(reversed(numbers))}
    for kind in KINDS:
        for number in numbers:
            spans = [
                (_hours(s.start, start), _hours(s.end, start) - _hours(s.start, start))
                for s in picture.segments
                if s.kind == kind and (s.attempt if s.attempt in row else numbers[0]) == number
            ]
            if spans:
                axis.broken_barh(spans, (row[number] - 0.35, 0.7), facecolors=COLOURS[kind], edgecolor="none")
            for x, width in spans if kind == "waiting for capacity" else ():
                if width >= 0.08 * span:  # a long wait says how long, inside its bar
                    text = f"waiting {format_duration(round(width * 3600))}"
                    axis.text(x + width / 2, row[number], text, ha="center", va="center", fontsize=8)
    capacity = dict(picture.attempts)
    interruptions = {n: sum(1 for s in picture.segments if s.kind == "interrupted" and s.attempt == n) for n in numbers}
    labels = [
        f"attempt {n} ({capacity[n]}"
        + (f", {interruptions[n]} interruption{'s' * (interruptions[n] > 1)}" if interruptions[n] else "")
        + ")"
        if n in capacity
        else "no attempt"
        for n in reversed(numbers)
    ]
    axis.set_yticks(range(len(numbers)), labels, fontsize=9)
    axis.set_ylim(-0.6, len(numbers) - 0.4)
    from matplotlib.patches import Patch  # noqa: PLC0415 (matplotlib only when drawing)

    handles = [Patch(facecolor=COLOURS[kind], label=kind) for kind in KINDS]
    axis.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=4, fontsize=8, frameon=False)
    axis.set_title("capacity", loc="right", fontsize=9, color="#555555")


def _progress(axis: Axes, top: Axes, picture: RunPicture, start: datetime) -> None:
    if picture.progress:
        xs = [0.0, *(_hours(p.at, start) for p in picture.progress)]
        ys = [0.0, *(100 * p.fraction for p in picture.progress)]
        axis.step(xs, ys, where="post", color="#222222", lw=1.8, label="checkpointed progress")
    if picture.switch_line:
        xs = [_hours(p.at, start) for p in picture.switch_line]
        ys = [100 * p.fraction for p in picture.switch_line]
        axis.plot(
            xs, ys, "--", color="#1f5fbf", lw=1.2, label="switch line: on-demand from here just meets the deadline"
        )
    if picture.deadline is not None:
        x = _hours(picture.deadline, start)
        for lane in (axis, top):
            lane.axvline(x, color="#c00000", lw=1.6)
        axis.annotate(
            f"deadline {_clock(picture.deadline)}",
            (x, 50),
            xytext=(-4, 0),
            textcoords="offset points",
            rotation=90,
            ha="right",
            va="center",
            color="#c00000",
            fontsize=9,
        )
    axis.set_ylabel("progress (%)")
    axis.set_yticks([0, 25, 50, 75, 100])
    axis.grid(True, axis="y", alpha=0.3)
    if picture.progress or picture.switch_line:
        axis.legend(loc="lower right", fontsize=8, frameon=True, framealpha=0.9)


def _decisions(figure: Figure, axes: tuple[Axes, Axes], picture: RunPicture, start: datetime, span: float) -> None:
    """A dotted line across both panels per decision; its label above 100 %, lifted row by row
    until it overlaps no other label (and turned to the line's left at the right edge)."""
    bottom = axes[1]
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    right_edge = bottom.get_window_extent(renderer).x1
    placed: list[Any] = []  # the label boxes so far (display coordinates)
    need = 0.0  # the height the labels take above 100 %, in pixels
    for x, label, kind in _grouped(picture, start, span):
        colour = DECISION_COLOURS[kind]
        for axis in axes:
            axis.axvline(x, color=colour, lw=1.4 if kind == "switch" else 1.0, ls=":", alpha=0.9)
        text = bottom.annotate(
            label,
            (x, 100),
            xytext=(3, 5),
            textcoords="offset points",
            fontsize=7.5,
            color=colour,
            va="bottom",
            ha="left",
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
            annotation_clip=False,
        )
        if text.get_window_extent(renderer).x1 > right_edge:
            text.set_horizontalalignment("right")
            text.set_position((-3, 5))
        for row in range(12):
            text.set_position((text.get_position()[0], 5 + row * 10))
            box = text.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                break
        placed.append(box.expanded(1.03, 1.0))
        anchor = bottom.transData.transform((x, 100))[1]
        need = max(need, box.y1 - anchor + 4)
    height = bottom.get_window_extent(renderer).height
    share = min(need / height, 0.6) if height > 0 else 0.0
    bottom.set_ylim(-2, (100 + 2 * share) / (1 - share) if share else 104)


def _gaps(axes: tuple[Axes, Axes], gaps: Sequence[tuple[datetime, datetime]], start: datetime) -> None:
    """Shade when the weather had no spot capacity (known in the sandbox only: its scenario)."""
    for index, (begin, end) in enumerate(gaps):
        for axis in axes:
            axis.axvspan(
                _hours(begin, start),
                _hours(end, start),
                facecolor="none",
                edgecolor="#9a9a9a",
                hatch="///",
                lw=0,
                label="no spot capacity (scenario)" if index == 0 and axis is axes[1] else None,
            )


def plot_run(
    history: Iterable[HistoryEvent],
    path: Path,
    *,
    title: str | None = None,
    capacity_gaps: Sequence[tuple[datetime, datetime]] = (),
) -> Path:
    """The run drawn as a PNG at `path`: capacity lanes above, progress and decisions below;
    `capacity_gaps`, when known (the sandbox's scenario), shaded across both."""
    import matplotlib  # noqa: PLC0415 (only when drawing: importing this module stays cheap)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.ticker import MultipleLocator  # noqa: PLC0415

    picture = run_picture(history)
    start = picture.start or datetime(1970, 1, 1, tzinfo=UTC)
    last = max((t for t in (picture.end, picture.deadline) if t is not None), default=start)
    span = max(_hours(last, start), 1.0)
    lanes = max(len(picture.attempts), 1)
    figure, (top, bottom) = plt.subplots(
        2, 1, figsize=(11, 6), sharex=True, gridspec_kw={"height_ratios": [0.9 + 0.45 * min(lanes, 4), 4.2]}
    )
    _lanes(top, picture, start, span)
    _gaps((top, bottom), capacity_gaps, start)
    _progress(bottom, top, picture, start)
    bottom.set_xlim(-0.01 * span, span * 1.03)
    step = next((h for h in HOUR_STEPS if span / h <= 16), HOUR_STEPS[-1] * (1 + int(span // (16 * HOUR_STEPS[-1]))))
    bottom.xaxis.set_major_locator(MultipleLocator(step))
    bottom.set_xlabel("hours since the run started")
    top.grid(True, axis="x", alpha=0.3)
    bottom.grid(True, axis="x", alpha=0.3)
    if not picture.segments and not picture.progress:
        bottom.text(0.5, 0.5, "no training job ran", transform=bottom.transAxes, ha="center", color="#666666")
    figure.suptitle(heading(picture, title), fontsize=10)
    figure.tight_layout()
    _decisions(figure, (top, bottom), picture, start, span)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
